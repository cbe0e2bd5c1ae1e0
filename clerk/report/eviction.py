"""Table 4: the eviction study, recall hit rate and noise occupancy over seeds (SPEC §3, §6).

Per-seed rows of ``clerk eviction-study`` CSVs, aggregated per (policy, capacity, noise rate);
the rows at the default capacity and noise rate are the paper's headline setting.

    clerk table-eviction --csv results/eviction/*.csv --default-capacity 16 --default-noise 3 \\
        --out results/table4.csv --seeds-out results/table4_seeds.csv --markdown results/table4.md
"""

from __future__ import annotations

from clerk.errors import UserError
from clerk.report.tabular import markdown_table, mean_pm, ordered, read_csv, seed_note

#: Per-seed value columns of the eviction study, aggregated over seeds.
EVICTION_METRICS = ("recall_hit_rate", "noise_occupancy", "hits", "recalls")


def eviction_tables(paths: list[str], default_capacity: int, default_noise: int):
    """Per-seed rows of ``clerk eviction-study`` CSVs and their aggregate per (policy, capacity, noise).

    The aggregate carries ``setting`` = ``default`` on the rows at the default capacity and noise
    rate (the paper's headline setting) and ``sweep`` elsewhere.

    Raises:
        UserError: no files, a missing column, a duplicate (policy, capacity, noise, seed), or
            no row at the default setting.
    """
    import pandas as pd

    from clerk.report.stats import aggregate_frame

    if not paths:
        raise UserError("--csv: expected at least one eviction-study CSV, got none")
    keys = ("policy", "capacity", "noise_per_turn")
    per_seed = pd.concat([read_csv(p, "--csv", ("seed", *keys, *EVICTION_METRICS)) for p in paths],
                         ignore_index=True)[["seed", *keys, *EVICTION_METRICS]]
    agg = aggregate_frame(per_seed, list(keys), list(EVICTION_METRICS))
    is_default = (agg["capacity"] == default_capacity) & (agg["noise_per_turn"] == default_noise)
    if not is_default.any():
        raise UserError(f"--default-capacity {default_capacity} / --default-noise {default_noise}: "
                        f"no such setting in the study (capacities {sorted(set(agg['capacity']))}, "
                        f"noise rates {sorted(set(agg['noise_per_turn']))})")
    agg.insert(3, "setting", ["default" if d else "sweep" for d in is_default])
    return per_seed, agg


def eviction_markdown(agg) -> str:
    """Recall hit rate (mean ± half-interval) per policy and noise rate, one column per capacity,
    plus noise occupancy at the default capacity."""
    from clerk.streams.engines import POLICIES

    default = agg[agg["setting"] == "default"].iloc[0]
    capacities = sorted(set(int(c) for c in agg["capacity"]))
    header = ["policy", "noise/turn", *(f"hit rate, C={c}" for c in capacities),
              f"noise occupancy, C={int(default['capacity'])}"]
    rows = []
    for policy in ordered(list(agg["policy"]), list(POLICIES)):
        for noise in sorted(set(int(n) for n in agg["noise_per_turn"])):
            sel = agg[(agg["policy"] == policy) & (agg["noise_per_turn"] == noise)]
            if sel.empty:
                continue
            by_cap = {int(r["capacity"]): r for r in sel.to_dict("records")}
            cells = [mean_pm(by_cap[c], "recall_hit_rate", ".3f") if c in by_cap else "–" for c in capacities]
            at_default = by_cap.get(int(default["capacity"]))
            occ = mean_pm(at_default, "noise_occupancy", ".3f") if at_default else "–"
            rows.append([policy, str(noise), *cells, occ])
    align = [":---", "---:"] + ["---:"] * (len(capacities) + 1)
    return markdown_table(header, rows, align) + seed_note(agg)
