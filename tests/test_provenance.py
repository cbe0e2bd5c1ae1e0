"""Tests for clerk.provenance: keys, numbers.json, manifest, trace and verify on a real workflow.

A tiny Snakemake workflow (per-seed metrics -> summary table -> numbers -> paper -> manifest) runs
once per module with the real ``snakemake`` and ``clerk`` commands; tests that damage files work on
a copy of it.
"""

import hashlib
import json
import shutil
import subprocess
import textwrap
from base64 import urlsafe_b64encode
from pathlib import Path

import pytest
from doctest_kit import run_package_doctests

from clerk.cli import main
from clerk.errors import UserError
from clerk.provenance.files import dir_files, legacy_dir_digest, sha256_path
from clerk.provenance.keys import csv_lookup, format_value, json_pointer
from clerk.provenance.manifest import build_manifest, code_version
from clerk.provenance.numbers import build_numbers, expand_spec
from clerk.provenance.records import find_record, snakemake_records, wildcards_for
from clerk.provenance.verify import trace, verify

SNAKEFILE = """
configfile: "config.yaml"
SEEDS = [str(s) for s in config["seeds"]]
RUNS = expand("results/metrics/run_{seed}.json", seed=SEEDS)

rule all:
    input: "results/manifest.json"

rule draw_seed:
    output: txt=temp("work/seed_{seed}.txt")
    shell: "echo {wildcards.seed} > {output.txt}"

rule make_metrics:
    input: cfg="config.yaml", script="scripts/metrics.py", seed="work/seed_{seed}.txt"
    output: json="results/metrics/run_{seed}.json"
    params: scale=config["scale"]
    log: "logs/make_metrics/{seed}.log"
    shell: "python {input.script} {input.seed} {params.scale} {output.json} > {log} 2>&1"

rule summarize:
    input: runs=RUNS, script="scripts/summarize.py"
    output: csv="results/tables/summary.csv", md="results/tables/summary.md"
    shell: "python {input.script} {output.csv} {output.md} {input.runs}"

rule numbers:
    input: spec="paper/numbers.yaml", csv="results/tables/summary.csv", runs=RUNS
    output: json="results/numbers.json"
    shell: "clerk numbers --spec {input.spec} --out {output.json}"

rule render_paper:
    input: tpl="paper/template.md", numbers="results/numbers.json", table="results/tables/summary.md"
    output: md="paper/paper.md"
    shell: "clerk render-paper --template {input.tpl} --numbers {input.numbers} --include table={input.table} --out {output.md}"

rule manifest:
    input: paper="paper/paper.md", numbers="results/numbers.json"
    output: json="results/manifest.json"
    shell: "clerk manifest --root results --extra {input.paper} --snakefile Snakefile --out {output.json}"
"""

METRICS_PY = """
import json, sys
seed, scale, out = int(open(sys.argv[1]).read()), int(sys.argv[2]), sys.argv[3]
systems = {"clerk": {"accuracy": round(0.5 + seed * scale / 100, 4)}, "full": {"accuracy": 0.25}}
json.dump({"seed": seed, "systems": systems}, open(out, "w"), sort_keys=True)
"""

SUMMARIZE_PY = """
import json, sys
import pandas as pd
from clerk.report.stats import aggregate_frame
from clerk.report.tabular import to_markdown, write_csv
rows = []
for path in sys.argv[3:]:
    run = json.load(open(path))
    rows += [{"system": k, "seed": run["seed"], **v} for k, v in run["systems"].items()]
table = aggregate_frame(pd.DataFrame(rows), by=["system"], value_cols=["accuracy"])
write_csv(table, sys.argv[1])
open(sys.argv[2], "w").write(to_markdown(table[["system", "accuracy_mean", "accuracy_sd"]]))
"""

NUMBERS_YAML = """
numbers:
  n_seeds:
    source: results/tables/summary.csv
    key: system=clerk/n_seeds
    format: d
  seed1.clerk.accuracy:
    source: results/metrics/run_1.json
    key: /systems/clerk/accuracy
    format: .3f
foreach:
  - source: results/tables/summary.csv
    select: [system]
    columns: [accuracy_mean, accuracy_sd]
    id: "{system}.{column}"
    format: .3f
    rule: summarize
"""

TEMPLATE_MD = """# A tiny paper

## Results

CLERK reaches {{num:clerk.accuracy_mean}} (sd {{num:clerk.accuracy_sd}}) over {{num:n_seeds}}
seeds; with the first seed alone it reaches {{num:seed1.clerk.accuracy}}.

{{include:table}}
"""


@pytest.fixture(scope="module")
def workflow(tmp_path_factory) -> Path:
    """Run the tiny workflow once with real snakemake; return its working directory."""
    root = tmp_path_factory.mktemp("wf")
    files = {"Snakefile": SNAKEFILE, "config.yaml": "seeds: [1, 2, 3]\nscale: 7\n",
             "scripts/metrics.py": METRICS_PY, "scripts/summarize.py": SUMMARIZE_PY,
             "paper/numbers.yaml": NUMBERS_YAML, "paper/template.md": TEMPLATE_MD}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    done = subprocess.run(["snakemake", "--cores", "1", "--quiet", "all"], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.fixture
def copy(workflow, tmp_path, monkeypatch) -> Path:
    """A private copy of the finished workflow, made the working directory."""
    dest = tmp_path / "wf"
    shutil.copytree(workflow, dest)
    monkeypatch.chdir(dest)
    return dest


def _load(root: Path, name: str) -> dict:
    return json.loads((root / name).read_text())


class TestSha256Path:
    def test_file_matches_hashlib(self, tmp_path):
        """A file's digest is the plain sha256 of its bytes."""
        (tmp_path / "a").write_bytes(b"abc")
        assert sha256_path(tmp_path / "a") == hashlib.sha256(b"abc").hexdigest()

    def test_directory_digest_follows_contents(self, tmp_path):
        """A directory's digest changes when one byte of a file inside it changes."""
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "w.bin").write_bytes(b"\x00\x01")
        before = sha256_path(tmp_path / "d")
        (tmp_path / "d" / "w.bin").write_bytes(b"\x00\x02")
        assert sha256_path(tmp_path / "d") != before

    def test_missing_file_is_user_error(self, tmp_path):
        """A missing path raises a UserError naming it."""
        with pytest.raises(UserError, match="file '.*nope' does not exist"):
            sha256_path(tmp_path / "nope")

    def test_snakemake_marker_is_not_content(self, tmp_path):
        """Snakemake's .snakemake_timestamp in a directory output changes neither digest nor listing."""
        (tmp_path / "d" / "sub").mkdir(parents=True)
        (tmp_path / "d" / "sub" / "w.bin").write_bytes(b"\x00")
        before = sha256_path(tmp_path / "d")
        (tmp_path / "d" / ".snakemake_timestamp").write_bytes(b"")
        assert sha256_path(tmp_path / "d") == before
        assert dir_files(tmp_path / "d") == {"sub/w.bin": hashlib.sha256(b"\x00").hexdigest()}


class TestDirectoryOutputs:
    """Directory outputs (base model, SFT data, adapters): listed file by file and verified so."""

    @staticmethod
    def _adapter(root: Path) -> Path:
        (root / "big/adapter").mkdir(parents=True)
        (root / "big/adapter/adapter_model.safetensors").write_bytes(b"weights")
        (root / "big/adapter/adapter_config.json").write_text("{}")
        return root / "big/adapter"

    def test_manifest_entry_lists_every_file(self, tmp_path):
        """A directory entry has the digest of its files, their total bytes and each file's sha256."""
        import functools

        from clerk.provenance.manifest import _file_entry

        self._adapter(tmp_path)
        entry = _file_entry(tmp_path, "big/adapter", {}, {}, True, functools.lru_cache(dir_files))
        assert entry["bytes"] == 9 and entry["sha256"] == sha256_path(tmp_path / "big/adapter")
        assert entry["files"] == {"adapter_config.json": hashlib.sha256(b"{}").hexdigest(),
                                  "adapter_model.safetensors": hashlib.sha256(b"weights").hexdigest()}

    def test_verify_names_the_changed_file(self, tmp_path):
        """verify checks a present directory per file and names the one that changed."""
        adapter = self._adapter(tmp_path)
        listing = dir_files(adapter)
        manifest = {"files": {"big/adapter": {"sha256": sha256_path(adapter), "files": listing, "inputs": {}}}}
        assert verify(tmp_path, manifest, None, None) == []
        (adapter / "adapter_model.safetensors").write_bytes(b"other")
        (adapter / "extra.txt").write_text("x")
        assert verify(tmp_path, manifest, None, None) == [
            "big/adapter/extra.txt: not listed in the manifest",
            f"big/adapter/adapter_model.safetensors: sha256 {hashlib.sha256(b'other').hexdigest()} != "
            f"{listing['adapter_model.safetensors']} recorded in the manifest"]

    def test_verify_accepts_legacy_digest(self, tmp_path):
        """A manifest written before directories were listed (its digest counted Snakemake's
        marker) still verifies the same files."""
        adapter = self._adapter(tmp_path)
        manifest = {"files": {"big/adapter": {"sha256": legacy_dir_digest(dir_files(adapter)), "inputs": {}}}}
        assert verify(tmp_path, manifest, None, None) == []

    def test_adapter_config_sets_are_sorted(self, tmp_path):
        """clerk train rewrites PEFT's set-valued target_modules sorted, so the file is stable."""
        from types import SimpleNamespace

        from clerk.train.trainer import _sort_set_fields

        (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 8, "target_modules": ["v_proj", "q_proj"]}))
        trained = SimpleNamespace(peft_config={"default": SimpleNamespace(r=8, target_modules={"v_proj", "q_proj"})})
        _sort_set_fields(tmp_path, trained)
        assert (tmp_path / "adapter_config.json").read_text() == \
            '{\n  "r": 8,\n  "target_modules": [\n    "q_proj",\n    "v_proj"\n  ]\n}'


class TestJsonPointer:
    def test_nested_and_escaped(self):
        """Pointers walk dicts and lists and unescape ~1 and ~0."""
        doc = {"a": [{"b/c": 1, "d~e": 2}]}
        assert (json_pointer(doc, "/a/0/b~1c"), json_pointer(doc, "/a/0/d~0e")) == (1, 2)

    def test_missing_member_named(self):
        """A missing member is named together with where it was looked for."""
        with pytest.raises(KeyError) as err:
            json_pointer({"a": {"b": 1}}, "/a/x")
        assert err.value.args[0] == "no member 'x' at '/a'"


class TestCsvLookup:
    ROWS = [{"system": "clerk", "split": "test", "acc": "0.7"},
            {"system": "clerk", "split": "ood", "acc": "0.6"}]

    def test_selects_one_row(self):
        """A two-column selector picks the one matching row."""
        assert csv_lookup(self.ROWS, "system=clerk,split=ood/acc") == "0.6"

    def test_ambiguous_selector(self):
        """A selector matching two rows is rejected with the count."""
        with pytest.raises(KeyError) as err:
            csv_lookup(self.ROWS, "system=clerk/acc")
        assert err.value.args[0] == "2 rows match 'system=clerk' (need exactly 1)"

    def test_unknown_column(self):
        """An unknown column is named with the columns that exist."""
        with pytest.raises(KeyError) as err:
            csv_lookup(self.ROWS, "system=clerk,split=ood/f1")
        assert err.value.args[0] == "no column 'f1' (columns: system, split, acc)"


class TestFormatValue:
    def test_formats(self):
        """Format specs apply; integral floats print with 'd'; NaN prints n/a."""
        assert [format_value(0.7346, ".2f"), format_value(3.0, "d"),
                format_value(float("nan"), ".3f")] == ["0.73", "3", "n/a"]


class TestSnakemakeRecords:
    def test_decodes_chunked_names(self, tmp_path):
        """Records split into @-prefixed folders (long paths) decode to the full path."""
        name = urlsafe_b64encode(b"results/deep/file_1.json").decode()
        rec = tmp_path / ".snakemake" / "metadata" / ("@" + name[:10]) / name[10:]
        rec.parent.mkdir(parents=True)
        rec.write_text('{"rule": "r"}')
        assert snakemake_records(tmp_path) == {"results/deep/file_1.json": {"rule": "r"}}

    def test_directory_output_owns_its_files(self):
        """A file inside a directory() output is attributed to the directory's record."""
        records = {"results/adapter": {"rule": "train"}}
        assert find_record(records, "results/adapter/w.safetensors") == ("results/adapter", {"rule": "train"})

    def test_wildcards_from_pattern(self):
        """Wildcards come from the first output pattern the path matches."""
        pats = ["results/x/{system}.csv", "results/metrics/{system}_{seed}.json"]
        assert wildcards_for("results/metrics/clerk_137.json", pats) == {"seed": "137", "system": "clerk"}


class TestBuildNumbers:
    def test_workflow_numbers(self, workflow):
        """numbers.json holds value, text, key, the source's sha256 and the recording rule."""
        nums = _load(workflow, "results/numbers.json")["numbers"]
        assert sorted(nums) == ["clerk.accuracy_mean", "clerk.accuracy_sd", "full.accuracy_mean",
                                "full.accuracy_sd", "n_seeds", "seed1.clerk.accuracy"]
        mean = nums["clerk.accuracy_mean"]
        assert (mean["value"], mean["text"], mean["rule"]) == (0.64, "0.640", "summarize")
        assert mean["sha256"] == sha256_path(workflow / "results/tables/summary.csv")
        assert nums["seed1.clerk.accuracy"]["rule"] == "make_metrics"  # from Snakemake's record
        assert (nums["n_seeds"]["value"], nums["n_seeds"]["text"]) == (3, "3")

    def test_unknown_file_named(self, workflow):
        """A spec entry with a missing source names the id and the file."""
        spec = {"numbers": {"x": {"source": "results/nope.json", "key": "/a", "format": ".2f"}}}
        with pytest.raises(UserError) as err:
            build_numbers(spec, workflow)
        assert str(err.value) == "number 'x': source file '" + str(workflow / "results/nope.json") + "' does not exist"

    def test_unknown_key_named(self, workflow):
        """A key that does not resolve names the id, the key and the file."""
        spec = {"numbers": {"x": {"source": "results/metrics/run_1.json", "key": "/systems/rag/accuracy",
                                  "format": ".2f"}}}
        with pytest.raises(UserError, match=r"^number 'x': key '/systems/rag/accuracy' in '.*run_1.json': "
                                            r"no member 'rag' at '/systems'$"):
            build_numbers(spec, workflow)

    def test_rule_disagreeing_with_record(self, workflow):
        """A spec rule that contradicts Snakemake's record is an error."""
        spec = {"numbers": {"x": {"source": "results/metrics/run_1.json", "key": "/seed",
                                  "format": "d", "rule": "summarize"}}}
        with pytest.raises(UserError, match="spec says rule 'summarize' but Snakemake's record"):
            build_numbers(spec, workflow)

    def test_foreach_where_and_duplicates(self, workflow):
        """foreach filters rows with where:, and an id generated twice is rejected."""
        item = {"source": "results/tables/summary.csv", "select": ["system"], "columns": ["accuracy_mean"],
                "id": "acc.{system}", "format": ".2f", "where": {"system": "full"}}
        assert list(expand_spec({"foreach": [item]}, workflow)) == ["acc.full"]
        with pytest.raises(UserError, match="foreach #0: duplicate id 'acc'"):
            expand_spec({"foreach": [{**item, "id": "acc", "where": {}}]}, workflow)

    def test_foreach_unknown_column(self, workflow):
        """A foreach naming a column the CSV lacks is an error naming column and file."""
        item = {"source": "results/tables/summary.csv", "select": ["system"], "columns": ["f1_mean"],
                "id": "f1.{system}", "format": ".2f"}
        with pytest.raises(UserError) as err:
            expand_spec({"foreach": [item]}, workflow)
        assert str(err.value) == ("numbers spec: foreach #0: no column(s) ['f1_mean'] in "
                                  "'results/tables/summary.csv'")


class TestBuildManifest:
    def test_lists_results_with_rules_and_wildcards(self, workflow):
        """Every results file but the manifest is listed with rule, wildcards and hashed inputs."""
        man = _load(workflow, "results/manifest.json")
        files = man["files"]
        assert sorted(files) == ["paper/paper.md", "results/metrics/run_1.json", "results/metrics/run_2.json",
                                 "results/metrics/run_3.json", "results/numbers.json",
                                 "results/tables/summary.csv", "results/tables/summary.md",
                                 "work/seed_1.txt", "work/seed_2.txt", "work/seed_3.txt"]
        run2 = files["results/metrics/run_2.json"]
        assert (run2["rule"], run2["wildcards"], run2["params"]) == ("make_metrics", {"seed": "2"}, ["7"])
        assert run2["inputs"]["config.yaml"] == sha256_path(workflow / "config.yaml")
        assert run2["sha256"] == sha256_path(workflow / "results/metrics/run_2.json")
        assert files["paper/paper.md"]["rule"] == "render_paper"
        temp = files["work/seed_2.txt"]  # a temp() input, deleted after use: record kept, no hash
        assert (temp["rule"], temp["wildcards"], temp["sha256"]) == ("draw_seed", {"seed": "2"}, None)
        assert man["packages"]["snakemake"] and man["code"]["clerk"]

    def test_stale_input_detected(self, copy):
        """An input edited after its rule ran makes the manifest refuse, naming both files."""
        (copy / "config.yaml").write_text("seeds: [1, 2, 3]\nscale: 8\n")
        with pytest.raises(UserError, match=r"input 'config.yaml' changed after rule make_metrics wrote "
                                            r"'results/metrics/run_\d.json' \(stale output\)"):
            build_manifest(copy, ["results"], [], ["results/manifest.json"], None)


class TestTrace:
    def test_number_reaches_first_rule_inputs(self, workflow):
        """Tracing a number walks summary -> per-seed metrics -> config with every sha256."""
        lines = trace("clerk.accuracy_mean", _load(workflow, "results/manifest.json"),
                      _load(workflow, "results/numbers.json"))
        text = "\n".join(lines)
        assert lines[0].startswith("number clerk.accuracy_mean = 0.640")
        assert "results/tables/summary.csv  sha256 " + sha256_path(workflow / "results/tables/summary.csv") in text
        assert "results/metrics/run_3.json  sha256" in text and "rule make_metrics  wildcards {seed=3}" in text
        cfg = f"<- config.yaml  sha256 {sha256_path(workflow / 'config.yaml')}  (not produced by a rule)"
        assert cfg in text
        assert "<- work/seed_3.txt  sha256 n/a (deleted after use: temp())  rule draw_seed" in text

    def test_unknown_target(self, workflow):
        """A target that is neither an id nor a listed file is an error naming it."""
        with pytest.raises(UserError, match="^'nope' is neither a number id in numbers.json nor a file"):
            trace("nope", _load(workflow, "results/manifest.json"), _load(workflow, "results/numbers.json"))

    def test_cli_prints_chain(self, copy, capsys):
        """`clerk trace PATH` prints the chain for a file."""
        main(["trace", "results/metrics/run_1.json"])
        assert "rule make_metrics  wildcards {seed=1}  params [7]" in capsys.readouterr().out


class TestVerify:
    def test_fresh_workflow_passes(self, copy, capsys):
        """`clerk verify` passes on an untouched workflow."""
        main(["verify"])
        assert capsys.readouterr().out.startswith("verified 10 files and 6 numbers against paper/paper.md")

    def test_flipped_byte_names_file(self, copy, capsys):
        """Flipping one byte of a results file fails verify with a message naming that file."""
        path = copy / "results/metrics/run_2.json"
        data = bytearray(path.read_bytes())
        data[-2] ^= 1
        path.write_bytes(bytes(data))
        with pytest.raises(SystemExit) as err:
            main(["verify"])
        assert err.value.code.startswith("clerk verify: FAILED")
        assert "clerk verify: results/metrics/run_2.json: sha256 " in capsys.readouterr().err

    def test_changed_number_names_id(self, copy):
        """A numbers.json value that no longer matches its source is reported by id."""
        numbers = _load(copy, "results/numbers.json")
        numbers["numbers"]["n_seeds"].update(value=4, text="4")
        problems = verify(copy, None, numbers, copy / "paper/paper.md")
        assert problems[0] == ("number 'n_seeds': results/tables/summary.csv key 'system=clerk/n_seeds' "
                               "now gives 3 (3); numbers.json has 4 (4)")
        assert any("paper.md: number 'n_seeds' is not printed as 4" in p for p in problems)

    def test_edited_paper_number(self, copy):
        """Retyping a number in the paper by hand is caught."""
        paper = copy / "paper/paper.md"
        paper.write_text(paper.read_text().replace("0.640[^num-clerk.accuracy_mean]",
                                                   "0.650[^num-clerk.accuracy_mean]"))
        problems = verify(copy, None, _load(copy, "results/numbers.json"), paper)
        assert problems == [f"{paper}: number 'clerk.accuracy_mean' is not printed as 0.640"]


class TestDoctests:
    def test_examples_in_docstrings(self):
        """The >>> examples in every clerk.provenance module run and give the documented output."""
        result = run_package_doctests("clerk.provenance")
        assert result.attempted > 0 and result.failed == 0


class TestVerifyCleanClone:
    """verify on a checkout that lacks the large git-ignored outputs the manifest records."""

    @staticmethod
    def _repo(tmp_path):
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        (tmp_path / ".gitignore").write_text("big/\nresults/*\n")
        (tmp_path / "results").mkdir()
        (tmp_path / "results/table.csv").write_text("a,b\n1,2\n")
        subprocess.run(["git", "add", "-f", ".gitignore", "results/table.csv"], cwd=tmp_path, check=True)
        manifest = {"files": {
            "results/table.csv": {"sha256": sha256_path(tmp_path / "results/table.csv"), "inputs": {"big/adapter": "0" * 64}},
            "big/adapter": {"sha256": "0" * 64, "inputs": {}},
        }}
        return manifest

    def test_ignored_absent_file_is_listed_not_failed(self, tmp_path):
        """A missing git-ignored output is reported as absent; the present files still verify."""
        manifest = self._repo(tmp_path)
        absent: list[str] = []
        assert verify(tmp_path, manifest, None, None, absent=absent) == []
        assert absent == ["big/adapter"]

    def test_strict_fails_on_absent_output(self, tmp_path):
        """--strict turns a missing ignored output into a problem naming it."""
        manifest = self._repo(tmp_path)
        assert verify(tmp_path, manifest, None, None, strict=True) == ["big/adapter: missing (the manifest)"]

    def test_missing_tracked_file_still_fails(self, tmp_path):
        """A committed results file that is gone is a problem even though results/* is ignored."""
        manifest = self._repo(tmp_path)
        (tmp_path / "results/table.csv").unlink()
        assert verify(tmp_path, manifest, None, None) == ["results/table.csv: missing (the manifest)"]

    def test_present_but_changed_ignored_file_fails(self, tmp_path):
        """An ignored output that is present must still match its sha256."""
        manifest = self._repo(tmp_path)
        (tmp_path / "big").mkdir()
        (tmp_path / "big/adapter").write_text("tampered")
        problems = verify(tmp_path, manifest, None, None)
        assert len(problems) == 1 and problems[0].startswith("big/adapter: sha256 ")


class TestCodeVersionDirty:
    """git_dirty says whether the code and config differ from the commit, not the run's outputs."""

    FILES = {"clerk/core.py": "X = 1\n", "config/config.yaml": "seed: 1\n", "workflow/Snakefile": "rule all:\n",
             "paper/template.md": "{{ n }}\n", "paper/paper.md": "1\n", "results/table.csv": "a\n1\n",
             "results/environment.md": "env\n", "benchmarks/run.md": "1 min\n", "README.md": "hi\n",
             "pyproject.toml": "[project]\n"}

    @classmethod
    def _repo(cls, tmp_path):
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        for rel, text in cls.FILES.items():
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text(text)
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
        return git

    def test_clean_checkout(self, tmp_path):
        self._repo(tmp_path)
        code = code_version(tmp_path)
        assert code["git_commit"] and code["git_dirty"] is False

    def test_outputs_docs_and_new_files_leave_it_clean(self, tmp_path):
        """A run rewrites results/ and paper/paper.md; benchmarks, docs and untracked files are not code."""
        self._repo(tmp_path)
        for rel in ("results/table.csv", "results/environment.md", "paper/paper.md", "benchmarks/run.md", "README.md"):
            (tmp_path / rel).write_text("changed\n")
        (tmp_path / "results/new.csv").write_text("new\n")
        assert code_version(tmp_path)["git_dirty"] is False

    @pytest.mark.parametrize("rel", ["clerk/core.py", "config/config.yaml", "workflow/Snakefile",
                                     "paper/template.md", "pyproject.toml"])
    def test_code_or_config_change_makes_it_dirty(self, tmp_path, rel):
        self._repo(tmp_path)
        (tmp_path / "results/table.csv").write_text("changed\n")
        (tmp_path / rel).write_text("changed\n")
        assert code_version(tmp_path)["git_dirty"] is True

    def test_staged_or_deleted_code_is_dirty(self, tmp_path):
        git = self._repo(tmp_path)
        (tmp_path / "clerk/core.py").write_text("X = 2\n")
        subprocess.run([*git, "add", "clerk/core.py"], check=True)
        assert code_version(tmp_path)["git_dirty"] is True
        subprocess.run([*git, "commit", "-q", "-m", "two"], check=True)
        assert code_version(tmp_path)["git_dirty"] is False
        (tmp_path / "config/config.yaml").unlink()
        assert code_version(tmp_path)["git_dirty"] is True

    def test_outside_a_checkout(self, tmp_path, monkeypatch):
        monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # never find a repo above
        assert code_version(tmp_path)["git_commit"] is None and code_version(tmp_path)["git_dirty"] is None
