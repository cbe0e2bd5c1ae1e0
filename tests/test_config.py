"""Configuration validation: every bad value fails before any job runs, naming the field."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
import yaml

from clerk.config import SYNTHETIC_SESSION_FIELDS, ConfigError, load_and_validate, validate_config
from clerk.memory.choices import registry_enums

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ["config/config.yaml", "config/smoke.yaml", "config/paper.yaml", "config/open.yaml",
            "config/locomo-all.yaml"]


def _default() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def _set(config: dict, dotted: str, value) -> dict:
    node = config
    *parents, last = dotted.split(".")
    for key in parents:
        node = node[key]
    node[last] = value
    return config


MEMORY = "['add-only', 'clerk', 'clerk-repair', 'clerk-unconstrained', 'full', 'null', 'oracle', 'prompted-ledger', 'rag', 'window']"
LOCOMO = "['clerk', 'clerk-repair', 'prompted-ledger', 'full', 'null', 'summary-rag', 'evidence']"
POLICIES = "['decay', 'fifo', 'lfu', 'lru', 'random', 'salience', 'unbounded']"
#: (field, bad value, the message line): a bad name in every registry-backed list and field, and
#: the other mistakes that used to pass the dry run and fail only inside a job.
BAD_CONFIGS = [
    ("evaluate.systems", ["clerk", "clerkk"], f"config.evaluate.systems.1: 'clerkk' is not one of {MEMORY}"),
    ("evaluate.systems", ["full", "summary-rag"], f"config.evaluate.systems.1: 'summary-rag' is not one of {MEMORY}"),
    ("evaluate.systems", ["rag", "rag"], "config.evaluate.systems: ['rag', 'rag'] has non-unique elements"),
    ("evaluate.systems", [], "config.evaluate.systems: [] should be non-empty"),
    ("locomo.systems", ["clerk", "oracle"], f"config.locomo.systems.1: 'oracle' is not one of {LOCOMO}"),
    ("locomo.systems", ["summary_rag"], f"config.locomo.systems.0: 'summary_rag' is not one of {LOCOMO}"),
    ("streams.policies", ["lru", "belady"], f"config.streams.policies.1: 'belady' is not one of {POLICIES}"),
    ("model.kind", "ollama", "config.model.kind: 'ollama' is not one of ['pypi-gguf', 'hf', 'scratch', 'local']"),
    ("evaluate.dtype", "float16", "config.evaluate.dtype: 'float16' is not one of ['auto', 'float32', 'bfloat16']"),
    ("evaluate.reader_model", "trained", "config.evaluate.reader_model: 'trained' is not one of ['base', 'adapter', 'reader']"),
    ("train.bf16", "yes", "config.train.bf16: 'yes' is not one of ['auto', 'on', 'off']"),
    ("train.bf16", False, "config.train.bf16: False is not one of ['auto', 'on', 'off']"),
    ("train.lora_targets", ["q_proj", "q proj"], "config.train.lora_targets.1: 'q proj' does not match"),
    ("train.lora_targets", ["q_proj", "q_proj"], "config.train.lora_targets: ['q_proj', 'q_proj'] has non-unique elements"),
    ("train.modules_to_save", ["lm-head"], "config.train.modules_to_save.0: 'lm-head' does not match"),
    ("train.lora_dropout", 1.0, "config.train.lora_dropout: 1.0 is greater than or equal to the maximum of 1"),
    ("streams.default_capacity", 20, "config.streams.default_capacity: 20 is not one of config.streams.capacities "
                                     "[8, 12, 16, 24, 32] (table 4 reports that setting)"),
    ("streams.noise", 2, "config.streams.noise: 2 is not one of config.streams.noise_grid [1, 3, 6]"),
    ("train.lr_schedule", "cosine", "config.train: Additional properties are not allowed ('lr_schedule' was unexpected)"),
    ("sft.answer_views", {"ledger": 1, "transcript": 1},
     "config.sft.answer_views: 'transcript' is not one of ['ledger', 'full', 'window', 'rag', 'add-only']"),
    ("sft.answer_views", {"ledger": 0}, "config.sft.answer_views.ledger: 0 is less than or equal to the minimum of 0"),
    ("sft.answer_views", {}, "config.sft.answer_views: {} should be non-empty"),
    ("sft.evict_weight", 0, "config.sft.evict_weight: 0 is less than the minimum of 1"),
    ("train.snapshot_steps", -1, "config.train.snapshot_steps: -1 is less than the minimum of 0"),
    ("train.curve_sessions", -1, "config.train.curve_sessions: -1 is less than the minimum of 0"),
    ("evaluate.constrained", "yes", "config.evaluate.constrained: 'yes' is not of type 'boolean'"),
    ("evaluate.baseline_reader", "base", "config.evaluate: Additional properties are not allowed ('baseline_reader' was unexpected)"),
    # The eviction-pressure slice and the teacher-forced writers.
    ("data.test.evict_personas", -1, "config.data.test.evict_personas: -1 is less than the minimum of 0"),
    ("data.test_ood.evict_personas", 2.0, "config.data.test_ood.evict_personas: 2.0 is a float, not an integer (write 2)"),
    ("data.test.evict_adds", [4, 3], "config.data.test.evict_adds: [4, 3] has low 4 above high 3 "
                                     "(a [low, high] range with 0 <= low <= high)"),
    ("data.test.evict_adds", [3], "config.data.test.evict_adds: [3] is too short"),
    ("data.train.evict_adds", [3, 4], "config.data.train.evict_adds: [3, 4] is set but config.data.train.evict_personas "
                                      "is 0 (the range applies to slice personas only"),
    # Compositional wording, top-layer LoRA and the reader's precision.
    ("data.train.compose", 1.5, "config.data.train.compose: 1.5 is greater than the maximum of 1"),
    ("data.train.compose", "0.3", "config.data.train.compose: '0.3' is not of type 'number'"),
    # The policy's training-only statement rewrites: the train split only.
    ("data.train.rewrites", ["add", "retract"], "config.data.train.rewrites.1: 'retract' is not one of "
                                                "['add', 'update', 'tombstone', 'chatter']"),
    ("data.train.rewrites", ["add", "add"], "config.data.train.rewrites: ['add', 'add'] has non-unique elements"),
    ("data.test.rewrites", ["add"], "config.data.test.rewrites: ['add'] on a split other than train (the rewrites "
                                    "are training-only wording"),
    ("train.lora_layers", -1, "config.train.lora_layers: -1 is less than the minimum of 0"),
    ("train.lora_layers", 2.0, "config.train.lora_layers: 2.0 is a float, not an integer (write 2)"),
    ("reader.precision", "bf16", "config.reader.precision: 'bf16' is not one of ['auto', 'fp32', 'bf16-frozen']"),
    ("evaluate.teacher_forced", ["oracle"], "config.evaluate.teacher_forced: 'oracle' is not a model writer (allowed: "
                                            "the model writers ['clerk', 'clerk-repair', 'clerk-unconstrained', 'prompted-ledger']"),
    ("evaluate.teacher_forced", ["clerk-unconstrained"], "config.evaluate.teacher_forced: 'clerk-unconstrained' is not "
                                                         "in config.evaluate.systems"),
    ("evaluate.teacher_forced", ["clerkk"], f"config.evaluate.teacher_forced.0: 'clerkk' is not one of {MEMORY}"),
]


class TestValidateConfig:
    @pytest.mark.parametrize("profile", PROFILES)
    def test_shipped_profiles_are_valid(self, profile):
        """Each shipped profile (merged over the default, as Snakemake does) validates."""
        files = [ROOT / "config/config.yaml"] + ([ROOT / profile] if profile != PROFILES[0] else [])
        config = load_and_validate(*files)
        assert config["seeds"]

    @pytest.mark.parametrize(
        ("path", "value", "expected"),
        [
            (("data", "budget"), -1, "config.data.budget: -1 is less than the minimum of 1"),
            (("seeds",), ["137"], "config.seeds.0: '137' is not of type 'integer'"),
            (("bogus",), 1, "'bogus' was unexpected"),
            (("train", "lr"), "fast", "config.train.lr: 'fast' is not of type 'number'"),
            (("model", "kind"), "ollama", "config.model.kind: 'ollama' is not one of"),
            (("data", "test", "sessions"), 1, "config.data.test.sessions: 1 is less than the minimum of 2"),
            (("train", "bf16"), True, "config.train.bf16: True is not one of"),
            (("evaluate", "reader_model"), "gpt", "config.evaluate.reader_model: 'gpt' is not one of"),
        ],
    )
    def test_bad_value_names_the_field(self, path, value, expected):
        """A bad value raises ConfigError whose message names the dotted field path."""
        config = copy.deepcopy(_default())
        node = config
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        with pytest.raises(ConfigError) as info:
            validate_config(config)
        assert expected in str(info.value)

    def test_kind_requires_its_keys(self):
        """An hf model without a pinned revision is rejected."""
        config = _default()
        config["model"] = {"name": "q", "kind": "hf", "repo_id": "Qwen/Qwen2.5-0.5B-Instruct"}
        with pytest.raises(ConfigError, match="'revision' is a required property"):
            validate_config(config)

    def test_all_errors_reported_at_once(self):
        """Several problems are listed together, one per line."""
        config = _default()
        config["data"]["budget"] = 0
        config["streams"]["noise"] = -3
        message = str(pytest.raises(ConfigError, validate_config, config).value)
        assert "config.data.budget" in message and "config.streams.noise" in message

    def test_defaults_are_filled(self):
        """Optional keys get their schema defaults."""
        config = _default()
        del config["data"]["phrasings"]
        assert validate_config(config)["data"]["phrasings"] is None

    def test_reader_policy_and_curve_defaults(self):
        """Without them, writers are constrained, the first seed's policy snapshots every 400 steps and a
        curve point scores 40 sessions: the sections' defaults, which are the default profile's."""
        config = _default()
        del config["evaluate"]["constrained"], config["train"]["snapshot_steps"], config["train"]["curve_sessions"]
        config = validate_config(config)
        assert (config["evaluate"]["constrained"], config["train"]["snapshot_steps"], config["train"]["curve_sessions"]) == (
            True, 400, 40)

    def test_slice_and_teacher_forcing_defaults(self):
        """Without the key, a split has no eviction slice (clerk generate's own default, 0); which
        writers are scored teacher-forced has no default: the profile states it."""
        config = _default()
        del config["data"]["test"]["evict_personas"]
        config = validate_config(config)
        from clerk.wiring import stage_config

        assert stage_config(config, "generate", split="test")["evict_personas"] == 0
        config = _default()
        del config["evaluate"]["teacher_forced"]
        with pytest.raises(ConfigError, match="'teacher_forced' is a required property"):
            validate_config(config)

    def test_compose_layers_and_reader_precision_wiring(self):
        """compose and lora_layers reach the rule objects (off: their defaults, 0); the reader
        trains at reader.precision (fp32 without it), whatever train.precision."""
        from clerk.wiring import stage_config

        config = validate_config(_default())
        assert stage_config(config, "generate", split="train")["compose"] == 0.0
        assert stage_config(config, "train", seed="137")["lora_layers"] == 0
        config["data"]["train"]["compose"], config["train"]["lora_layers"] = 0.3, 15
        config["train"]["precision"], config["reader"]["precision"] = "auto", "fp32"
        assert stage_config(config, "generate", split="train")["compose"] == 0.3
        assert stage_config(config, "train", seed="137")["lora_layers"] == 15
        assert stage_config(config, "train_reader", seed="31")["precision"] == "fp32"
        config = _default()
        del config["reader"]["precision"]  # the section's default, the default profile's
        assert stage_config(validate_config(config), "train_reader", seed="31")["precision"] == "fp32"

    def test_reader_seed_trains_on_its_own_persona_count(self):
        """The reader's seed generates reader.personas training personas, each policy seed
        data.train.personas: a change of the policies' data leaves the instrument's data alone."""
        from clerk.wiring import stage_config

        config = validate_config(_default())
        config["data"]["train"]["personas"], config["reader"]["personas"] = 200, 100
        assert stage_config(config, "generate", split="train", seed="137")["personas"] == 200
        assert stage_config(config, "generate", split="train", seed="31")["personas"] == 100
        assert stage_config(config, "generate", split="test", seed="31")["personas"] == config["data"]["test"]["personas"]
        config["evaluate"]["reader_model"] = "adapter"  # one adapter for both tasks: no reader seed
        assert stage_config(config, "generate", split="train", seed="31")["personas"] == 200

    @pytest.mark.parametrize("field", ["sft.answer_views", "sft.evict_weight", "evaluate.reader_model",
                                       "evaluate.teacher_forced"])
    def test_required(self, field):
        """The SFT view mixture, EVICT oversampling and the one reader must be stated."""
        config = _default()
        *parents, last = field.split(".")
        del config[parents[0]][last]
        with pytest.raises(ConfigError, match=f"'{last}' is a required property"):
            validate_config(config)

    def test_answer_view_kinds_are_the_readers_views(self):
        """The view kinds config may name are exactly those clerk.memory.views builds."""
        from clerk.memory import MEMORY_REGISTRY

        assert registry_enums()["view_kind"] == MEMORY_REGISTRY.view_kinds()
        for profile in PROFILES:
            views = yaml.safe_load((ROOT / profile).read_text()).get("sft", {}).get("answer_views", {})
            assert set(views) <= set(MEMORY_REGISTRY.view_kinds()), profile


class TestRegistryBackedNames:
    def test_doctests(self):
        """clerk.config's examples hold (the registry-backed enums, view_kind among them)."""
        import doctest

        import clerk.config

        result = doctest.testmod(clerk.config)
        assert result.attempted > 0 and result.failed == 0

    def test_schema_file_lists_the_codes_names(self):
        """Each registry-backed enum in the schema file equals the code's set (validate_config uses
        the code's; this keeps the file, which users read, from drifting)."""
        defs = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())["$defs"]
        for name, names in registry_enums().items():
            assert sorted(defs[name]["enum"]) == sorted(names), name

    def test_synthetic_session_fields(self):
        """SYNTHETIC_SESSION_FIELDS are exactly the fields of a generated session."""
        from clerk.generator.timelines import generate

        timeline = generate(seed=0, split="test", personas=1, sessions=2)[0]
        assert set(timeline["sessions"][0]) == SYNTHETIC_SESSION_FIELDS

    def test_locomo_sessions_serve_every_locomo_system(self):
        """Every LoCoMo system reads only fields that LoCoMo sessions carry (so not oracle)."""
        from clerk.locomo.data import Session
        from clerk.locomo.evaluation import session_record
        from clerk.memory import MEMORY_REGISTRY

        fields = set(session_record(Session(0, "", [], "", "session_1")))
        for name in registry_enums()["locomo_system"]:
            assert set(getattr(MEMORY_REGISTRY.get(name), "session_fields", ())) <= fields, name
        assert not set(MEMORY_REGISTRY.get("oracle").session_fields) <= fields

    @pytest.mark.parametrize(("field", "value", "expected"), BAD_CONFIGS, ids=[f"{f}={v!r}" for f, v, _ in BAD_CONFIGS])
    def test_bad_config_names_field_value_and_choices(self, field, value, expected):
        """A bad value raises ConfigError whose line names the field, the value and the valid ones."""
        with pytest.raises(ConfigError) as info:
            validate_config(_set(_default(), field, value))
        assert expected in str(info.value)

    def test_scratch_heads_divide_hidden(self):
        """A scratch model whose heads do not divide its hidden size fails validation."""
        config = load_and_validate(ROOT / "config/config.yaml", ROOT / "config/smoke.yaml")
        config["model"]["hidden"] = 66
        with pytest.raises(ConfigError, match=r"config.model.hidden: 66 is not divisible by config.model.heads 4"):
            validate_config(config)

    def test_local_model_path_must_exist(self, tmp_path):
        """A local model whose directory does not exist fails validation."""
        config = _default()
        config["model"] = {"name": "mine", "kind": "local", "path": str(tmp_path / "absent")}
        with pytest.raises(ConfigError, match=r"config.model.path: '.*absent' is not an existing directory"):
            validate_config(config)

    def test_local_model_folder_must_hold_a_model(self, tmp_path):
        """A local folder without config.json, safetensors weights or a tokenizer fails the dry run
        (it failed only when materialize-model ran); the same folder with them passes."""
        config = _default()
        config["model"] = {"name": "mine", "kind": "local", "path": str(tmp_path)}
        with pytest.raises(ConfigError, match=r"config.model.path: '.*' has no config.json, no \*.safetensors "
                                              r"weights, no tokenizer files"):
            validate_config(copy.deepcopy(config))
        (tmp_path / "config.json").write_text('{"model_type": "llama"}')
        (tmp_path / "model.safetensors").write_bytes(b"")
        (tmp_path / "tokenizer.json").write_text("{}")
        validate_config(config)

    @pytest.mark.parametrize("key", ["lora_targets", "modules_to_save"])
    def test_lora_modules_must_exist_in_the_model(self, key):
        """A LoRA target or fully trained module the chosen (Llama) model lacks fails the dry run
        (it failed only when training started)."""
        config = _set(_default(), f"train.{key}", ["q_proj", "no_such_module"])
        with pytest.raises(ConfigError, match=rf"config.train.{key}: \['no_such_module'\] not modules of the llama "
                                              r"model of config.model \(allowed: embed_tokens, q_proj"):
            validate_config(config)

    def test_lora_modules_of_a_local_model_come_from_its_config(self, tmp_path):
        """A local folder's own model_type decides; an architecture not in the table is not judged."""
        for name, text in (("config.json", '{"model_type": "some_new_arch"}'), ("model.safetensors", ""),
                           ("tokenizer.json", "{}")):
            (tmp_path / name).write_text(text)
        config = _set(_default(), "train.lora_targets", ["c_attn"])
        config["model"] = {"name": "mine", "kind": "local", "path": str(tmp_path)}
        validate_config(copy.deepcopy(config))
        (tmp_path / "config.json").write_text('{"model_type": "llama"}')
        with pytest.raises(ConfigError, match=r"config.train.lora_targets: \['c_attn'\] not modules of the llama"):
            validate_config(config)


class TestWorkflowValidation:
    @pytest.mark.parametrize(
        ("override", "expected"),
        [
            # One schema error, one registry-backed name and one cross-field rule: that the
            # Snakefile runs the validation; every other message is checked in-process above.
            ({"data": {"budget": -1}}, "config.data.budget: -1 is less than the minimum of 1"),
            ({"evaluate": {"systems": ["summary-rag"]}}, f"config.evaluate.systems.0: 'summary-rag' is not one of {MEMORY}"),
            ({"streams": {"default_capacity": 20}}, "config.streams.default_capacity: 20 is not one of"),
        ],
    )
    def test_snakemake_fails_before_any_job(self, tmp_path, override, expected):
        """`snakemake -n` with a bad config exits non-zero with the message and schedules nothing."""
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump(override))
        proc = subprocess.run(
            ["snakemake", "-n", "--cores", "1", "--configfile", str(bad)],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )
        assert proc.returncode != 0
        assert expected in proc.stdout + proc.stderr
        assert "Job stats" not in proc.stdout + proc.stderr
