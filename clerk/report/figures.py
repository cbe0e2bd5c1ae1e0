"""The paper's figures: seaborn plots of the tables, saved as PDF + PNG with stable bytes (SPEC §6, §8).

(a) read cost over sessions, (b) accuracy by question type, (c) eviction policies against
capacity, (d) training loss, (e) ledger-state F1 over sessions. Every render is
byte-deterministic: a bundled font, fixed SVG ids, no time or version stamps in the files.

    clerk figure accuracy --inputs results/table1_seeds.csv --out results/figures/accuracy_by_type
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.memory.registry import MEMORY_REGISTRY
from clerk.report.systems import QUESTION_TYPES, SYSTEM_ORDER
from clerk.report.tabular import ordered, read_csv, seed_key

#: Figure kinds of ``clerk figure``, in the paper's order (a)-(e).
FIGURES = ("read-cost", "accuracy", "eviction", "loss", "state-f1", "learning-curve")
#: Read-cost views in plot order, with the label the paper uses: each probed system's
#: ``read_cost_label`` in the registry (the oracle ledger stands in for CLERK's ledger: same format,
#: same B slots, so the same read cost).
VIEW_LABELS = MEMORY_REGISTRY.read_cost_views()

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


#: (marker, line style) per series, in order: series that coincide stay visible (the dashes of
#: one show the other through their gaps, and the markers differ).
SERIES_STYLES = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", (0, (5, 1))), ("P", (0, (3, 1, 1, 1, 1, 1))),
                 ("X", (0, (1, 2))))

#: A value axis spanning more than this ratio (largest / smallest positive value) is drawn log-scaled.
LOG_SCALE_RATIO = 10.0


def _series_style(k: int) -> dict[str, Any]:
    marker, linestyle = SERIES_STYLES[k % len(SERIES_STYLES)]
    return {"marker": marker, "linestyle": linestyle}


def _new_axes(width: float = 4.5, height: float = 3.0):
    import matplotlib.pyplot as plt

    set_plot_style()
    return plt.subplots(figsize=(width, height))


def _integer_x(ax) -> None:
    """Integer ticks on the x axis (session indices, steps)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _finish(fig, out: str) -> tuple[Path, Path]:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    paths = save_figure(fig, out)
    plt.close(fig)
    return paths


def figure_read_cost(table_csv: str, out: str) -> tuple[Path, Path]:
    """(a) Read tokens per question against session index, one line per view (mean over seeds).

    Args:
        table_csv: the aggregated read-cost table (:func:`read_cost_table`).
        out: output path without extension.

    Returns:
        The PDF and PNG paths.
    """
    import seaborn as sns

    df = read_csv(table_csv, "--inputs", ("view", "session", "mean_read_tokens_mean"))
    views = ordered(list(df["view"]), list(VIEW_LABELS))
    colors = sns.color_palette("colorblind", len(views))
    fig, ax = _new_axes()
    for k, view in enumerate(views):
        sub = df[df["view"] == view].sort_values("session")
        ax.plot(sub["session"], sub["mean_read_tokens_mean"], label=VIEW_LABELS.get(view, view), color=colors[k],
                markersize=3, linewidth=1, markevery=max(1, len(sub) // 12), **_series_style(k))
    _integer_x(ax)
    positive = df["mean_read_tokens_mean"][df["mean_read_tokens_mean"] > 0]
    if len(positive) and positive.max() / positive.min() > LOG_SCALE_RATIO:
        ax.set_yscale("log")
    ax.set(xlabel="session index", ylabel="read tokens per question", title="Read cost over time")
    ax.legend(title=None, fontsize="small")
    return _finish(fig, out)


def figure_accuracy(seeds_csv: str, out: str, split: str = "test") -> tuple[Path, Path]:
    """(b) Accuracy overall and per question type per system, mean with 95 % t-interval bars.

    Args:
        seeds_csv: a per-seed systems table (``table1_seeds.csv``).
        out: output path without extension. split: the split to plot.

    Returns:
        The PDF and PNG paths.

    Raises:
        UserError: no rows of ``split`` or a missing column.
    """
    import numpy as np
    import seaborn as sns

    from clerk.report.stats import aggregate

    cols = ("accuracy", *(f"accuracy_{t}" for t in QUESTION_TYPES))
    df = read_csv(seeds_csv, "--inputs", ("split", "system", *cols))
    df = df[df["split"] == split]
    if df.empty:
        raise UserError(f"--split: no rows of split '{split}' in '{seeds_csv}'")
    systems = ordered(list(df["system"]), SYSTEM_ORDER)
    labels = ["overall", *QUESTION_TYPES]
    fig, ax = _new_axes(6.5, 3.2)
    width = 0.8 / len(systems)
    palette = sns.color_palette("colorblind", len(systems))
    for k, system in enumerate(systems):
        sub = df[df["system"] == system]
        stats = [aggregate(sub[c].tolist()) for c in cols]
        means = np.array([s["mean"] for s in stats])
        err = np.array([[s["mean"] - s["ci_low"] for s in stats], [s["ci_high"] - s["mean"] for s in stats]])
        x = np.arange(len(cols)) - 0.4 + width * (k + 0.5)
        ax.bar(x, np.nan_to_num(means), width, label=system, color=palette[k])
        ax.errorbar(x, means, yerr=np.nan_to_num(err), fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5)
    ax.set_xticks(np.arange(len(cols)), labels)
    ax.set(ylabel="accuracy", ylim=(0, 1.05), title=f"Accuracy by question type ({split})")
    ax.axhline(0.1, color="grey", linestyle=":", linewidth=0.8, label="chance")
    ax.legend(fontsize="x-small", ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    return _finish(fig, out)


def figure_eviction(table_csv: str, out: str, noise: int | None = None) -> tuple[Path, Path]:
    """(c) Recall hit rate against capacity per policy at one noise rate, with interval bars.

    Args:
        table_csv: the aggregated eviction table (``table4.csv``).
        out: output path without extension.
        noise: noise facts per turn to plot; None = the rows marked ``setting = default``.

    Returns:
        The PDF and PNG paths.

    Raises:
        UserError: no rows at that noise rate or a missing column.
    """
    import seaborn as sns

    from clerk.streams.engines import POLICIES

    df = read_csv(table_csv, "--inputs", ("policy", "capacity", "noise_per_turn", "setting",
                                            "recall_hit_rate_mean", "recall_hit_rate_ci_low",
                                            "recall_hit_rate_ci_high"))
    if noise is None:
        noise = int(df[df["setting"] == "default"]["noise_per_turn"].iloc[0])
    df = df[df["noise_per_turn"] == noise].sort_values(["policy", "capacity"])
    if df.empty:
        raise UserError(f"--noise: no rows with noise_per_turn {noise} in '{table_csv}'")
    policies = ordered(list(df["policy"]), list(POLICIES))
    palette = dict(zip(policies, sns.color_palette("colorblind", len(policies))))
    fig, ax = _new_axes()
    for k, policy in enumerate(policies):
        sub = df[df["policy"] == policy]
        low = (sub["recall_hit_rate_mean"] - sub["recall_hit_rate_ci_low"]).fillna(0)
        high = (sub["recall_hit_rate_ci_high"] - sub["recall_hit_rate_mean"]).fillna(0)
        dodge = (k - (len(policies) - 1) / 2) * 0.25  # slots: policies with equal rates stay apart
        ax.errorbar(sub["capacity"] + dodge, sub["recall_hit_rate_mean"], yerr=[low, high], markersize=3, capsize=2,
                    linewidth=1, label=policy, color=palette[policy], **_series_style(k))
    ax.set_xticks(sorted(set(int(c) for c in df["capacity"])))
    ax.set(xlabel="capacity (slots)", ylabel="recall hit rate", ylim=(-0.02, 1.02),
           title=f"Eviction policies at {noise} noise facts/turn")
    ax.legend(fontsize="x-small", ncol=2)
    return _finish(fig, out)


def _train_log(folder_or_csv: str) -> tuple[str, Any]:
    """(seed label, train_log DataFrame) of a ``clerk train`` folder or a train_log.csv path."""
    path = Path(folder_or_csv)
    folder = path if path.is_dir() else path.parent
    log = path / "train_log.csv" if path.is_dir() else path
    df = read_csv(log, "--inputs", ("step", "loss"))
    cfg = folder / "train_config.json"
    seed = str(json.loads(cfg.read_text(encoding="utf-8"))["config"]["seed"]) if cfg.is_file() else folder.name
    return seed, df


def figure_loss(inputs: list[str], out: str) -> tuple[Path, Path]:
    """(d) Training loss against optimizer step, one line per seed.

    Args:
        inputs: ``clerk train`` folders (``train_log.csv`` inside; the seed from
            ``train_config.json``, else the folder name) or train_log.csv files.
        out: output path without extension.

    Returns:
        The PDF and PNG paths.
    """
    import pandas as pd
    import seaborn as sns

    logs = sorted((_train_log(p) for p in inputs), key=lambda sd: seed_key(sd[0]))
    df = pd.concat([d.assign(seed=s) for s, d in logs], ignore_index=True)
    fig, ax = _new_axes()
    sns.lineplot(data=df, x="step", y="loss", hue="seed", hue_order=[s for s, _ in logs],
                 errorbar=None, ax=ax, linewidth=1)
    ax.set(xlabel="optimizer step", ylabel="training loss (assistant tokens)", title="LoRA SFT loss")
    ax.legend(title="seed", fontsize="small")
    return _finish(fig, out)


def state_f1_by_session(paths: list[str]):
    """Ledger-state F1 per (system, session): per seed the mean over personas, then over seeds.

    Returns:
        The aggregated DataFrame (``system, session, n_seeds, seeds, state_f1_*``).
    """
    import pandas as pd

    from clerk.report.stats import aggregate_frame

    rows = []
    for path in paths:
        if not Path(path).is_file():
            raise UserError(f"--inputs: file '{path}' does not exist")
        with open(path, encoding="utf-8") as fh:
            rows += [{k: r[k] for k in ("system", "seed", "session", "state_f1")}
                     for r in map(json.loads, fh) if r]
    if not rows:
        raise UserError(f"--inputs: no ledger rows in {paths}")
    per_persona = pd.DataFrame(rows)
    per_seed = per_persona.groupby(["system", "seed", "session"], as_index=False)["state_f1"].mean()
    return aggregate_frame(per_seed, ["system", "session"], ["state_f1"])


def figure_state_f1(inputs: list[str], out: str) -> tuple[Path, Path]:
    """(e) Ledger-state F1 after each session per ledger system, mean with a 95 % t-interval band.

    Args:
        inputs: ``ledgers.jsonl`` files of ``clerk evaluate`` (one per seed).
        out: output path without extension.

    Returns:
        The PDF and PNG paths.
    """
    import seaborn as sns

    agg = state_f1_by_session(inputs)
    systems = ordered(list(agg["system"]), SYSTEM_ORDER)
    palette = dict(zip(systems, sns.color_palette("colorblind", len(systems))))
    fig, ax = _new_axes()
    for system in systems:
        sub = agg[agg["system"] == system].sort_values("session")
        ax.plot(sub["session"], sub["state_f1_mean"], marker="o", markersize=3, linewidth=1,
                label=system, color=palette[system])
        ax.fill_between(sub["session"], sub["state_f1_ci_low"], sub["state_f1_ci_high"],
                        color=palette[system], alpha=0.2, linewidth=0)
    _integer_x(ax)
    ax.set(xlabel="session index", ylabel="ledger-state F1 vs gold", ylim=(-0.02, 1.02),
           title="Ledger state over sessions")
    ax.legend(fontsize="small")
    return _finish(fig, out)


#: Columns of ``clerk learning-curve`` plotted, and their legend labels.
_CURVE_SERIES = {"op_f1": "all ops", "add_f1": "ADD", "update_f1": "UPDATE", "tombstone_f1": "TOMBSTONE",
                 "evict_f1": "EVICT"}


def figure_learning_curve(curve_csv: str, out: str) -> tuple[Path, Path]:
    """(f) Validation op-F1 per op kind against training examples seen (snapshots of one run).

    Args:
        curve_csv: the ``clerk learning-curve`` CSV.
        out: output path without extension.

    Returns:
        The PDF and PNG paths.
    """
    import pandas as pd
    import seaborn as sns

    df = pd.read_csv(curve_csv)
    df = df[df["point"] != "free"]  # the final adapter without the grammar is a number of the text
    long = df.melt(id_vars=["examples_seen"], value_vars=list(_CURVE_SERIES), var_name="op", value_name="f1")
    long["op"] = long["op"].map(_CURVE_SERIES)
    fig, ax = _new_axes()
    order = list(_CURVE_SERIES.values())
    sns.lineplot(data=long, x="examples_seen", y="f1", hue="op", style="op", hue_order=order, style_order=order,
                 markers=[m for m, _ in SERIES_STYLES[:len(order)]], dashes=True, errorbar=None, ax=ax, linewidth=1)
    ax.set(xlabel="training examples seen", ylabel="validation op-F1", ylim=(-0.02, 1.02),
           title="Policy learning curve (validation personas)")
    ax.legend(title=None, fontsize="small")
    return _finish(fig, out)
