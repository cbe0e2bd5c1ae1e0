"""The workflow's wiring in one importable place: constants the rules and the tests share, and the
``--config`` object of each verb built from its config section.

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
TABLES = ("table1", "table3", "table4", "table5", "table_paired")

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


def _phrasings(config: dict) -> dict[str, str]:
    phrasings = config["data"].get("phrasings")
    return {"phrasings": phrasings} if phrasings else {}


def _generate(config: dict, size: dict, split: str, forgets: int = 0) -> dict[str, Any]:
    data = config["data"]
    out = {"split": split, "personas": size["personas"], "sessions": size["sessions"],
           "questions": list(size.get("questions", [1, 3])), "budget": data["budget"],
           "init_facts": data["init_facts"], **_phrasings(config)}
    if forgets:
        out["forgets"] = forgets
    if size.get("evict_personas", 0):  # only when on: with none the object (and the data) stay as before
        out["evict_personas"] = size["evict_personas"]
        if "evict_adds" in size:
            out["evict_adds"] = list(size["evict_adds"])
    if size.get("compose", 0):  # likewise: compositional wording only when on
        out["compose"] = size["compose"]
    return out


def _train(spec: dict, max_steps: int, snapshot_steps: int) -> dict[str, Any]:
    keys = ("lr", "epochs", "batch_size", "grad_accum", "max_length", "lora_r", "lora_alpha",
            "lora_dropout", "precision", "bf16", "save_steps")
    out = {**{key: spec[key] for key in keys}, "max_steps": max_steps, "snapshot_steps": snapshot_steps,
           "lora_targets": list(spec["lora_targets"]), "modules_to_save": list(spec.get("modules_to_save") or []),
           "eval": spec["validation_loss"]}
    if spec.get("lora_layers", 0):  # only when on: with every layer the object stays as before
        out["lora_layers"] = spec["lora_layers"]
    return out


def _sft(config: dict, role: str) -> dict[str, Any]:
    spec = config["sft"]
    if role == "reader":
        ratio, tasks = config["reader"]["answer_ratio"], "answer"
    else:
        ratio, tasks = spec["answer_ratio"], "consolidate" if separate_reader(config) else "both"
    return {"answer_ratio": ratio, "val_fraction": spec["val_fraction"], "answer_views": dict(spec["answer_views"]),
            "evict_weight": spec["evict_weight"], "tasks": tasks,
            "window_k": config["evaluate"]["window_k"], "rag_k": config["evaluate"]["rag_k"]}


#: The keys of each model kind (a profile that switches kind must not leak the other kind's keys).
MODEL_KIND_KEYS = {
    "pypi-gguf": ("package", "file", "sha256"),
    "hf": ("repo_id", "revision"),
    "local": ("path",),
    "scratch": ("vocab_size", "hidden", "layers", "heads", "intermediate"),
}


def _replay(config: dict) -> dict[str, Any]:
    """The reader and writer knobs ``clerk evaluate`` and ``clerk erasure`` share."""
    spec = config["evaluate"]
    keys = ("window_k", "rag_k", "max_new_tokens", "batch_size", "reader_model", "reader_pmi", "constrained", "dtype")
    return {**{key: spec[key] for key in keys}, **_phrasings(config)}


def stage_config(config: dict, stage: str, **wildcards: str) -> dict[str, Any]:
    """The ``--config`` object of the verb a rule runs, from the (validated) workflow config.

    Args:
        config: the workflow config (config/config.yaml merged with the profiles).
        stage: the rule (``generate``, ``train``, ``figure``...).
        wildcards: the job's wildcards the object depends on (``split``, ``seed``, ``figure``).

    Raises:
        KeyError: an unknown stage.
    """
    data, evaluate = config["data"], config["evaluate"]
    if stage == "generate":
        split = wildcards["split"]  # the long-horizon probe uses the test names and phrasings
        return _generate(config, data[split], "test" if split == "long" else split)
    if stage == "generate_open":  # the same keys as the closed splits' where they mean the same
        spec = data["open"]
        return {"world": "open", "split": "train", "personas": spec["personas"], "sessions": spec["sessions"],
                "budget": spec["budget"]}
    if stage == "generate_forget":
        spec = config["erasure"]
        return _generate(config, spec, "test", spec["forgets"])
    if stage in ("build_sft", "build_sft_reader"):
        return _sft(config, "reader" if stage == "build_sft_reader" else "policy")
    if stage == "base_model":
        spec = config["model"]
        return {"kind": spec["kind"], **{key: spec[key] for key in MODEL_KIND_KEYS[spec["kind"]]}}
    if stage == "train":
        # Snapshots (the learning curve) on the first seed only.
        first = str(config["seeds"][0])
        snapshots = config["train"].get("snapshot_steps", 0) if str(wildcards["seed"]) == first else 0
        return _train(config["train"], config["train"]["max_steps"], snapshots)
    if stage == "train_reader":  # the `train` recipe with the reader block's steps and precision, no snapshots
        reader = config["reader"]
        return _train(config["train"] | {"precision": reader.get("precision", config["train"]["precision"])},
                      reader["max_steps"], 0)
    if stage == "learning_curve":
        return {"sessions": config["train"]["curve_sessions"], "max_new_tokens": evaluate["max_new_tokens"],
                "batch_size": evaluate["batch_size"], "dtype": evaluate["dtype"], **_phrasings(config)}
    if stage == "evaluate":
        return {"systems": list(evaluate["systems"]), "write_only": list(evaluate.get("write_only", [])),
                "teacher_forced": list(evaluate.get("teacher_forced", [])), **_replay(config)}
    if stage == "erasure":
        spec = config["erasure"]
        return {"systems": list(spec["systems"]), "ignore_forget": list(spec["ignore_forget"]), **_replay(config)}
    if stage == "read_cost":
        return {"window_k": evaluate["window_k"], "rag_k": evaluate["rag_k"]}
    if stage == "streams":
        return {key: config["streams"][key] for key in ("length", "foundational", "recalls", "noise")}
    if stage == "eviction_study":
        spec = config["streams"]
        return {"capacities": list(spec["capacities"]), "noise_grid": list(spec["noise_grid"]),
                "policies": list(spec["policies"]), "default_capacity": spec["default_capacity"]}
    if stage == "table_eviction":
        return {"default_capacity": config["streams"]["default_capacity"], "default_noise": config["streams"]["noise"]}
    if stage == "figure":
        figure = wildcards["figure"]
        return {"accuracy_by_type": {"split": "test"}, "eviction": {"noise": config["streams"]["noise"]}}.get(figure, {})
    if stage in ("locomo", "locomo_shared"):  # per seed / once per run (locomo_systems)
        spec = config["locomo"]
        seeded, shared = locomo_systems(config)
        return {"systems": seeded if stage == "locomo" else shared, "max_questions": spec["max_questions"],
                "subset_seed": spec["subset_seed"], "budget": spec["budget"], "ledger": spec["ledger"],
                "max_new_tokens": spec["max_new_tokens"],
                "download": bool(spec["download"] and not spec["path"]),
                **{key: evaluate[key] for key in ("batch_size", "reader_model", "reader_pmi", "dtype")}}
    if stage == "locomo_status":
        return {"path": config["locomo"]["path"] or "", "download": bool(config["locomo"]["download"])}
    if stage == "paper":
        return {"no_digits_in": list(NO_DIGITS_IN)}
    raise KeyError(f"no --config object for stage {stage!r}")


def stage_json(config: dict, stage: str, **wildcards: str) -> str:
    """:func:`stage_config` as one JSON text, keys in the config's order: the order of a mapping
    can matter (``sft.answer_views`` is sampled in its order), so keys are never sorted. The same
    config gives the same text, which Snakemake compares to decide a rerun."""
    return json.dumps(stage_config(config, stage, **wildcards), ensure_ascii=False)
