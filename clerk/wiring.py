"""The workflow's wiring in one importable place: constants the rules and the tests share, and the
``--config`` object of each verb: a declared projection of the config's sections (:data:`STAGES`).

The Snakefile's rule files (workflow/rules/*.smk) import this module; so do the tests, which never
parse ``.smk`` source. Rules pass a stage's config to its verb as one JSON object
(``clerk VERB --config {params.cfg:q}``): :func:`stage_config` builds it from the validated config
(a plain dict), so no rule re-encodes config values as command-line text, and every value reaches
the shell quoted. The verb turns the object into its typed config (``clerk --help``: defaults <
``--config`` < explicit flags).

    python -c "import yaml, clerk.wiring as w; print(w.stage_json(yaml.safe_load(open('config/config.yaml')), 'streams'))"
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# ---- constants -------------------------------------------------------------------------------

#: Timeline splits: train feeds SFT; test and test_ood are evaluated; long is the read-cost probe.
SPLITS = ("train", "test", "test_ood", "long")
#: The open world's training conversations of one seed (rule generate_open).
OPEN_TRAIN = "results/data/{seed}/open_train.jsonl"
#: The evaluated splits.
EVAL_SPLITS = ("test", "test_ood")
#: Which evaluation split each systems table summarises.
TABLE_SPLITS = {"table1": "test", "table3": "test_ood"}
#: The tables of the default target (results/<name>.csv).
TABLES = ("table1", "table3", "table4", "table5", "table_paired", "table_errors")

#: Where Snakemake's own records go (git-ignored): logs/<rule>/<job>.log and the rule benchmarks
#: logs/benchmarks/<rule>/<job>.tsv (kept apart from the hand-written records in benchmarks/).
LOG_ROOT = "logs"
BENCHMARK_ROOT = "logs/benchmarks"


def log_path(rule: str, stem: str | None = None) -> str:
    """``logs/<rule>/<stem>.log`` (stem: the rule name; may hold ``{wildcards}``)."""
    return f"{LOG_ROOT}/{rule}/{stem or rule}.log"


def benchmark_path(rule: str, stem: str | None = None) -> str:
    """``logs/benchmarks/<rule>/<stem>.tsv``: the stage of a benchmark file is its folder."""
    return f"{BENCHMARK_ROOT}/{rule}/{stem or rule}.tsv"


#: The paper's figures: name (the {figure} wildcard, results/figures/<name>.{pdf,png}) -> the
#: ``clerk figure`` kind, its input files (patterns over {seed}) and the config keys it takes.
FIGURES = {
    "read_cost": {"kind": "read-cost", "inputs": ["results/read_cost.csv"]},
    "accuracy_by_type": {"kind": "accuracy", "inputs": ["results/table1_seeds.csv"]},
    "eviction": {"kind": "eviction", "inputs": ["results/table4.csv"]},
    "loss": {"kind": "loss", "inputs": ["results/train/{seed}"]},
    "state_f1": {"kind": "state-f1", "inputs": ["results/eval/{seed}/test/ledgers.jsonl"]},
    "learning_curve": {"kind": "learning-curve", "inputs": ["results/curve/learning_curve.csv"]},
}
#: The paper's includes (clerk render-paper --include NAME=FILE), but LoCoMo's (table 2 or the
#: not-run note, decided by the config).
PAPER_INCLUDES = {
    "table1": "results/table1.md",
    "table1_cost": "results/table1_cost.md",
    "table3": "results/table3.md",
    "table3_cost": "results/table3_cost.md",
    "table4": "results/table4.md",
    "table5": "results/table5.md",
    "table_paired": "results/table_paired.md",
    "table_errors": "results/table_errors.md",
    "setup": "results/setup.md",
    "benchmarks": "results/benchmarks.md",
    "environment": "results/environment.md",
    "rulegraph": "results/rulegraph.mmd",
}
#: Template sections that must not contain hand-typed numbers (clerk render-paper --no-digits-in).
NO_DIGITS_IN = ("Abstract", "Setup", "Results", "Eviction study", "Erasure")

#: Model jobs: they claim the GPU when one is visible (workflow/rules/common.smk).
MODEL_RULES = ("train", "train_reader", "evaluate", "locomo", "locomo_shared", "learning_curve", "erasure")


def locomo_systems(config: dict) -> tuple[list[str], list[str]]:
    """LoCoMo's systems split into (run once per seed: rule ``locomo``, run once per run: rule
    ``locomo_shared``). A system depends on the seed when the seed's policy writes it, or when
    the seed's policy adapter is also the reader (``evaluate.reader_model: adapter``).

    >>> locomo_systems({"locomo": {"systems": ["clerk", "full"]}, "evaluate": {"reader_model": "reader"}})
    (['clerk'], ['full'])
    >>> locomo_systems({"locomo": {"systems": ["clerk", "full"]}, "evaluate": {"reader_model": "adapter"}})
    (['clerk', 'full'], [])
    """
    from clerk.memory import MEMORY_REGISTRY

    systems = list(config["locomo"]["systems"])
    if config["evaluate"]["reader_model"] == "adapter":
        return systems, []
    # The seed's trained policy (the adapter) writes it (the system's class's writer_kind).
    seeded = {s for s in systems if MEMORY_REGISTRY.info(s).writer_kind == "adapter"}
    return [s for s in systems if s in seeded], [s for s in systems if s not in seeded]


Products = list[dict[str, list[str]]]


def _training_seeds(seeds: list[str], reader_seed: str | None) -> list[str]:
    """The seeds whose training data is generated: the experiment seeds, then the reader's."""
    return [*seeds, *([reader_seed] if reader_seed is not None else [])]


def stages(seeds: list[str], reader_seed: str | None, locomo_seeded: bool = False,
           locomo_shared: bool = False, open_world: bool = False) -> dict[str, Products]:
    """Pipeline stages in paper order: rule -> the wildcard products of its jobs (and benchmark
    files), each a dict of wildcard -> values expanded as a product; the rows of
    results/benchmarks.csv. ``reader_seed``: the one separate reader's seed (None: no separate
    reader), whose training split is generated beside the experiment seeds' splits;
    ``locomo_seeded`` / ``locomo_shared``: LoCoMo's per-seed and once-per-run jobs are in the run
    (:func:`locomo_systems`); ``open_world``: open-world training conversations join the SFT
    sets (:func:`open_world`)."""
    out: dict[str, Products] = {"generate": [{"seed": seeds, "split": list(SPLITS)}]}
    if reader_seed is not None:
        out["generate"].append({"seed": [reader_seed], "split": ["train"]})
    if open_world:
        out["generate_open"] = [{"seed": _training_seeds(seeds, reader_seed)}]
    out |= {
        "build_sft": [{"seed": seeds}],
        "base_model": [{}],
        "train": [{"seed": seeds}],
    }
    if reader_seed is not None:
        out |= {"build_sft_reader": [{"seed": [reader_seed]}], "train_reader": [{"seed": [reader_seed]}]}
    out |= {
        "evaluate": [{"seed": seeds, "split": list(EVAL_SPLITS)}],
        "read_cost": [{"seed": seeds}],
        "streams": [{"seed": seeds}],
        "eviction_study": [{"seed": seeds}],
        "generate_forget": [{"seed": seeds}],
        "erasure": [{"seed": seeds}],
        "learning_curve": [{}],
    }
    if locomo_seeded:
        out["locomo"] = [{"seed": seeds}]
    if locomo_shared:
        out["locomo_shared"] = [{}]
    return out


def final_targets(seeds: list[str], reader_seed: str | None, open_world: bool = False) -> list[str]:
    """Every artifact of the paper: the targets of the workflow's default target (LoCoMo's table
    2 joins them when enabled, workflow/rules/locomo.smk), the manifest last."""

    def each(pattern: str, **values: list[str] | tuple[str, ...]) -> list[str]:
        out = [pattern]
        for name, options in values.items():
            out = [path.replace("{" + name + "}", str(option)) for path in out for option in options]
        return out

    targets = each("results/data/{seed}/{split}.jsonl", seed=seeds, split=SPLITS)
    if open_world:
        targets += each(OPEN_TRAIN, seed=_training_seeds(seeds, reader_seed))
    targets += each("results/sft/{seed}", seed=seeds)
    targets += each("results/eviction/{seed}.csv", seed=seeds)
    targets += each("results/train/{seed}", seed=seeds)
    if reader_seed is not None:
        targets += [f"results/data/{reader_seed}/train.jsonl", f"results/sft_reader/{reader_seed}",
                    f"results/train_reader/{reader_seed}"]
    targets += each("results/eval/{seed}/{split}/metrics.json", seed=seeds, split=EVAL_SPLITS)
    targets += each("results/readcost/{seed}.csv", seed=seeds)
    targets += each("results/erasure/{seed}/metrics.json", seed=seeds)
    targets += ["results/curve/learning_curve.csv"]
    # The report stage (workflow/rules/report.smk): tables, figures, numbers, paper, provenance.
    targets += each("results/{table}.csv", table=TABLES)
    targets += ["results/read_cost.csv", "results/setup.json", "results/benchmarks.csv"]
    targets += each("results/figures/{figure}.{ext}", figure=list(FIGURES), ext=["pdf", "png"])
    targets += ["results/environment.md", "results/rulegraph.mmd", "results/numbers.json"]
    # The paper, then the manifest: written last, it lists everything above.
    targets += ["paper/paper.md", "results/manifest.json"]
    return targets


# ---- the --config object of each verb --------------------------------------------------------


def open_world(config: dict) -> bool:
    """Open-world training conversations (``data.open``, SPEC §2.9) join the policy's and the
    reader's SFT sets."""
    return bool(config["data"]["open"])


def sft_timelines(config: dict, seed: str) -> list[str]:
    """The training timelines of one SFT set: the closed benchmark's, then the open world's when
    :func:`open_world` (one mixture, ``clerk build-sft --timelines A B``)."""
    return [f"results/data/{seed}/train.jsonl", *([OPEN_TRAIN.format(seed=seed)] if open_world(config) else [])]


def separate_reader(config: dict) -> bool:
    """With ``evaluate.reader_model: reader`` a reader adapter of its own reads every system."""
    return config["evaluate"]["reader_model"] == "reader"


def reader_seed(config: dict) -> str | None:
    """The seed of the one separate reader (``reader.seed``: trained once, on personas of its own
    seed, for every experiment seed), or None without a separate reader."""
    return str(config["reader"]["seed"]) if separate_reader(config) else None


@dataclass(frozen=True)
class Stage:
    """How a rule's ``--config`` object is made: the settings of ``sections`` (dotted config paths,
    formatted with the job's wildcards) that its ``verb`` takes (each setting names its verbs,
    :mod:`clerk.settings`), a later section's value winning; then ``job`` (the
    config, the wildcards -> values) sets what depends on the job rather than on one setting."""

    verb: str
    sections: tuple[str, ...] = ()
    job: Callable[[dict, dict], dict] | None = None


def _first_seed_snapshots(config: dict, wildcards: dict) -> dict:
    """Snapshots (the learning curve) on the first seed's policy only."""
    first = str(wildcards["seed"]) == str(config["seeds"][0])
    return {"snapshot_steps": config["train"]["snapshot_steps"] if first else 0}


def _generate(config: dict, wildcards: dict) -> dict:
    """The split to word (the long-horizon probe uses the test names and phrasings); the reader's
    seed trains on ``reader.personas`` personas, whatever the policies' ``data.train.personas``."""
    split = wildcards["split"]
    out: dict[str, Any] = {"split": "test" if split == "long" else split}
    if split == "train" and str(wildcards.get("seed")) == reader_seed(config):
        out["personas"] = config["reader"]["personas"]
    return out


def _locomo(seeded: bool) -> Callable[[dict, dict], dict]:
    """The LoCoMo job's systems (:func:`locomo_systems`); a configured path wins over a download."""
    def job(config: dict, wildcards: dict) -> dict:
        spec = config["locomo"]
        return {"systems": locomo_systems(config)[0 if seeded else 1],
                "download": bool(spec["download"] and not spec["path"])}
    return job


def _model(config: dict, wildcards: dict) -> dict:
    """The chosen kind's keys only (a profile that switches kind must not pass the other's)."""
    from clerk.models.spec import KIND_FIELDS

    kind = config["model"]["kind"]
    return {"kind": kind, **{key: config["model"][key] for key in KIND_FIELDS[kind]}}


#: Every rule that runs a verb with a ``--config`` object: the verb, the sections it reads (keys
#: of clerk.config.SECTIONS; ``data.{split}``: the job's split) and what depends on the job.
STAGES: dict[str, Stage] = {
    "generate": Stage("generate", ("data", "data.{split}"), _generate),
    "generate_forget": Stage("generate", ("data", "erasure"), lambda c, w: {"split": "test"}),
    "generate_open": Stage("generate", ("data.open",), lambda c, w: {"world": "open", "split": "train"}),
    # a policy of its own keeps no question, so the questions' wording is not its setting
    "build_sft": Stage("build-sft", ("evaluate", "sft"), lambda c, w: {"tasks": "consolidate", "reworded_questions": 0.0}
                       if separate_reader(c) else {"tasks": "both"}),
    "build_sft_reader": Stage("build-sft", ("evaluate", "sft", "reader"), lambda c, w: {"tasks": "answer"}),
    "base_model": Stage("materialize-model", (), _model),
    "train": Stage("train", ("train",), _first_seed_snapshots),
    # the `train` recipe with the reader block's steps and precision, no snapshots
    "train_reader": Stage("train", ("train", "reader"), lambda c, w: {"snapshot_steps": 0}),
    "learning_curve": Stage("learning-curve", ("data", "train", "evaluate")),
    "evaluate": Stage("evaluate", ("data", "evaluate")),
    "erasure": Stage("erasure", ("data", "evaluate", "erasure")),
    "read_cost": Stage("read-cost", ("evaluate",)),
    "streams": Stage("streams", ("streams",)),
    "eviction_study": Stage("eviction-study", ("streams",)),
    "locomo": Stage("locomo", ("evaluate", "locomo"), _locomo(seeded=True)),
    "locomo_shared": Stage("locomo", ("evaluate", "locomo"), _locomo(seeded=False)),
    # report verbs: what they print is chosen by the run's settings
    "table_eviction": Stage("table-eviction", (), lambda c, w: {
        "default_capacity": c["streams"]["default_capacity"], "default_noise": c["streams"]["noise"]}),
    "figure": Stage("figure", (), lambda c, w: {
        "accuracy_by_type": {"split": "test"}, "eviction": {"noise": c["streams"]["noise"]}}.get(w["figure"], {})),
    "locomo_status": Stage("locomo-status", (), lambda c, w: {
        "path": c["locomo"]["path"] or "", "download": bool(c["locomo"]["download"])}),
    "paper": Stage("render-paper", (), lambda c, w: {"no_digits_in": list(NO_DIGITS_IN)}),
}


def _section(config: dict, keys: list[str]) -> dict:
    node: Any = config
    for key in keys:
        node = node[key]
    return node


def stage_config(config: dict, stage: str, **wildcards: str) -> dict[str, Any]:
    """The ``--config`` object of the verb a rule runs, from the (validated) workflow config:
    its :class:`Stage`'s projection of sections.

    Args:
        config: the workflow config (config/config.yaml merged with the profiles).
        stage: the rule (``generate``, ``train``, ``figure``...).
        wildcards: the job's wildcards the object depends on (``split``, ``seed``, ``figure``).

    Raises:
        KeyError: an unknown stage.
    """
    from clerk.config import section_class
    from clerk.settings import as_config, nested_section, settings

    if stage not in STAGES:
        raise KeyError(f"no --config object for stage {stage!r}")
    spec = STAGES[stage]
    out: dict[str, Any] = {}
    for path in spec.sections:
        section, *nested = path.format(**wildcards).split(".")
        cls = nested_section(section_class(section), nested)
        values = _section(config, [section, *nested])
        for field, _ in settings(cls):
            if spec.verb in field.metadata["verbs"] and field.name in values:
                out[field.name] = as_config(values[field.name])
    if spec.job is not None:
        out.update(spec.job(config, wildcards))
    return out


def stage_json(config: dict, stage: str, **wildcards: str) -> str:
    """:func:`stage_config` as one JSON text, keys in the config's order: the order of a mapping
    can matter (``sft.answer_views`` is sampled in its order), so keys are never sorted. The same
    config gives the same text, which Snakemake compares to decide a rerun."""
    return json.dumps(stage_config(config, stage, **wildcards), ensure_ascii=False)
