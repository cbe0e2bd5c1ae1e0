"""Memory systems under evaluation: the registry, the contract and one module per system.

Importing this package registers every system. Names are the registry keys used in config,
result files, tables and the paper: clerk, oracle, prompted-ledger, full, window, rag, add-only,
null.

    python -c "from clerk.memory import MEMORY_REGISTRY; print(MEMORY_REGISTRY.names())"
"""

# Registration happens on import; the order is irrelevant (names are sorted on listing).
from clerk.memory import add_only, clerk, full, null, oracle, prompted_ledger, rag, summary_rag, window  # noqa: E402,F401
from clerk.memory.base import EvalConfig, MemorySystem, Runtime, View, WriteResult
from clerk.memory.ledger_system import LedgerSystem, ModelLedgerSystem, Proposal
from clerk.memory.registry import MEMORY_REGISTRY, Registry, get_memory, register_memory

__all__ = [
    "EvalConfig", "LedgerSystem", "MEMORY_REGISTRY", "MemorySystem", "ModelLedgerSystem", "Proposal",
    "Registry", "Runtime", "View", "WriteResult", "get_memory", "register_memory",
]
