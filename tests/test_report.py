"""Tests for clerk.report: seed aggregation, byte-stable CSV/Markdown/figures, paper rendering.

The paper's tables and figures themselves are tested in tests/test_tables.py.
"""

import hashlib
import importlib
import math
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import clerk.report
from clerk.cli import main
from clerk.errors import UserError
from clerk.report.figures import save_figure
from clerk.report.paper import environment_markdown, render_paper, template_literal_digits
from clerk.report.stats import aggregate, aggregate_frame
from clerk.report.tabular import to_markdown, write_csv

NUMBERS = {"numbers": {
    "acc.clerk": {"value": 0.7346, "format": ".3f", "text": "0.735", "source": "results/t.csv",
                  "key": "system=clerk/acc", "sha256": "ab" * 32, "rule": "aggregate"},
    "n_seeds": {"value": 3, "format": "d", "text": "3", "source": "results/t.csv",
                "key": "system=clerk/n", "sha256": "ab" * 32, "rule": "aggregate"}}}

# One figure script, run in this process and in a fresh one: the two renders must be identical.
FIGURE_SCRIPT = """
import sys
import matplotlib.pyplot as plt
import seaborn as sns
from clerk.report.figures import save_figure, set_plot_style
set_plot_style()
fig, ax = plt.subplots(figsize=(3, 2))
sns.lineplot(x=[1, 2, 3, 4], y=[0.2, 0.5, 0.4, 0.8], marker="o", ax=ax, label="clerk")
ax.set(xlabel="capacity", ylabel="recall hit rate", title="Eviction")
save_figure(fig, sys.argv[1])
"""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class TestAggregate:
    def test_three_seeds_by_hand(self):
        """n=3: mean, sd (ddof=1) and the t-interval match a hand computation."""
        got = aggregate([0.5, 0.6, 0.8])
        mean = (0.5 + 0.6 + 0.8) / 3
        sd = math.sqrt(((0.5 - mean) ** 2 + (0.6 - mean) ** 2 + (0.8 - mean) ** 2) / 2)
        p = 0.975  # Student t with 2 dof has the closed-form quantile (2p-1)/sqrt(2p(1-p))
        half = (2 * p - 1) / math.sqrt(2 * p * (1 - p)) * sd / math.sqrt(3)
        assert got["n"] == 3
        assert got["mean"] == pytest.approx(0.633333333, abs=1e-9)
        assert got["sd"] == pytest.approx(0.152752523, abs=1e-9) == sd
        assert (got["ci_low"], got["ci_high"]) == pytest.approx((mean - half, mean + half), abs=1e-12)
        assert (round(got["ci_low"], 6), round(got["ci_high"], 6)) == (0.253875, 1.012792)

    def test_one_seed_has_no_spread(self):
        """n=1 gives the value as mean and NaN sd and interval."""
        got = aggregate([0.4])
        assert (got["n"], got["mean"]) == (1, 0.4)
        assert all(math.isnan(got[k]) for k in ("sd", "ci_low", "ci_high"))

    def test_nan_values_left_out(self):
        """NaN seeds are not counted; all-NaN gives n=0 and a NaN mean."""
        assert aggregate([1.0, float("nan"), 3.0])["n"] == 2
        empty = aggregate([float("nan")])
        assert empty["n"] == 0 and math.isnan(empty["mean"])


class TestAggregateFrame:
    FRAME = pd.DataFrame({"system": ["b", "a", "a", "b", "a"], "seed": [2, 2, 1, 1, 3],
                          "acc": [0.5, 0.2, 0.4, 0.7, 0.6]})

    def test_groups_and_seed_list(self):
        """One row per group, sorted, with the seeds and the per-column statistics."""
        out = aggregate_frame(self.FRAME, by=["system"], value_cols=["acc"])
        assert out["system"].tolist() == ["a", "b"]
        assert out["seeds"].tolist() == ["1;2;3", "1;2"]
        assert out["n_seeds"].tolist() == [3, 2]
        assert out["acc_mean"].tolist() == pytest.approx([0.4, 0.6])
        assert out["acc_sd"].tolist() == pytest.approx([0.2, math.sqrt(0.02)])

    def test_duplicate_seed_rejected(self):
        """The same (group, seed) twice is an error naming the row."""
        dup = pd.concat([self.FRAME, self.FRAME.iloc[[0]]])
        with pytest.raises(UserError) as err:
            aggregate_frame(dup, by=["system"], value_cols=["acc"])
        assert str(err.value) == ("aggregate: duplicate ['system', 'seed'] row: "
                                  "{'system': 'b', 'seed': 2, 'acc': 0.5}")

    def test_missing_column(self):
        """A value column that is absent is named."""
        with pytest.raises(UserError, match=r"^aggregate: columns \['f1'\] missing"):
            aggregate_frame(self.FRAME, by=["system"], value_cols=["f1"])


class TestWriteCsv:
    def test_exact_bytes(self, tmp_path):
        """Rows are sorted, floats fixed-format, NaN empty and lines end in \\n."""
        df = pd.DataFrame({"system": ["b", "a"], "acc": [0.5, 1 / 3], "sd": [float("nan"), 0.1]})
        write_csv(df, tmp_path / "t.csv")
        assert (tmp_path / "t.csv").read_bytes() == b"system,acc,sd\na,0.333333,0.100000\nb,0.500000,\n"

    def test_row_order_does_not_matter(self, tmp_path):
        """Shuffled input rows give the same file."""
        df = pd.DataFrame({"k": [3, 1, 2], "v": [0.3, 0.1, 0.2]})
        write_csv(df, tmp_path / "a.csv")
        write_csv(df.sample(frac=1, random_state=0), tmp_path / "b.csv")
        assert _sha(tmp_path / "a.csv") == _sha(tmp_path / "b.csv")


class TestToMarkdown:
    def test_table(self):
        """Text left, numbers right, NaN as n/a, pipes escaped, integers plain."""
        df = pd.DataFrame({"system": ["a|b", "c"], "n": [3, 2], "acc": [0.12345, float("nan")]})
        assert to_markdown(df) == ("| system | n | acc |\n| :--- | ---: | ---: |\n"
                                   "| a\\|b | 3 | 0.123 |\n| c | 2 | n/a |\n")


class TestSaveFigure:
    def test_rerender_is_byte_identical(self, tmp_path, monkeypatch):
        """PDF and PNG from this process and a fresh one (other SOURCE_DATE_EPOCH) are identical."""
        monkeypatch.setattr(sys, "argv", ["figure", str(tmp_path / "one" / "fig")])
        exec(compile(FIGURE_SCRIPT + "plt.close(fig)\n", "figure", "exec"), {})
        env = {**os.environ, "SOURCE_DATE_EPOCH": "86400"}
        subprocess.run([sys.executable, "-c", FIGURE_SCRIPT, str(tmp_path / "two" / "fig")],
                       env=env, check=True, timeout=120)
        for ext in ("pdf", "png"):
            assert _sha(tmp_path / "one" / f"fig.{ext}") == _sha(tmp_path / "two" / f"fig.{ext}")
        pdf = (tmp_path / "one" / "fig.pdf").read_bytes()
        assert b"CreationDate" not in pdf and b"Matplotlib" not in pdf
        assert b"Software" not in (tmp_path / "one" / "fig.png").read_bytes()

    def test_returns_both_paths(self, tmp_path):
        """save_figure returns the PDF and PNG paths next to the given stem."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, _ = plt.subplots()
        pdf, png = save_figure(fig, tmp_path / "sub" / "f")
        plt.close(fig)
        assert (pdf.name, png.name, pdf.is_file(), png.is_file()) == ("f.pdf", "f.png", True, True)


class TestRenderPaper:
    def test_numbers_and_footnotes(self):
        """Numbers become text plus a footnote that names rule, file, key and sha256."""
        out = render_paper("Acc {{num:acc.clerk}} over {{ num:n_seeds }} seeds.\n", NUMBERS, {})
        body, notes = out.split("<!--")
        assert body == "Acc 0.735[^num-acc.clerk] over 3[^num-n_seeds] seeds.\n\n"
        assert ("[^num-acc.clerk]: `acc.clerk` = 0.735: rule `aggregate`, file `results/t.csv`, "
                "key `system=clerk/acc`, sha256 `" + "ab" * 32 + "`.") in notes.splitlines()

    def test_include(self):
        """Includes are inserted verbatim without a trailing newline of their own."""
        assert render_paper("A\n{{include:t}}\nB\n", NUMBERS, {"t": "| x |\n"}) == "A\n| x |\nB\n"

    def test_unknown_id_named(self):
        """An unknown number id fails, naming it, its line and close ids."""
        with pytest.raises(UserError) as err:
            render_paper("x\nAcc {{num:acc.clerc}}\n", NUMBERS, {})
        assert str(err.value) == "template line 2: unknown number id 'acc.clerc' (did you mean acc.clerk?)"

    def test_unknown_include_and_kind(self):
        """Unknown include names and placeholder kinds fail too."""
        with pytest.raises(UserError, match="^template line 1: unknown include 'fig'$"):
            render_paper("{{include:fig}}", NUMBERS, {})
        with pytest.raises(UserError, match=r"^template line 1: unknown placeholder '\{\{numb:x\}\}'"):
            render_paper("{{numb:x}}", NUMBERS, {})

    def test_verdict_without_its_bounds_is_named(self):
        """A verdict whose bounds are not in the numbers fails, naming its line and the missing ids."""
        with pytest.raises(UserError, match=r"^template line 2: the verdict of 'pd.test.full' needs number ids "
                                            r"pd.test.full.boot_low, pd.test.full.boot_high, pd.test.full.margin"):
            render_paper("x\n{{verdict:pd.test.full}}\n", NUMBERS, {})
        with pytest.raises(UserError, match=r"^template line 1: no paired comparison under 'pd.test'"):
            render_paper("{{verdicts:pd.test}}", NUMBERS, {})

    def test_cli_renders_and_fences_mermaid(self, tmp_path, capsys):
        """`clerk render-paper` writes the paper and wraps .mmd includes in a mermaid fence."""
        import json

        (tmp_path / "n.json").write_text(json.dumps(NUMBERS))
        (tmp_path / "t.md").write_text("## Results\n{{num:acc.clerk}}\n{{include:dag}}\n")
        (tmp_path / "g.mmd").write_text("flowchart TB\n\tid0[all]\n")
        args = ["render-paper", "--template", str(tmp_path / "t.md"), "--numbers", str(tmp_path / "n.json"),
                "--include", f"dag={tmp_path / 'g.mmd'}", "--no-digits-in", "Results", "--out",
                str(tmp_path / "p.md")]
        main(args)
        assert (tmp_path / "p.md").read_text().startswith(
            "## Results\n0.735[^num-acc.clerk]\n```mermaid\nflowchart TB\n\tid0[all]\n```\n")
        (tmp_path / "t.md").write_text("## Results\nWe ran 5 seeds.\n")
        with pytest.raises(SystemExit) as err:
            main(args)
        assert err.value.code == 2
        assert capsys.readouterr().err == ("clerk render-paper: error: --no-digits-in: 1 number(s) typed "
                                          "by hand, first '5' on template line 2: We ran 5 seeds.\n")


class TestTemplateLiteralDigits:
    TEMPLATE = "\n".join([
        "# 1 Introduction", "We use 3 seeds.",                       # outside: ignored
        "## 5. Results", "CLERK gets {{num:acc}} vs 0.71 for RAG.",  # 0.71 flagged
        "1. F1 of Qwen2.5 and SmolLM2-135M in table1 [^num-x]",     # names and markers skipped
        "### Ablation", "Drops by 12% <!-- 99 -->.",                 # subsection: 12 flagged
        "## Related work", "Mem0 has 4 tiers.",                      # next section: ignored
    ])

    def test_finds_only_hand_typed_numbers(self):
        """Only standalone numbers in the results section and its subsections are reported."""
        found = template_literal_digits(self.TEMPLATE, ["Results"])
        assert [(f.line, f.token) for f in found] == [(4, "0.71"), (7, "12")]

    def test_clean_template(self):
        """A template whose results cite every number by id yields nothing."""
        assert template_literal_digits("## Results\nAcc {{num:a}} (F1 {{num:b}}).\n", ["results"]) == []


class TestEnvironmentMarkdown:
    def test_lists_packages_and_code(self):
        """The environment table names the clerk version and installed package versions."""
        from importlib.metadata import version

        lines = environment_markdown().splitlines()
        assert lines[:2] == ["| component | version |", "| :--- | :--- |"]
        assert f"| snakemake | {version('snakemake')} |" in lines
        assert lines[2].startswith("| clerk | 0.1.0 (git ")


class TestDoctests:
    @pytest.mark.parametrize("name", sorted(m.name for m in pkgutil.iter_modules(clerk.report.__path__)))
    def test_examples_in_docstrings(self, name):
        """The >>> examples in every clerk.report module run and give the documented output."""
        import doctest

        assert doctest.testmod(importlib.import_module(f"clerk.report.{name}")).failed == 0
