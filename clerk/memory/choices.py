"""The names the code keeps a registry or fixed set for, as the allowed values of settings.

A setting whose allowed values are a registry (``setting(choices="memory_system")``,
:mod:`clerk.settings`) names the set; :func:`registry_enums` says what each set holds today, from
the code itself, so the schema, the verbs' flags and the registries cannot drift apart. It lives
in the memory stage, the highest stage that owns such a set (the memory systems, their views and
readers), so that every verb from the SFT build on can derive its flags through
:func:`add_settings` without importing a later stage; the generator and the streams verbs, which
run earlier, pass the sets they need themselves.

    python -c "from clerk.memory.choices import registry_enums; print(registry_enums()['dtype'])"
"""

from __future__ import annotations

from typing import Any


def registry_enums() -> dict[str, list[str]]:
    """The allowed names of each registry-backed set (the schema's ``$defs`` entries), from the code.

    >>> sorted(registry_enums())
    ['bf16_mode', 'dtype', 'eviction_policy', 'locomo_system', 'memory_system', 'model_kind', 'precision', 'reader_model', 'view_kind']
    >>> "summary-rag" in registry_enums()["memory_system"], "summary-rag" in registry_enums()["locomo_system"]
    (False, True)
    """
    # Light imports only (no torch): this runs inside every `snakemake -n`.
    from clerk.memory.base import DTYPES, READER_MODELS
    from clerk.memory.registry import LOCOMO, MEMORY_REGISTRY, SYNTHETIC
    from clerk.models.device import BF16_MODES, PRECISIONS
    from clerk.models.spec import KINDS
    from clerk.streams.engines import POLICIES

    synthetic = set(MEMORY_REGISTRY.in_order(SYNTHETIC))
    return {
        "memory_system": [name for name in MEMORY_REGISTRY.names() if name in synthetic],
        "locomo_system": MEMORY_REGISTRY.in_order(LOCOMO),
        "eviction_policy": sorted(POLICIES),
        "model_kind": list(KINDS),
        "dtype": list(DTYPES),
        "reader_model": list(READER_MODELS),
        "bf16_mode": list(BF16_MODES),
        "precision": list(PRECISIONS),
        "view_kind": MEMORY_REGISTRY.view_kinds(),
    }


def add_settings(parser: Any, verb: str, *sections: type, **kwargs: Any) -> None:
    """:func:`clerk.settings.add_settings` with the code's sets (:func:`registry_enums`) as the
    allowed values of registry-backed choices: the verbs of the SFT build and later stages add
    their settings' flags with this."""
    from clerk import settings

    settings.add_settings(parser, verb, *sections, registries=registry_enums(), **kwargs)
