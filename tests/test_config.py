"""Configuration validation: every bad value fails before any job runs, naming the field."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
import yaml

from clerk.config import ConfigError, load_and_validate, validate_config

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ["config/config.yaml", "config/smoke.yaml", "config/paper.yaml"]


def _default() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


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
            (("evaluate", "baseline_reader"), "gpt", "config.evaluate.baseline_reader: 'gpt' is not one of"),
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


class TestWorkflowValidation:
    @pytest.mark.parametrize(
        ("override", "expected"),
        [
            ({"data": {"budget": -1}}, "config.data.budget: -1 is less than the minimum of 1"),
            ({"seeds": ["137"]}, "config.seeds.0: '137' is not of type 'integer'"),
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
