"""The SFT ``DatasetDict``: features, a content fingerprint, per-split stats, saving (SPEC §4).

``save_to_disk`` writes byte-identical files for the same rows: each split's fingerprint is the
SHA-256 of its rows instead of ``datasets``' random or state-dependent one.

    python -m pytest tests/test_sft.py -q -k "dataset or stats"
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from clerk import ledger as L
from clerk.errors import UserError
from clerk.sft.examples import SPLITS, STATS_FILE, TASKS, SFTDataConfig, build_rows, example_chars


def features():
    """The ``datasets.Features`` of every split."""
    from datasets import Features, List, Value

    message = {"role": Value("string"), "content": Value("string")}
    return Features({"messages": List(message), "task": Value("string"), "view": Value("string"),
                     "persona": Value("string"), "session": Value("int64")})


def rows_fingerprint(split: str, rows: list[dict[str, Any]]) -> str:
    """A content hash standing in for ``datasets``' fingerprint (which would otherwise be random
    or depend on object state), so ``state.json`` is the same on every run.

    >>> rows_fingerprint("train", []) == rows_fingerprint("train", [])
    True
    """
    digest = hashlib.sha256(split.encode())
    for row in rows:
        digest.update(L.dumps(row).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def to_dataset_dict(rows: dict[str, list[dict[str, Any]]]):
    """Wrap the rows of each split in a ``datasets.DatasetDict`` with a content fingerprint."""
    import pyarrow as pa
    from datasets import Dataset, DatasetDict, DatasetInfo, NamedSplit

    feats = features()
    out = {}
    for split in SPLITS:
        table = pa.Table.from_pylist(rows[split], schema=feats.arrow_schema)
        out[split] = Dataset(table, info=DatasetInfo(features=feats), split=NamedSplit(split),
                             fingerprint=rows_fingerprint(split, rows[split]))
    return DatasetDict(out)


def build_sft(timelines: list[dict[str, Any]], config: SFTDataConfig, runtime: Any = None):
    """Build the SFT ``DatasetDict`` (splits ``train`` / ``validation``) from training timelines.

    Args:
        timelines: persona timelines in the SPEC format (all from the ``train`` split).
        config: seed, mixture and validation share (:class:`SFTDataConfig`).
        runtime: needed for transcript view kinds (see :func:`build_rows`).

    Returns:
        ``datasets.DatasetDict`` with columns ``messages``, ``task``, ``view``, ``persona``,
        ``session``; the same inputs always give identical datasets and ``save_to_disk`` bytes.

    Raises:
        UserError: a bad argument or malformed timelines.
    """
    rows, _ = build_rows(timelines, config, runtime)
    return to_dataset_dict(rows)


def sft_stats(dataset_dict, config: SFTDataConfig, question_pool: dict[str, int] | None = None) -> dict[str, Any]:
    """Counts per split and task and mean characters per example (see :func:`example_chars`).

    Args:
        dataset_dict: the output of :func:`build_sft`.
        config: the configuration it was built with (recorded in the stats).
        question_pool: questions available per split, when known.

    Returns:
        A JSON-ready dict: ``config``, then per split ``personas`` (sorted names), ``examples``,
        ``mean_chars`` and per task ``examples`` / ``mean_chars``.
    """
    out: dict[str, Any] = {"config": asdict(config), "splits": {}}
    for split in SPLITS:
        ds = dataset_dict[split]
        tasks, personas, messages = ds["task"], ds["persona"], ds["messages"]
        chars = [example_chars(m) for m in messages]
        entry: dict[str, Any] = {"personas": sorted(set(personas)), "examples": len(ds), "mean_chars": _mean(chars),
                                 "tasks": {}}
        for task in TASKS:
            mine = [c for c, t in zip(chars, tasks) if t == task]
            entry["tasks"][task] = {"examples": len(mine), "mean_chars": _mean(mine)}
        views = [v for v in ds["view"] if v]
        entry["tasks"]["answer"]["views"] = {v: views.count(v) for v in sorted(set(views))}
        if question_pool is not None:
            entry["tasks"]["answer"]["question_pool"] = question_pool[split]
        out["splits"][split] = entry
    return out


def _mean(xs: list[int]) -> float:
    return round(sum(xs) / len(xs), 2) if xs else 0.0


def write_sft(dataset_dict, out: str | Path, stats: dict[str, Any]) -> None:
    """Save ``dataset_dict`` to ``out`` (``save_to_disk``) plus ``out/sft_stats.json``.

    An existing ``out`` is replaced only when it is empty or an earlier dataset directory (it has
    ``dataset_dict.json``), so a mistyped path never wipes unrelated files.

    Raises:
        UserError: ``out`` exists and is something else.
    """
    out = Path(out)
    if out.exists():
        if not out.is_dir() or (any(out.iterdir()) and not (out / "dataset_dict.json").is_file()):
            raise UserError(f"--out {out}: exists and is not a dataset directory; expected a new or earlier --out path")
        shutil.rmtree(out)
    dataset_dict.save_to_disk(str(out))
    (out / STATS_FILE).write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
