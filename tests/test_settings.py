"""One place for each setting: the section dataclasses (clerk.settings) and what is derived from them.

- the default profile states each setting at its one default (where the setting has one);
- the schema's section properties and the verbs' flags come from the dataclasses alone;
- adding a setting touches its dataclass and config/config.yaml only: it is validated by
  `snakemake -n` (a bad value fails naming the field) and reaches its verb's --config object.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clerk.cli import apply_config_json, given_flags, make_parser, verb_parser
from clerk.config import SECTIONS, load_schema, section_class
from clerk.settings import default_of, nested_section, settings, strip_optional
from clerk.wiring import STAGES, stage_config

ROOT = Path(__file__).resolve().parent.parent


def _defaults_disagreeing(cls: type, values: dict, where: str) -> list[str]:
    """Every value of ``values`` that differs from its setting's default (nested sections: per key)."""
    out = []
    for field, hint in settings(cls):
        if field.name not in values:
            continue
        inner = strip_optional(hint)[0]
        default = default_of(field)
        value = values[field.name]
        if dataclasses.is_dataclass(inner) and isinstance(value, dict):
            nested = default if isinstance(default, dict) else {}
            filled = {f.name: nested.get(f.name, default_of(f)) for f, _ in settings(inner)}
            out += [f"{where}.{field.name}.{k}: config {v!r}, default {filled[k]!r}" for k, v in value.items()
                    if filled.get(k, dataclasses.MISSING) is not dataclasses.MISSING and filled[k] != v]
        elif default is not dataclasses.MISSING and default != value:
            out.append(f"{where}.{field.name}: config {value!r}, default {default!r}")
    return out


class TestOneDefault:
    def test_default_profile_states_the_defaults(self):
        """Every setting config/config.yaml states equals its dataclass default where one exists
        (the others have none: the profile must choose them)."""
        config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
        problems = [line for name in SECTIONS
                    for line in _defaults_disagreeing(section_class(name), config[name], name)]
        assert problems == []

    def test_the_check_can_fail(self):
        """A config value other than the default is reported, with both values."""
        config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
        config["train"]["lr"] = 2e-4
        config["data"]["long"]["sessions"] = 49
        problems = [line for name in SECTIONS
                    for line in _defaults_disagreeing(section_class(name), config[name], name)]
        assert problems == ["data.long.sessions: config 49, default 50", "train.lr: config 0.0002, default 0.001"]

    def test_verb_defaults_are_the_sections(self):
        """clerk train and clerk learning-curve take the train and evaluate sections' defaults."""
        from clerk.eval_sections import EvaluateSection
        from clerk.evaluate.curve import CurveConfig
        from clerk.train.config import TrainConfig, TrainSection

        train = TrainConfig(sft="s", model="m", out="o")
        for field, _ in settings(TrainSection):
            if field.name in {f.name for f in dataclasses.fields(TrainConfig)}:
                value = getattr(train, field.name)
                assert (list(value) if isinstance(value, tuple) else value) == default_of(field), field.name
        curve = CurveConfig(timelines="t", sft="s", model="m", adapter="a")
        assert (curve.dtype, curve.max_new_tokens, curve.curve_sessions) == (
            EvaluateSection.dtype, EvaluateSection.max_new_tokens, TrainSection.curve_sessions)


class TestDerived:
    def test_schema_file_holds_no_section(self):
        """The schema file keeps the layout and shared definitions; each section is derived."""
        raw = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
        assert set(raw["properties"]) == {"seeds"}
        schema = load_schema()
        for name in SECTIONS:
            props = schema["properties"][name]["properties"]
            assert list(props) == [f.name for f, _ in settings(section_class(name))]

    def test_every_stage_verb_takes_its_settings(self):
        """Every setting a stage's object carries is a flag of the stage's verb, with the setting's help."""
        parser = make_parser()
        for stage, spec in STAGES.items():
            if not spec.sections:
                continue
            verb = verb_parser(parser, spec.verb)
            dests = {a.dest: a for a in verb._actions}
            for path in spec.sections:
                section, *nested = path.format(split="train").split(".")
                cls = nested_section(section_class(section), nested)
                for field, _ in settings(cls):
                    if spec.verb in field.metadata["verbs"]:
                        assert field.name in dests, (stage, field.name)


_FIELD = '''    probe_k: int = setting(3, help="turns the probe view shows", minimum=1, verbs=_REPLAY)
'''


@pytest.fixture(scope="module")
def copy_with_a_new_setting(tmp_path_factory) -> Path:
    """A copy of the repository whose only edits add one setting: a field of EvaluateSection
    and its line in config/config.yaml."""
    root = tmp_path_factory.mktemp("repo")
    for name in ("clerk", "workflow", "config", "paper", "tests/fixtures"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", ".snakemake"))
    source = root / "clerk/eval_sections.py"
    text = source.read_text()
    anchor = "    constrained: bool = setting("
    assert text.count(anchor) == 1
    source.write_text(text.replace(anchor, _FIELD + anchor))
    config = root / "config/config.yaml"
    text = config.read_text()
    assert text.count("  rag_k: 6\n") == 1
    config.write_text(text.replace("  rag_k: 6\n", "  rag_k: 6\n  probe_k: 3\n"))
    return root


def _run(root: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(list(argv), cwd=root, env=env, capture_output=True, text=True, timeout=300)


class TestAddingASetting:
    def test_a_bad_value_fails_the_dry_run_naming_the_field(self, copy_with_a_new_setting, tmp_path):
        root = copy_with_a_new_setting
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump({"evaluate": {"probe_k": 0}}))
        proc = _run(root, "snakemake", "-n", "--cores", "1", "--configfile", str(bad))
        assert proc.returncode != 0
        assert "config.evaluate.probe_k: 0 is less than the minimum of 1" in proc.stdout + proc.stderr
        good = _run(root, "snakemake", "-n", "--cores", "1", "--quiet", "rules")
        assert good.returncode == 0, good.stderr[-2000:]

    def test_it_reaches_the_verbs(self, copy_with_a_new_setting):
        """The evaluate and erasure rules' objects carry it, and their verbs parse it as a flag."""
        script = (
            "import json; from clerk.config import load_and_validate; from clerk.wiring import stage_json\n"
            "from clerk.cli import make_parser, verb_parser, apply_config_json, given_flags\n"
            "c = load_and_validate('config/config.yaml')\n"
            "for stage, verb in (('evaluate', 'evaluate'), ('erasure', 'erasure')):\n"
            "    text = stage_json(c, stage)\n"
            "    argv = [verb, '--config', text, '--timelines', 't', '--model', 'm', '--out', 'o']\n"
            "    p = make_parser(); args = p.parse_args(argv)\n"
            "    apply_config_json(args, verb_parser(p, verb), given_flags(argv))\n"
            "    print(json.loads(text)['probe_k'], args.probe_k)\n"
        )
        proc = _run(copy_with_a_new_setting, sys.executable, "-c", script)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.split() == ["3", "3", "3", "3"]
        helped = _run(copy_with_a_new_setting, sys.executable, "-m", "clerk.cli", "evaluate", "--help")
        assert "--probe-k" in helped.stdout and "turns the probe view shows (default: 3)" in " ".join(helped.stdout.split())

    def test_without_it_nothing_changes_here(self):
        """The unmodified tree has no such setting (the fixture's edit is what adds it)."""
        config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
        assert "probe_k" not in config["evaluate"]
        assert "probe_k" not in stage_config(_validated(), "evaluate")
        assert json.dumps(stage_config(_validated(), "evaluate"))


def _validated() -> dict:
    from clerk.config import load_and_validate

    return load_and_validate(ROOT / "config/config.yaml")


def test_config_json_of_a_stage_is_its_verbs_options():
    """A stage object's every key is an option of its verb (so `--config` accepts it)."""
    config = _validated()
    parser = make_parser()
    for stage in ("evaluate", "train", "build_sft", "locomo"):
        spec = STAGES[stage]
        argv = [spec.verb, "--config", json.dumps(stage_config(config, stage, seed="137"))]
        args = parser.parse_args(argv)
        apply_config_json(args, verb_parser(parser, spec.verb), given_flags(argv))
