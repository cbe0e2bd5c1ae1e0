"""CLERK: Consolidated Ledger with Eviction and Rewrite Keys.

Fixed-budget, write-time memory for LLM assistants. See README.md and docs/SPEC.md.
Every stage is reachable through one command line: ``clerk --help``.
"""

__version__ = "0.1.0"
