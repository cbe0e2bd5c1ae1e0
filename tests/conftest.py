"""Test-wide settings: offline hubs, quiet tokenizers, fixed thread counts.

Nothing in the suite may reach a model hub: the offline variables make any accidental hub call
fail fast instead of hanging.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
