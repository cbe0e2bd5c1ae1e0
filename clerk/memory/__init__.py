"""Memory systems under evaluation: the registry, the contract and one module per system.

Each system registers itself in its own module, with its name (the key used in config, result
files, tables and the paper) and what it declares about itself (``clerk.memory.registry``). The
registry imports every module of this package before it first answers, so nothing here lists them.

    python -c "from clerk.memory import MEMORY_REGISTRY; print(MEMORY_REGISTRY.in_order())"
"""

from clerk.memory.base import EvalConfig, MemorySystem, Runtime, View, WriteResult
from clerk.memory.ledger_system import LedgerSystem, ModelLedgerSystem, Proposal
from clerk.memory.registry import MEMORY_REGISTRY, Registry, SystemInfo, get_memory, register_memory

__all__ = [
    "EvalConfig", "LedgerSystem", "MEMORY_REGISTRY", "MemorySystem", "ModelLedgerSystem", "Proposal",
    "Registry", "Runtime", "SystemInfo", "View", "WriteResult", "get_memory", "register_memory",
]
