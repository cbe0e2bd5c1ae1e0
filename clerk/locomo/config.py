"""The workflow's ``locomo`` section: LoCoMo transfer (SPEC §7).

    python -c "from clerk.locomo.config import LocomoSection; print(LocomoSection.max_questions)"
"""

from __future__ import annotations

from dataclasses import dataclass

from clerk.settings import setting


@dataclass(kw_only=True)
class LocomoSection:
    """The LoCoMo data, its question subset, and the ledger systems' form on it (``locomo``)."""

    path: str | None = setting(
        None, help="an existing LoCoMo file (Percena/locomo-mc10 JSON lines or locomo10.json; absolute, or relative "
        "inside the repository; letters, digits and . _ / + @ - only) or null", schema={"$ref": "#/$defs/path"})
    download: bool = setting(False, help="fetch Percena/locomo-mc10 with the Hugging Face client when no path is "
                             "given (needs network)", verbs=("locomo",))
    max_questions: int = setting(200, help="stratified, seeded question subset in questions; 0 = all", minimum=0,
                                 verbs=("locomo",), metavar="N")
    subset_seed: int = setting(
        0, help="seed of the question subset, the same for every LoCoMo job of a run, so every system and seed "
        "answers the same questions", minimum=0, verbs=("locomo",), metavar="S")
    # No default: which systems a table compares is the profile's choice, and the memory registry is
    # the one list of system names (by hand: --systems is required).
    systems: tuple[str, ...] = setting(
        help="memory systems evaluated on LoCoMo",
        choices="locomo_system", min_items=1, unique=True, verbs=("locomo",))
    ledger: str = setting(
        "closed", help="ledger form of the ledger systems: open (the two speakers as subjects, coined keys, dates; "
        "needs a policy trained on the open world) or closed (one subject, the synthetic catalogue)",
        choices=("open", "closed"), verbs=("locomo",))
    budget: int = setting(12, help="ledger slots of the ledger systems on LoCoMo", minimum=1, verbs=("locomo",),
                          metavar="B")
    max_new_tokens: int = setting(64, help="generation cap of the ledger writers per LoCoMo session, tokens",
                                  minimum=1, verbs=("locomo",), metavar="N")
