"""The registry of memory systems: the one list of them, and what each declares about itself.

A system is registered where it is defined, with its name and everything the rest of the code
asks about it (docs/ARCHITECTURE.md, "Add a memory system")::

    @register_memory("full", order=40, benchmarks=(SYNTHETIC, LOCOMO), view_kind="full",
                     read_cost_label="full history")
    class FullMemory(MemorySystem): ...

The name is the system's key everywhere: config, wildcards, result files, tables and the paper.
Tables and figures list systems by ``order``, the config's enums and LoCoMo's list come from
``benchmarks``, the reader's answer views from ``view_kind``, the read-cost probe and its figure
from ``read_cost_label``, the paired comparisons from ``reference``; whether a system is a model
writer is its class's ``writer_kind``. No other module lists system names
(``tests/test_one_module.py``).

:data:`MEMORY_REGISTRY` imports every module of :mod:`clerk.memory` before it first answers, so
its answers are complete and the same whatever was imported before; the order of rows comes from
the declared ``order``, never from import order. Tests build their own :class:`Registry` instead
of touching :data:`MEMORY_REGISTRY`.

    python -c "from clerk.memory import MEMORY_REGISTRY; print(MEMORY_REGISTRY.in_order())"
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T", bound=type)

#: The benchmarks a system can serve: the synthetic personas (tables 1, 3, 5) and LoCoMo (table 2).
SYNTHETIC, LOCOMO = "synthetic", "locomo"
BENCHMARKS = (SYNTHETIC, LOCOMO)
#: The view kind of every ledger system: the reader's rendering of a ledger.
LEDGER_VIEW = "ledger"


@dataclass(frozen=True)
class SystemInfo:
    """What a system declares where it is registered.

    Attributes:
        name: the registry key.
        cls: the system's class.
        order: its place in tables and figures wherever no configured order applies (smaller first;
            unique).
        benchmarks: the benchmarks it serves (:data:`BENCHMARKS`).
        view_kind: the kind of view the reader is trained on for it (``clerk.memory.views``):
            :data:`LEDGER_VIEW` for a ledger system, the system's own name for a transcript view it
            builds itself; None when the reader is not trained on its view.
        read_cost_label: the read-cost probe measures its view, and the figure names the line so;
            None = not probed.
        reference: the system every other is compared with (paired tables, LoCoMo's paragraph).
    """

    name: str
    cls: type
    order: int
    benchmarks: tuple[str, ...]
    view_kind: str | None = None
    read_cost_label: str | None = None
    reference: bool = False

    @property
    def writer_kind(self) -> str | None:
        """Which model writes its programs (``"base"``, ``"adapter"``); None = no model writer."""
        return getattr(self.cls, "writer_kind", None)


class Registry:
    """Name -> memory-system class and its declared :class:`SystemInfo`.

    Args:
        package: a package whose modules are all imported before the first answer (their
            systems register on import); None = only what is registered by hand (tests).

    Duplicate names or orders and unknown lookups raise ``KeyError``.
    """

    def __init__(self, package: str | None = None) -> None:
        self._systems: dict[str, SystemInfo] = {}
        self._package = package
        self._state = "empty" if package else "loaded"

    def register(self, name: str, *, order: int, benchmarks: tuple[str, ...], view_kind: str | None = None,
                 read_cost_label: str | None = None, reference: bool = False) -> Callable[[T], T]:
        """Class decorator registering ``cls`` under ``name`` (and setting ``cls.name``); see :class:`SystemInfo`."""

        def add(cls: T) -> T:
            if name in self._systems:
                raise KeyError(f"memory system {name!r} is already registered ({self._systems[name].cls.__qualname__})")
            # Its own attribute, not an inherited one: every system is versioned separately.
            if not isinstance(cls.__dict__.get("version"), str) or not cls.__dict__["version"]:
                raise TypeError(f"memory system {name!r} must define its own non-empty string 'version'")
            info = SystemInfo(name, cls, order, tuple(benchmarks), view_kind, read_cost_label, reference)
            self._check(info)
            cls.name = name
            self._systems[name] = info
            return cls

        return add

    def _check(self, info: SystemInfo) -> None:
        """Refuse a declaration the queries could not answer from (a TypeError naming the system)."""
        name = info.name
        if type(info.order) is not int:
            raise TypeError(f"memory system {name!r}: order must be an int, got {info.order!r}")
        taken = [other.name for other in self._systems.values() if other.order == info.order]
        if taken:
            raise KeyError(f"memory system {name!r}: order {info.order} is already {taken[0]!r}'s")
        if not info.benchmarks or not set(info.benchmarks) <= set(BENCHMARKS):
            raise TypeError(f"memory system {name!r}: benchmarks must be some of {BENCHMARKS}, got {info.benchmarks!r}")
        is_ledger = bool(getattr(info.cls, "is_ledger", False))
        if info.view_kind is not None and info.view_kind != (LEDGER_VIEW if is_ledger else name):
            raise TypeError(f"memory system {name!r}: view_kind must be None or "
                            f"{LEDGER_VIEW if is_ledger else name!r} (a {'ledger' if is_ledger else 'transcript'} "
                            f"system's view), got {info.view_kind!r}")
        if info.read_cost_label is not None and not (isinstance(info.read_cost_label, str) and info.read_cost_label):
            raise TypeError(f"memory system {name!r}: read_cost_label must be None or a non-empty string")

    def _load(self) -> None:
        """Import every module of the package once, so that every system is registered."""
        if self._state == "loaded":
            return
        if self._state == "loading":
            raise RuntimeError(f"the memory registry was asked while {self._package}'s modules are being imported "
                               "(a module asks it at import time; ask inside a function instead)")
        self._state = "loading"
        try:
            package = importlib.import_module(self._package)
            for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__)):
                importlib.import_module(f"{self._package}.{module}")
        except BaseException:
            self._state = "empty"
            raise
        self._state = "loaded"

    def info(self, name: str) -> SystemInfo:
        """What ``name`` declared; the error lists the known names."""
        self._load()
        if name not in self._systems:
            raise KeyError(f"unknown memory system {name!r}; known: {', '.join(self.names())}")
        return self._systems[name]

    def get(self, name: str) -> type:
        """The class registered as ``name``; the error lists the known names."""
        return self.info(name).cls

    def names(self) -> list[str]:
        """Registered names, sorted."""
        self._load()
        return sorted(self._systems)

    def in_order(self, benchmark: str | None = None) -> list[str]:
        """Names by declared ``order`` (the tables' and figures' row order), optionally only those
        serving ``benchmark``."""
        self._load()
        infos = sorted(self._systems.values(), key=lambda info: info.order)
        return [info.name for info in infos if benchmark is None or benchmark in info.benchmarks]

    def view_kinds(self) -> list[str]:
        """The kinds of view the reader is trained on, each once, in system order."""
        kinds = [self._systems[name].view_kind for name in self.in_order()]
        return list(dict.fromkeys(kind for kind in kinds if kind is not None))

    def read_cost_views(self) -> dict[str, str]:
        """System -> figure label of every system the read-cost probe measures, in system order."""
        return {name: self._systems[name].read_cost_label for name in self.in_order()
                if self._systems[name].read_cost_label is not None}

    def reference(self) -> str:
        """The one system declared ``reference``."""
        found = [name for name in self.in_order() if self._systems[name].reference]
        if len(found) != 1:
            raise KeyError(f"exactly one memory system must be declared reference=True, found {found}")
        return found[0]


#: The global registry the systems of this package register into.
MEMORY_REGISTRY = Registry("clerk.memory")
register_memory = MEMORY_REGISTRY.register
get_memory = MEMORY_REGISTRY.get
