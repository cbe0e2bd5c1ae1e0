"""The ``clerk streams`` and ``clerk eviction-study`` verbs (SPEC §3).

    clerk streams --seed 137 --out results/streams/stream_137.json
    clerk eviction-study --streams results/streams/stream_137.json --out results/streams/eviction_137.csv
"""

from __future__ import annotations

import argparse

from clerk.atomic import check_out_file, write_text
from clerk.errors import UserError
from clerk.ledger import dumps
from clerk.settings import add_settings
from clerk.streams.config import StreamsSection
from clerk.streams.engines import POLICIES, get_policy
from clerk.streams.generation import load_stream, make_stream
from clerk.streams.study import eviction_study, rows_to_csv, summary_table


def _streams_main(args: argparse.Namespace) -> None:
    """``clerk streams``: write one stream file."""
    check_out_file(args.out, "--out")
    stream = make_stream(args.seed, length=args.length, num_foundational=args.foundational,
                         recalls_per_foundational=args.recalls, noise_per_turn=args.noise)
    write_text(args.out, dumps(stream) + "\n")


def _study_main(args: argparse.Namespace) -> None:
    """``clerk eviction-study``: sweep policies x capacities x noise rates, write the CSV."""
    check_out_file(args.out, "--out")
    streams = [load_stream(path) for path in args.streams]
    policies = list(dict.fromkeys(args.policies)) if args.policies else list(POLICIES)
    for name in policies:
        get_policy(name)
    for capacity in args.capacities:
        if capacity < 1:
            raise UserError(f"--capacities must be ints >= 1, got {capacity}")
    for noise in args.noise_grid:
        if noise < 0:
            raise UserError(f"--noise-grid must be ints >= 0, got {noise}")
    capacities = sorted(set(args.capacities))
    noise_grid = sorted(set(args.noise_grid))
    # Default cell: the middle capacity of the grid and the streams' own noise rate when swept.
    capacity = args.default_capacity if args.default_capacity is not None else capacities[(len(capacities) - 1) // 2]
    if capacity not in capacities:
        raise UserError(f"--default-capacity must be one of --capacities {capacities}, got {capacity}")
    own = streams[0]["config"]["noise_per_turn"]
    noise = args.default_noise if args.default_noise is not None else (
        own if own in noise_grid else noise_grid[(len(noise_grid) - 1) // 2])
    if noise not in noise_grid:
        raise UserError(f"--default-noise must be one of --noise-grid {noise_grid}, got {noise}")
    rows = eviction_study(streams, policies, capacities, noise_grid, progress=True)
    write_text(args.out, rows_to_csv(rows))
    print(summary_table(rows, capacity, noise, policies))


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add the ``streams`` and ``eviction-study`` verbs."""
    p = sub.add_parser("streams", help="generate a foundational-vs-noise stream (SPEC §3)",
                       description="Write one foundational-versus-noise event stream as JSON.")
    # what the stream looks like
    p.add_argument("--seed", type=int, required=True, help="stream seed (int); same seed, same bytes")
    add_settings(p, "streams", StreamsSection)  # the streams section's settings (clerk.settings)
    # where it goes
    p.add_argument("--out", required=True, help="output stream file (.json)")
    p.set_defaults(func=_streams_main)

    p = sub.add_parser("eviction-study", help="replay streams under eviction policies (SPEC §3)",
                       description="Replay stream files under every policy x capacity x noise rate and "
                                   "write one CSV row per (seed, policy, capacity, noise_per_turn).")
    # inputs and grid
    p.add_argument("--streams", nargs="+", required=True, help="stream files from `clerk streams`")
    # the streams section's grid (clerk.settings); by hand, the summary's capacity is the grid's middle
    add_settings(p, "eviction-study", StreamsSection, default_capacity=None,
                 notes={"default_capacity": "the middle of --capacities"})
    p.add_argument("--default-noise", type=int, default=None,
                   help="noise rate of the printed summary (default: the first stream's own rate if "
                        "in --noise-grid, else the middle of the grid)")
    # output
    p.add_argument("--out", required=True, help="output CSV file")
    p.set_defaults(func=_study_main)
