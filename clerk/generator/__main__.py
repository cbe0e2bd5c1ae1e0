"""``python -m clerk.generator ARGS``: the same as ``clerk generate ARGS``.

    python -m clerk.generator --seed 137 --split test --personas 5 --out /tmp/test.jsonl
"""

import sys

from clerk.cli import main

if __name__ == "__main__":
    main(["generate", *sys.argv[1:]])
