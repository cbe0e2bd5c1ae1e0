"""Report: seed aggregation, deterministic tables and figures, and paper rendering (SPEC §6, §8).

Per-seed metrics are aggregated over seeds (n, mean, sd with ddof=1, 95 % t-interval), written as
byte-stable CSV and Markdown, plotted with seaborn into PDF + PNG files whose bytes do not depend
on when they were rendered, and the paper template is filled from ``results/numbers.json``.

Template syntax: ``{{num:ID}}`` prints number ID of numbers.json followed by a footnote reference
(``0.734[^num-ID]``) whose definition, appended to the paper, gives the rule, file, key and sha256;
``{{include:NAME}}`` inserts the file given by ``--include NAME=FILE`` verbatim (``.mmd`` files,
e.g. ``snakemake --rulegraph mermaid-js``, are wrapped in a mermaid code fence).

    clerk environment --out results/environment.md
    clerk render-paper --template paper/template.md --numbers results/numbers.json \\
        --include table1=results/tables/table1.md --out paper/paper.md
"""

from __future__ import annotations

import difflib
import math
import os
import re
from pathlib import Path
from typing import Any, Callable, NamedTuple

from clerk.errors import UserError
from clerk.provenance.files import load_json
from clerk.provenance.numbers import footnote, reference

#: Two-sided confidence level of every interval in the paper.
CI_LEVEL = 0.95
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]+)\s*:\s*([^{}]*?)\s*\}\}")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# Text that is not prose: placeholders, footnote labels, link targets, HTML comments, list markers.
_NOT_PROSE = re.compile(r"\{\{.*?\}\}|\[\^[^\]]*\]|\]\([^)]*\)|<!--.*?-->|^\s*\d+[.)]\s")
# A number standing on its own; digits glued to letters (F1, Qwen2.5, 135M, table1) are names.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w]|[.,]\d)")


# ---- aggregation -----------------------------------------------------------------------------

def aggregate(values: list[float]) -> dict[str, float]:
    """n, mean, sd (ddof=1) and the 95 % Student-t interval of the mean over seeds.

    NaN values are left out (n counts the rest). With n = 1, sd and the interval are NaN (no
    spread can be estimated from one seed); with n = 0, the mean is NaN too.

    >>> aggregate([1.0, 2.0, 3.0])["sd"], aggregate([0.5])["ci_low"]
    (1.0, nan)
    """
    from scipy import stats

    xs = [float(v) for v in values if not math.isnan(float(v))]
    n, nan = len(xs), math.nan
    mean = sum(xs) / n if n else nan
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else nan
    half = float(stats.t.ppf(0.5 + CI_LEVEL / 2, n - 1)) * sd / math.sqrt(n) if n > 1 else nan
    return {"n": n, "mean": mean, "sd": sd, "ci_low": mean - half, "ci_high": mean + half}


def aggregate_frame(df, by: list[str], value_cols: list[str], seed_col: str = "seed"):
    """Aggregate per-seed rows into one row per ``by`` group.

    Returns:
        A DataFrame with the ``by`` columns, ``n_seeds``, ``seeds`` (sorted, ``;``-joined) and per
        value column ``<col>_n``, ``_mean``, ``_sd``, ``_ci_low``, ``_ci_high``; sorted by ``by``.

    Raises:
        UserError: a missing column, or a (group, seed) pair that occurs twice.
    """
    import pandas as pd

    missing = [c for c in [*by, *value_cols, seed_col] if c not in df.columns]
    if missing:
        raise UserError(f"aggregate: columns {missing} missing; have {list(df.columns)}")
    dup = df.duplicated([*by, seed_col])
    if dup.any():
        raise UserError(f"aggregate: duplicate {[*by, seed_col]} row: {df[dup].iloc[0].to_dict()}")
    rows = []
    for key, group in df.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        seeds = sorted(group[seed_col].tolist(), key=lambda s: (str(type(s)), s))
        row: dict[str, Any] = {**dict(zip(by, key)), "n_seeds": len(seeds),
                               "seeds": ";".join(str(s) for s in seeds)}
        for col in value_cols:
            row.update({f"{col}_{k}": v for k, v in aggregate(group[col].tolist()).items()})
        rows.append(row)
    return pd.DataFrame(rows)


# ---- tables ----------------------------------------------------------------------------------

def write_csv(df, path: str | Path, float_format: str = "%.6f", sort_by: list[str] | None = None) -> None:
    """Write a table byte-deterministically: rows sorted, fixed float format, ``\\n`` endings.

    Args:
        sort_by: columns to sort rows by (default: all columns, left to right).
    """
    table = df.sort_values(sort_by or list(df.columns), kind="mergesort").reset_index(drop=True)
    text = table.to_csv(index=False, float_format=float_format, lineterminator="\n", na_rep="")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(text.encode("utf-8"))


def _cell(value: Any, fmt: Callable[[float], str]) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else fmt(value)
    return str(value).replace("|", "\\|")


def to_markdown(df, float_format: str | Callable[[float], str] = ".3f") -> str:
    """A GitHub-flavoured Markdown table; numeric columns right-aligned, NaN as ``n/a``.

    >>> import pandas as pd
    >>> print(to_markdown(pd.DataFrame({"system": ["clerk"], "acc": [0.73456]})), end="")
    | system | acc |
    | :--- | ---: |
    | clerk | 0.735 |
    """
    from pandas.api.types import is_numeric_dtype

    fmt = float_format if callable(float_format) else (lambda v: format(v, float_format))
    align = ["---:" if is_numeric_dtype(df[c]) else ":---" for c in df.columns]
    lines = ["| " + " | ".join(str(c) for c in df.columns) + " |", "| " + " | ".join(align) + " |"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, fmt) for v in row) + " |")
    return "\n".join(lines) + "\n"


# ---- figures ---------------------------------------------------------------------------------

#: rcParams that make renders reproducible: bundled font, fixed SVG ids, embedded TrueType.
PLOT_RC = {"svg.hashsalt": "clerk", "pdf.fonttype": 42, "ps.fonttype": 42,
           "font.family": "DejaVu Sans", "savefig.dpi": 200, "figure.dpi": 100}


def set_plot_style() -> None:
    """Select the Agg backend and the paper's seaborn theme (call before making figures)."""
    import matplotlib

    matplotlib.use("Agg")
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", rc=PLOT_RC)


def save_figure(fig, path_without_ext: str | Path, dpi: int = 200) -> tuple[Path, Path]:
    """Save ``fig`` as PDF and PNG with no time or version stamps, so re-rendering is byte-stable.

    The PDF drops CreationDate/ModDate (which would otherwise follow the clock or
    ``SOURCE_DATE_EPOCH``) and names a fixed Creator/Producer; the PNG drops the Software chunk.

    Returns:
        The PDF and PNG paths.
    """
    base = Path(path_without_ext)
    base.parent.mkdir(parents=True, exist_ok=True)
    pdf, png = base.with_name(base.name + ".pdf"), base.with_name(base.name + ".png")
    fig.savefig(pdf, format="pdf", dpi=dpi, metadata={
        "CreationDate": None, "ModDate": None, "Creator": "clerk", "Producer": "clerk"})
    fig.savefig(png, format="png", dpi=dpi, metadata={"Software": None})
    return pdf, png


# ---- paper -----------------------------------------------------------------------------------

def render_paper(template: str, numbers: dict, includes: dict[str, str]) -> str:
    """Fill ``{{num:ID}}`` and ``{{include:NAME}}`` and append one footnote per number used.

    Args:
        numbers: the content of numbers.json (``{"numbers": {id: entry}}``).
        includes: name -> text to insert.

    Raises:
        UserError: an unknown number id, include name or placeholder kind, naming it and its line.
    """
    nums, used = numbers.get("numbers", {}), {}

    def fill(match: re.Match) -> str:
        kind, name = match.group(1), match.group(2)
        line = template.count("\n", 0, match.start()) + 1
        known = {"num": nums, "include": includes}.get(kind)
        if known is None:
            raise UserError(f"template line {line}: unknown placeholder '{{{{{kind}:{name}}}}}'; "
                            "use {{num:ID}} or {{include:NAME}}")
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            what = "number id" if kind == "num" else "include"
            raise UserError(f"template line {line}: unknown {what} '{name}'{hint}")
        if kind == "include":
            return includes[name].rstrip("\n")
        used[name] = True
        return reference(name, nums[name]["text"])

    body = _PLACEHOLDER.sub(fill, template).rstrip("\n") + "\n"
    if used:
        body += ("\n<!-- Number provenance: generated by `clerk render-paper`; "
                 "check with `clerk verify`. -->\n\n")
        body += "\n".join(footnote(i, nums[i]) for i in used) + "\n"
    return body


class LiteralNumber(NamedTuple):
    """A number typed into the template by hand: its line (1-based), text and the line itself."""

    line: int
    token: str
    context: str


def template_literal_digits(template_text: str, sections: list[str]) -> list[LiteralNumber]:
    """Numbers typed by hand in the named sections (and their subsections) of a template.

    Sections are matched by heading text, case-insensitively, ignoring a leading numbering
    (``## 5. Results`` matches ``Results``). Heading lines, placeholders, footnote labels, link
    targets, HTML comments and list markers are skipped; digits glued to letters (F1, Qwen2.5,
    table1) are names, not numbers. Code is scanned like prose.

    >>> t = "# Setup\\n8 seeds\\n## 4. Results\\nAcc {{num:a}} vs 0.71 on F1, 3 runs.\\n"
    >>> [n.token for n in template_literal_digits(t, ["results"])]
    ['0.71', '3']
    """
    wanted = {s.strip().lower() for s in sections}
    found, inside = [], None  # inside = heading level of the section being scanned
    for number, line in enumerate(template_text.splitlines(), start=1):
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            title = re.sub(r"^[\d.]+\s*", "", heading.group(2)).strip().lower()
            if inside is not None and level <= inside:
                inside = None
            if inside is None and title in wanted:
                inside = level
            continue
        if inside is not None:
            prose = _NOT_PROSE.sub(" ", line)
            found += [LiteralNumber(number, m.group(0), line) for m in _NUMBER.finditer(prose)]
    return found


def environment_markdown() -> str:
    """A Markdown table of the run environment: code version, Python, packages, platform, device.

    It describes the machine that runs it; a rule that runs on the training host states that host.
    """
    import platform

    from clerk.provenance.manifest import code_version, package_versions

    try:
        import torch

        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except ImportError:
        device = "cpu (torch not installed)"
    code = code_version()
    rows = [("clerk", f"{code['clerk']} (git {code['git_commit'] or 'n/a'}"
             f"{', uncommitted changes' if code['git_dirty'] else ''})"),
            *[(k, v or "not installed") for k, v in package_versions().items()],
            ("platform", platform.platform()), ("device", device), ("CPU cores", str(os.cpu_count()))]
    return "| component | version |\n| :--- | :--- |\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)


def _parse_includes(items: list[str]) -> dict[str, str]:
    includes = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name:
            raise UserError(f"--include: expected NAME=FILE, got '{item}'")
        if not Path(path).is_file():
            raise UserError(f"--include {name}: file '{path}' does not exist")
        text = Path(path).read_text(encoding="utf-8")
        includes[name] = f"```mermaid\n{text.strip()}\n```" if path.endswith(".mmd") else text
    return includes


def _render_main(args) -> None:
    if not Path(args.template).is_file():
        raise UserError(f"--template: file '{args.template}' does not exist")
    template = Path(args.template).read_text(encoding="utf-8")
    if args.no_digits_in:
        typed = template_literal_digits(template, args.no_digits_in)
        if typed:
            first = typed[0]
            raise UserError(f"--no-digits-in: {len(typed)} number(s) typed by hand, first "
                            f"'{first.token}' on template line {first.line}: {first.context.strip()}")
    paper = render_paper(template, load_json(args.numbers, "--numbers"), _parse_includes(args.include))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_bytes(paper.encode("utf-8"))


def _environment_main(args) -> None:
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_bytes(environment_markdown().encode("utf-8"))


def register_cli(sub) -> None:
    """Add the verbs ``render-paper`` and ``environment``."""
    p = sub.add_parser("render-paper", help="fill the paper template from numbers.json and includes",
                       description="Render paper.md: numbers with provenance footnotes, tables, graphs.")
    p.add_argument("--template", required=True, help="Markdown template with {{num:ID}} / {{include:NAME}}")
    p.add_argument("--numbers", required=True, help="numbers JSON written by `clerk numbers`")
    p.add_argument("--include", action="append", default=[], metavar="NAME=FILE",
                   help="text to insert at {{include:NAME}} (repeatable; .mmd is fenced as mermaid)")
    p.add_argument("--no-digits-in", action="append", default=[], metavar="SECTION",
                   help="fail if this section of the template has hand-typed numbers (repeatable)")
    p.add_argument("--out", required=True, help="rendered Markdown to write")
    p.set_defaults(func=_render_main)

    p = sub.add_parser("environment", help="Markdown table of code version, packages and device",
                       description="Write the run environment as a Markdown table for the paper.")
    p.add_argument("--out", required=True, help="Markdown file to write")
    p.set_defaults(func=_environment_main)
