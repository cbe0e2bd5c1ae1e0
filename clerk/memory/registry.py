"""Registry of memory systems: a dict, a decorator and a getter (docs/ARCHITECTURE.md, "Principles").

The registry key is the system's name everywhere: config, wildcards, result files, tables and the
paper. Tests build their own :class:`Registry` instead of touching :data:`MEMORY_REGISTRY`.

    python -c "from clerk.memory import MEMORY_REGISTRY; print(MEMORY_REGISTRY.names())"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T", bound=type)


class Registry:
    """Name -> memory-system class. Duplicate names and unknown lookups raise ``KeyError``."""

    def __init__(self) -> None:
        self._systems: dict[str, type] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Class decorator registering ``cls`` under ``name`` (and setting ``cls.name``)."""

        def add(cls: T) -> T:
            if name in self._systems:
                raise KeyError(f"memory system {name!r} is already registered ({self._systems[name].__qualname__})")
            # Its own attribute, not an inherited one: every system is versioned separately.
            if not isinstance(cls.__dict__.get("version"), str) or not cls.__dict__["version"]:
                raise TypeError(f"memory system {name!r} must define its own non-empty string 'version'")
            cls.name = name
            self._systems[name] = cls
            return cls

        return add

    def get(self, name: str) -> type:
        """The class registered as ``name``; the error lists the known names."""
        if name not in self._systems:
            raise KeyError(f"unknown memory system {name!r}; known: {', '.join(self.names())}")
        return self._systems[name]

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._systems)


#: The global registry the systems in this package register into.
MEMORY_REGISTRY = Registry()
register_memory = MEMORY_REGISTRY.register
get_memory = MEMORY_REGISTRY.get
