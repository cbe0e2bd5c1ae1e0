"""The experimental setup as the result files record it: seeds, sizes, budget, settings (SPEC §6, §8).

Every setting comes from the files the runs wrote (timelines, ``clerk evaluate`` metrics,
``clerk train`` folders, ``clerk streams`` files), not from config; a setting that must agree
across seeds and does not is an error.

    clerk table-setup --timelines results/data/*/*.jsonl --metrics results/eval/*/*/metrics.json \\
        --train results/train/* --streams results/streams/*.json --out results/setup.json --markdown results/setup.md
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.report.stats import CI_LEVEL
from clerk.report.systems import READER_LABELS, reader_label
from clerk.report.tabular import markdown_table, read_json

#: The ``clerk train`` settings the setup reports.
TRAIN_SETTINGS = ("lr", "epochs", "max_steps", "batch_size", "grad_accum", "max_length", "lora_r",
                  "lora_alpha", "lora_dropout", "lora_targets", "lora_layers", "modules_to_save", "warmup", "scheduler")


def _first_json_line(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        line = fh.readline()
    if not line.strip():
        raise UserError(f"--timelines: '{path}' is empty")
    return json.loads(line)


def _one(values: dict[str, Any], what: str) -> Any:
    """The single value shared by all files (file -> value); differing values are an error."""
    distinct = sorted({json.dumps(v, sort_keys=True) for v in values.values()})
    if len(distinct) > 1:
        raise UserError(f"{what} differs between files: "
                        + "; ".join(f"{p}: {v}" for p, v in sorted(values.items())))
    return json.loads(distinct[0]) if distinct else None


def _timeline_facts(timelines: list[str], seeds: set[int]) -> dict[str, Any]:
    """Budget, answer options, chance, interval level and per-split sizes from the timeline files."""
    budgets, data, options = {}, {}, {}
    for path in timelines:
        if not Path(path).is_file():
            raise UserError(f"--timelines: file '{path}' does not exist")
        first = _first_json_line(path)
        with open(path, encoding="utf-8") as fh:
            personas = [json.loads(line) for line in fh if line.strip()]
        # The long-horizon probe reuses the test names: its folder-level split is the file stem.
        split = Path(path).stem
        seeds.add(int(first["seed"]))
        budgets[path] = int(first["budget"])
        counts = sorted({len(q["options"]) for p in personas for s in p["sessions"] for q in s.get("questions") or []})
        if counts:
            options[path] = counts
        # The eviction-pressure slice (no questions) is counted apart from the personas that are asked.
        sliced = sum(1 for p in personas if p.get("slice") == "evict")
        data.setdefault(split, {}).setdefault("personas", {})[path] = len(personas) - sliced
        data[split].setdefault("evict_personas", {})[path] = sliced
        data[split].setdefault("sessions", {})[path] = max(len(p["sessions"]) for p in personas)
    n_options = _one(options, "answer options per question") if options else None
    if n_options is not None and len(n_options) != 1:
        raise UserError(f"--timelines: questions carry {n_options} options; expected one count")
    return {"budget": _one(budgets, "ledger budget") if budgets else None,
            "options": n_options[0] if n_options else None,
            "chance": 1 / n_options[0] if n_options else None,
            "ci_level": CI_LEVEL,
            "data": {s: {k: _one(v, f"{s} {k}") for k, v in sorted(d.items())}
                     for s, d in sorted(data.items())}}


def _add_evaluate_facts(facts: dict[str, Any], metrics: list[str], seeds: set[int]) -> None:
    """Base model, evaluation config, systems and questions per seed from ``clerk evaluate`` metrics."""
    eval_cfg, systems, questions, models = {}, {}, {}, {}
    for path in metrics:
        m = read_json(path, "--metrics")
        seeds.update(int(s) for s in m["input"]["seeds"])
        cfg = {k: v for k, v in m["config"].items() if k not in ("model", "adapter", "reader_adapter")}
        eval_cfg[path] = cfg
        models[path] = Path(str(m["config"].get("model"))).name
        systems[path] = {n: {"reader": reader_label(r["reader"]), "version": r["version"]}
                         for n, r in m["systems"].items()}
        split = m["input"]["splits"][0]
        first = next(iter(m["systems"].values()), {})
        questions.setdefault(split, {})[path] = first.get("n_questions", 0)
    if metrics:
        facts["model"] = _one(models, "base model")
        facts["evaluate"] = _one(eval_cfg, "evaluation config")
        facts["systems"] = _one(systems, "systems and readers")
        for split, per_file in sorted(questions.items()):
            facts["data"].setdefault(split, {})["questions_per_seed_mean"] = (
                sum(per_file.values()) / len(per_file))


def _train_facts(train: list[str], seeds: set[int]) -> dict[str, Any]:
    """Training settings and hardware (equal across seeds), mean steps, final loss and seconds."""
    train_cfg, losses, steps, secs, params = {}, [], [], [], {}
    for folder in train:
        cfg = read_json(Path(folder) / "train_config.json", "--train")
        res = read_json(Path(folder) / "metrics.json", "--train")
        seeds.add(int(cfg["config"]["seed"]))
        train_cfg[folder] = {k: cfg["config"].get(k) for k in TRAIN_SETTINGS}
        params[folder] = {"trainable_params": cfg.get("trainable_params"), "device": cfg.get("device"),
                          "bf16": cfg.get("bf16")}
        losses.append(float(res["train_loss"]))
        steps.append(float(res["steps"]))
        secs.append(_train_seconds(Path(folder)))
    return {**_one(train_cfg, "training config"), **_one(params, "training hardware"),
            "steps_mean": sum(steps) / len(steps), "train_loss_mean": sum(losses) / len(losses),
            "seconds_mean": sum(secs) / len(secs)}


def _stream_facts(streams: list[str], seeds: set[int]) -> dict[str, Any]:
    """The stream config of ``clerk streams`` files (equal across seeds)."""
    stream_cfg = {}
    for path in streams:
        s = read_json(path, "--streams")
        seeds.add(int(s["seed"]))
        stream_cfg[path] = s["config"]
    return _one(stream_cfg, "stream config")


def setup_facts(timelines: list[str], metrics: list[str], train: list[str], streams: list[str],
                reader_train: list[str] = ()) -> dict:
    """The experimental setup as recorded in the result files themselves (not in config).

    Args:
        timelines: timeline files (JSON lines; the first persona gives split, seed and budget).
        metrics: ``clerk evaluate`` metrics.json files.
        train: ``clerk train`` output folders (``train_config.json``, ``metrics.json``).
        streams: ``clerk streams`` files.
        reader_train: ``clerk train`` output folders of the separate reader, if any.

    Returns:
        A JSON-ready dict: ``seeds``, ``n_seeds``, ``budget``,
        ``data/<split>/{personas,evict_personas,sessions}`` (personas: those asked questions;
        evict_personas: the eviction-pressure slice's),
        ``evaluate/...``, ``train/...`` (settings plus mean final loss and steps over seeds),
        ``reader/...`` (the same for the separate reader, when given) and ``streams/...``. Settings that must agree across seeds raise if they do not.

    Raises:
        UserError: a missing file, or a setting that differs between seeds.
    """
    seeds: set[int] = set()
    facts = _timeline_facts(timelines, seeds)
    _add_evaluate_facts(facts, metrics, seeds)
    if train:
        facts["train"] = _train_facts(train, seeds)
    if reader_train:  # the reader's own seed(s), not experiment seeds
        reader_seeds: set[int] = set()
        facts["reader"] = _train_facts(list(reader_train), reader_seeds)
        facts["reader"]["seeds"] = sorted(reader_seeds)
    if streams:
        facts["streams"] = _stream_facts(streams, seeds)
    ordered_seeds = sorted(seeds)
    return {"seeds": ordered_seeds, "n_seeds": len(ordered_seeds), **facts}


def _train_seconds(folder: Path) -> float:
    """Training wall seconds: the last ``seconds`` of train_log.csv (it survives resumption)."""
    log = folder / "train_log.csv"
    if not log.is_file():
        return math.nan
    with open(log, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return float(rows[-1]["seconds"]) if rows else math.nan


def setup_markdown(facts: dict) -> str:
    """The setup facts as a two-column Markdown table for the paper."""
    def show(v: Any) -> str:
        if isinstance(v, float):
            return "n/a" if math.isnan(v) else (str(int(v)) if v.is_integer() else f"{v:.4g}")
        if isinstance(v, (list, tuple)):
            return ", ".join(str(x) for x in v) or "none"
        return "none" if v is None else str(v)

    rows = [["seeds", show(facts["seeds"])], ["base model", show(facts.get("model"))],
            ["ledger budget B (slots)", show(facts.get("budget"))],
            ["answer options per question", show(facts.get("options"))],
            ["interval level", show(facts.get("ci_level"))]]
    for split, d in facts.get("data", {}).items():
        rows.append([f"{split}: personas × sessions", f"{show(d.get('personas'))} × {show(d.get('sessions'))}"])
        if d.get("evict_personas"):
            rows.append([f"{split}: eviction-pressure personas (no questions)", show(d["evict_personas"])])
        if "questions_per_seed_mean" in d:
            rows.append([f"{split}: questions per seed", show(d["questions_per_seed_mean"])])
    for name, info in (facts.get("systems") or {}).items():
        rows.append([f"system {name}", f"reader {READER_LABELS.get(info['reader'], info['reader'])}, "
                                       f"version {info['version']}"])
    for key, v in (facts.get("evaluate") or {}).items():
        if key != "systems":
            rows.append([f"evaluate.{key}", show(v)])
    for key, v in (facts.get("train") or {}).items():
        rows.append([f"train.{key}", show(v)])
    for key, v in (facts.get("reader") or {}).items():
        rows.append([f"reader.{key}", show(v)])
    for key, v in (facts.get("streams") or {}).items():
        rows.append([f"streams.{key}", show(v)])
    return markdown_table(["setting", "value"], rows, [":---", ":---"])
