"""One way to pass config: each verb's ``--config`` JSON (clerk.cli) and the objects the workflow
builds for it (clerk.wiring).

Precedence is the verb's defaults < ``--config`` < flags given on the command line; an unknown key
or a value of the wrong type is an error that names the key, the value and what is allowed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clerk import wiring
from clerk.cli import apply_config_json, given_flags, main, make_parser, verb_parser
from clerk.config import load_and_validate
from clerk.errors import UserError
from clerk.models.spec import KIND_FIELDS

ROOT = Path(__file__).resolve().parents[1]
PROFILES = {
    "default": ["config/config.yaml"],
    "smoke": ["config/config.yaml", "config/smoke.yaml"],
    "paper": ["config/config.yaml", "config/paper.yaml"],
    "open": ["config/config.yaml", "config/open.yaml"],
    "locomo-all": ["config/config.yaml", "config/locomo-all.yaml"],
}
#: The verb each stage's --config object goes to.
VERBS = {
    "generate": "generate", "generate_open": "generate", "generate_forget": "generate", "build_sft": "build-sft", "build_sft_reader": "build-sft",
    "base_model": "materialize-model", "train": "train", "train_reader": "train", "learning_curve": "learning-curve",
    "evaluate": "evaluate", "erasure": "erasure", "read_cost": "read-cost", "streams": "streams",
    "eviction_study": "eviction-study", "table_eviction": "table-eviction", "figure": "figure", "locomo": "locomo",
    "locomo_shared": "locomo", "locomo_status": "locomo-status", "paper": "render-paper",
}


def resolve(argv: list[str]):
    """``argv`` parsed as ``clerk`` would, its ``--config`` applied."""
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.config_json is not None:
        apply_config_json(args, verb_parser(parser, args.verb), given_flags(argv))
    return args


class TestConfigJson:
    BASE = ["train", "--sft", "s", "--model", "m", "--out", "o"]

    def test_precedence_defaults_config_flags(self):
        """Defaults < --config < explicit flags, whatever the order on the command line."""
        args = resolve([*self.BASE, "--config", json.dumps({"lr": 0.5, "max_steps": 8}), "--max-steps", "4"])
        assert (args.lr, args.max_steps, args.batch_size) == (0.5, 4, 1)  # batch_size: the default
        args = resolve(["train", "--max-steps", "4", "--config", json.dumps({"max_steps": 8}), "--sft", "s",
                        "--model", "m", "--out", "o"])
        assert args.max_steps == 4

    def test_a_flag_equal_to_its_default_still_wins(self):
        args = resolve([*self.BASE, "--config", json.dumps({"lr": 0.5}), "--lr", "0.0002"])
        assert args.lr == 0.0002

    def test_values_become_the_flags_types(self):
        """Lists of a comma-list flag become tuples; ints pass for floats; booleans for switches."""
        args = resolve([*self.BASE, "--config", json.dumps({"lora_targets": ["q_proj"], "epochs": 1, "validation_loss": False})])
        assert args.lora_targets == ("q_proj",) and args.epochs == 1.0 and type(args.epochs) is float
        assert args.validation_loss is False

    def test_unknown_key_names_it_and_the_allowed(self):
        with pytest.raises(UserError, match=r"unknown key\(s\) 'lr_schedule' for clerk train; allowed: .*\bmax_steps\b"):
            resolve([*self.BASE, "--config", json.dumps({"lr_schedule": "cosine"})])

    @pytest.mark.parametrize(("cfg", "message"), [
        ({"max_steps": "8"}, r"--config key 'max_steps' \(flag --max-steps\): expected an integer, got '8'"),
        ({"max_steps": True}, r"expected an integer, got True"),
        ({"lr": "fast"}, r"--config key 'lr' \(flag --lr\): expected a number, got 'fast'"),
        ({"bf16": "yes"}, r"--config key 'bf16' \(flag --bf16\): expected one of auto, on, off, got 'yes'"),
        ({"validation_loss": "no"}, r"expected true or false, got 'no'"),
    ])
    def test_wrong_types_name_the_key_value_and_allowed(self, cfg, message):
        with pytest.raises(UserError, match=message):
            resolve([*self.BASE, "--config", json.dumps(cfg)])

    def test_not_an_object(self):
        with pytest.raises(UserError, match="--config must be a JSON object"):
            resolve([*self.BASE, "--config", "[1, 2]"])

    def test_a_json_file(self, tmp_path):
        (tmp_path / "c.json").write_text(json.dumps({"max_steps": 3}))
        assert resolve([*self.BASE, "--config", str(tmp_path / "c.json")]).max_steps == 3

    def test_required_options_may_come_from_config(self, tmp_path, capsys):
        """A required flag (here --split) may be a --config key instead; missing from both it is an error."""
        out = tmp_path / "t.jsonl"
        main(["generate", "--seed", "1", "--config", json.dumps({"split": "test", "personas": 1, "sessions": 2}),
              "--out", str(out)])
        assert out.is_file() and json.loads(out.read_text().splitlines()[0])["split"] == "test"
        with pytest.raises(SystemExit) as exit_:
            main(["generate", "--seed", "1", "--out", str(out)])
        assert exit_.value.code == 2 and "--split (split)" in capsys.readouterr().err

    def test_user_error_exits_2_with_one_line(self, capsys):
        with pytest.raises(SystemExit) as exit_:
            main(["streams", "--seed", "1", "--out", "x", "--config", '{"lenght": 5}'])
        assert exit_.value.code == 2
        assert capsys.readouterr().err.startswith("clerk streams: error: --config: unknown key(s) 'lenght'")

    def test_flags_and_config_build_the_same_dataclass(self):
        """`clerk evaluate` flags and the same values as --config give one EvaluateConfig."""
        from clerk.evaluate.config import EvaluateConfig

        base = ["evaluate", "--timelines", "t", "--model", "m", "--out", "o"]
        by_flags = resolve([*base, "--systems", "oracle", "full", "--window-k", "2", "--no-constrained"])
        by_json = resolve([*base, "--config", json.dumps({"systems": ["oracle", "full"], "window_k": 2,
                                                          "constrained": False})])
        assert EvaluateConfig.from_values(vars(by_flags)) == EvaluateConfig.from_values(vars(by_json))

    def test_evaluate_config_names_the_field(self):
        from clerk.evaluate.config import EvaluateConfig

        with pytest.raises(UserError, match=r"threads must be an int >= 0, got -1"):
            EvaluateConfig(timelines="t", model="m", out="o", systems=("oracle",), threads=-1)
        with pytest.raises(UserError, match=r"systems must be a non-empty list"):
            EvaluateConfig(timelines="t", model="m", out="o", systems=())


class TestStageConfigs:
    @pytest.mark.parametrize("profile", sorted(PROFILES))
    def test_every_stage_object_is_accepted_by_its_verb(self, profile):
        """Each stage's --config object, from each profile, holds only options of its verb and
        values of their types (what a job would otherwise fail on at run time)."""
        config = load_and_validate(*(ROOT / f for f in PROFILES[profile]))
        seeded, shared = wiring.locomo_systems(config)
        for stage, verb in VERBS.items():
            if (stage, bool(seeded), bool(shared)) in (("locomo", False, True), ("locomo_shared", True, False)):
                continue  # a LoCoMo job this profile never runs (clerk.wiring.locomo_systems)
            if stage == "generate_open" and not wiring.open_world(config):
                continue  # no open-world data in this profile
            wildcards = {"split": "long", "seed": str(config["seeds"][0]), "figure": "eviction"}
            cfg = wiring.stage_json(config, stage, **wildcards)
            parser = make_parser()
            args = parser.parse_args([verb, *(["eviction"] if verb == "figure" else []), "--config", cfg])
            apply_config_json(args, verb_parser(parser, verb), set())

    def test_snapshots_on_the_first_seed_only(self):
        config = load_and_validate(ROOT / "config/config.yaml")
        first, other = (str(s) for s in config["seeds"][:2])
        assert wiring.stage_config(config, "train", seed=first)["snapshot_steps"] == config["train"]["snapshot_steps"]
        assert wiring.stage_config(config, "train", seed=other)["snapshot_steps"] == 0
        reader = wiring.stage_config(config, "train_reader")
        assert (reader["max_steps"], reader["snapshot_steps"]) == (config["reader"]["max_steps"], 0)

    def test_mapping_order_is_the_configs(self):
        """The SFT views are sampled in their config order: the JSON keeps it (never sorted), and
        the verb receives it in that order."""
        config = load_and_validate(ROOT / "config/config.yaml")
        text = wiring.stage_json(config, "build_sft")
        assert list(json.loads(text)["answer_views"]) == list(config["sft"]["answer_views"])
        args = resolve(["build-sft", "--timelines", "t", "--seed", "1", "--out", "o", "--config", text])
        assert list(args.answer_views) == list(config["sft"]["answer_views"])

    def test_model_object_holds_only_the_kinds_keys(self):
        """A profile that switches kind (paper.yaml: hf) does not leak the default kind's keys."""
        config = load_and_validate(ROOT / "config/config.yaml", ROOT / "config/paper.yaml")
        cfg = wiring.stage_config(config, "base_model")
        assert set(cfg) == {"kind", *KIND_FIELDS[config["model"]["kind"]]}

    def test_locomo_reads_with_the_synthetic_instrument(self):
        """LoCoMo's reader is evaluate's: the configured reader model and calibration."""
        config = load_and_validate(ROOT / "config/config.yaml", ROOT / "config/smoke.yaml")
        cfg = wiring.stage_config(config, "locomo")
        assert (cfg["reader_model"], cfg["reader_pmi"]) == (config["evaluate"]["reader_model"],
                                                           config["evaluate"]["reader_pmi"])
        args = resolve(["locomo", "--model", "m", "--out", "o", "--config", json.dumps(cfg)])
        assert args.reader_model == "reader"

    def test_open_world_data_is_per_seed_and_feeds_both_sft_sets(self):
        """data.open adds one generate_open job per experiment seed and the reader's seed, whose
        file follows the closed one in every SFT set; without it nothing of the open world runs."""
        config = load_and_validate(ROOT / "config/config.yaml", ROOT / "config/smoke.yaml")
        assert wiring.open_world(config)
        assert wiring.sft_timelines(config, "137") == ["results/data/137/train.jsonl", "results/data/137/open_train.jsonl"]
        jobs = wiring.stages(["137", "991"], "31", open_world=True)
        assert jobs["generate_open"] == [{"seed": ["137", "991", "31"]}] and list(jobs)[:2] == ["generate", "generate_open"]
        assert "results/data/31/open_train.jsonl" in wiring.final_targets(["137"], "31", open_world=True)
        args = resolve(["generate", "--config", wiring.stage_json(config, "generate_open")])
        assert (args.world, args.split, args.personas, args.budget) == ("open", "train", 3, 8)
        config["data"]["open"] = None
        assert wiring.sft_timelines(config, "137") == ["results/data/137/train.jsonl"]
        assert "generate_open" not in wiring.stages(["137"], "31") and not wiring.open_world(config)

    def test_locomo_ledger_is_its_own_dataset_config(self):
        """LoCoMo's ledger form, budget and write cap come from the locomo block, not from the
        synthetic data and evaluation blocks."""
        config = load_and_validate(ROOT / "config/config.yaml")
        config["locomo"].update(ledger="open", budget=31, max_new_tokens=177)
        cfg = wiring.stage_config(config, "locomo")
        args = resolve(["locomo", "--model", "m", "--out", "o", "--config", json.dumps(cfg)])
        assert (args.ledger, args.budget, args.max_new_tokens) == ("open", 31, 177)
        assert config["data"]["budget"] != 31 and config["evaluate"]["max_new_tokens"] != 177

    def test_locomo_runs_the_seeded_systems_per_seed_and_the_rest_once(self):
        """clerk (the seed's policy writes) runs per seed; the other systems once; every job draws
        the same question subset (locomo.subset_seed)."""
        config = load_and_validate(ROOT / "config/config.yaml", ROOT / "config/smoke.yaml")
        per_seed, once = (wiring.stage_config(config, stage) for stage in ("locomo", "locomo_shared"))
        assert per_seed["systems"] == ["clerk"]
        assert once["systems"] == ["prompted-ledger", "full", "summary-rag", "null", "evidence"]
        assert per_seed["subset_seed"] == once["subset_seed"] == config["locomo"]["subset_seed"]
        for cfg in (per_seed, once):
            args = resolve(["locomo", "--model", "m", "--out", "o", "--seed", "137", "--config", json.dumps(cfg)])
            assert (args.seed, args.subset_seed) == (137, config["locomo"]["subset_seed"])
        adapter_reads = {**config, "evaluate": {**config["evaluate"], "reader_model": "adapter"}}
        assert wiring.locomo_systems(adapter_reads) == (list(config["locomo"]["systems"]), [])

    def test_smoke_profile_runs_locomo_on_the_fixture(self):
        config = load_and_validate(ROOT / "config/config.yaml", ROOT / "config/smoke.yaml")
        assert (ROOT / config["locomo"]["path"]).is_file()
        assert config["locomo"]["path"].startswith("tests/fixtures/locomo/")

    def test_eviction_slice_reaches_generate(self, tmp_path):
        """data.<split>.evict_personas (and evict_adds) reach `clerk generate` through the split's
        object; a split without a slice gets 0, clerk generate's own default (so the file it had before)."""
        config = load_and_validate(ROOT / "config/config.yaml")
        assert wiring.stage_config(config, "generate", split="test")["evict_personas"] == 8
        assert wiring.stage_config(config, "generate", split="train")["evict_personas"] == 0
        config["data"]["test"] |= {"personas": 2, "sessions": 3, "evict_personas": 2, "evict_adds": [5, 5]}
        cfg = wiring.stage_config(config, "generate", split="test")
        assert (cfg["evict_personas"], cfg["evict_adds"]) == (2, [5, 5])
        main(["generate", "--seed", "1", "--config", json.dumps(cfg), "--out", str(tmp_path / "t.jsonl")])
        personas = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
        assert [p.get("slice") for p in personas] == [None, None, "evict", "evict"]
        adds = {sum(e["kind"] == "ADD" for e in s["events"]) for p in personas[2:] for s in p["sessions"][1:]}
        assert adds == {5}

    def test_teacher_forced_reaches_evaluate(self):
        """evaluate.teacher_forced becomes the EvaluateConfig's knob (and nothing else's)."""
        from clerk.evaluate.config import EvaluateConfig

        config = load_and_validate(ROOT / "config/config.yaml", ROOT / "config/smoke.yaml")
        cfg = wiring.stage_json(config, "evaluate")
        args = resolve(["evaluate", "--timelines", "t", "--model", "m", "--out", "o", "--config", cfg])
        assert EvaluateConfig.from_values(vars(args)).eval.teacher_forced == ("clerk", "prompted-ledger")
        assert "teacher_forced" not in wiring.stage_config(config, "erasure")

    def test_figures_have_captions(self):
        """The figure rule's caption file has a branch for every figure name."""
        text = (ROOT / "workflow/report/figure.rst").read_text()
        for name in wiring.FIGURES:
            assert f'snakemake.wildcards.figure == "{name}"' in text, name
