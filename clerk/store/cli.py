"""``clerk forget`` and ``clerk stress-forget``: erase from a store, and prove the fence holds.

    clerk forget --store sqlite:///memory.db --subject Ari --predicate city
    clerk stress-forget --store sqlite:///$(mktemp -d)/m.db --workers 4 --forgetters 2 --seconds 20
    clerk stress-forget --store sqlite:///$(mktemp -d)/m.db --workers 4 --forgetters 2 --seconds 20 --no-fence
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from clerk.errors import UserError

_URL_HELP = ("store URL: sqlite:///PATH (relative), sqlite:////abs/path, or a libpq "
             "postgresql://[user@][host][:port]/DB URL (a Unix socket: postgresql:///DB?host=/socket/dir)")


def _forget_main(args: argparse.Namespace) -> None:
    from clerk.store import StoreError, open_store
    from clerk.store.postgres import check_vacuum_wait

    try:
        if args.vacuum_wait is not None:
            if not args.vacuum:
                raise UserError(f"--vacuum-wait {args.vacuum_wait:g} applies only with --vacuum")
            check_vacuum_wait(args.vacuum_wait, "--vacuum-wait")
        with open_store(args.store, vacuum=args.vacuum, create=False, vacuum_wait=args.vacuum_wait) as store:
            report = store.forget(args.subject, args.predicate, values=args.value)
    except StoreError as err:
        raise UserError(str(err)) from None
    print(json.dumps(dataclasses.asdict(report)))


def _stress_main(args: argparse.Namespace) -> None:
    from clerk.store import StoreError
    from clerk.store.stress import StressConfig, run_stress

    cfg = StressConfig(url=args.store, workers=args.workers, forgetters=args.forgetters, seconds=args.seconds,
                       fence=not args.no_fence, seed=args.seed, subjects=args.subjects, think_ms=args.think_ms,
                       forget_gap_ms=args.forget_gap_ms, events=args.events)
    try:
        report = run_stress(cfg)
    except StoreError as err:
        raise UserError(str(err)) from None
    print(f"{report['published']} published, {report['refused']} refused (stale generation), "
          f"{report['stale_published']} stale published (no fence), {report['conflicts']} conflicts, "
          f"{report['forgets']} forgets in {report['seconds']} s: "
          f"{report['resurrections']} resurrections, {report['lost']} lost", file=sys.stderr)
    if not report["events_reached"]:
        print(f"clerk stress-forget: the {cfg.seconds:g} s cap came before {cfg.events} of each event: "
              f"{report['published']} published, {report['forgets']} forgets, "
              f"{report['refused'] + report['stale_published']} stale publishes; the run proves nothing "
              f"(raise --seconds, or lower --events)", file=sys.stderr)
    print(json.dumps(report))
    if (cfg.fence and (report["resurrections"] or report["lost"])) or not report["events_reached"]:
        raise SystemExit(1)


def register_cli(sub) -> None:
    """Add the ``forget`` and ``stress-forget`` verbs."""
    p = sub.add_parser(
        "forget", help="erase a subject's predicate (every value it held) or the whole subject from a store",
        description="Erase every value PREDICATE of SUBJECT has held from the store's ledger, transcript log "
        "and derived memories (values are redacted in texts), or the whole subject without --predicate; "
        "the store must exist and hold SUBJECT (exit 2 otherwise, nothing written); "
        "advance the subject's erase generation in the same transaction, so a consolidation that read before "
        "refuses to publish. Returns once durable; prints the report (counts only) as JSON.")
    # what to forget
    p.add_argument("--store", required=True, metavar="URL", help=_URL_HELP)
    p.add_argument("--subject", required=True, help="the subject (user) whose memory to erase")
    p.add_argument("--predicate", default=None, help="the predicate key (e.g. city); omit to erase the whole subject")
    p.add_argument("--value", action="append", default=[], metavar="TEXT",
                   help="an extra value to redact from texts (repeatable), for values the ledger never held")
    # how
    p.add_argument("--vacuum", action="store_true",
                   help="PostgreSQL only: VACUUM FULL the data tables after the forget commits, so no dead row "
                        "version keeps the value in the table files (locks those tables while it runs); it first "
                        "waits for snapshots older than the forget, which would keep those versions, to end")
    p.add_argument("--vacuum-wait", type=float, default=None, metavar="SECONDS",
                   help="with --vacuum: how long to wait for those snapshots (and for locks on the tables) "
                        "before exiting 2 with the sessions named and nothing vacuumed (default 60)")
    p.set_defaults(func=_forget_main)

    defaults = _stress_defaults()
    p = sub.add_parser(
        "stress-forget", help="race consolidation workers against forgetters on one store; count resurrections",
        description="Run WORKERS consolidation processes (capture, read, gold-writer policy, think, publish; "
        "retry on refusal) and FORGETTERS forget processes against one empty store for SECONDS, then judge "
        "every view read: a resurrection is a forgotten value seen at a later generation without being stated "
        "again; lost = acknowledged publishes the final state does not hold. The last stdout line is one JSON "
        "object (published, refused, conflicts, forgets, resurrections, lost, ...). Exits 1 if a fenced run "
        "shows a resurrection or a lost write, or if --events were not all reached within --seconds.")
    p.add_argument("--store", required=True, metavar="URL", help=_URL_HELP + "; must hold no subject yet")
    # load
    p.add_argument("--workers", type=int, default=defaults.workers,
                   help=f"consolidation worker processes (default {defaults.workers})")
    p.add_argument("--forgetters", type=int, default=defaults.forgetters,
                   help=f"forgetter processes (default {defaults.forgetters})")
    p.add_argument("--seconds", type=float, default=defaults.seconds,
                   help=f"how long the processes run, seconds; with --events the cap (default {defaults.seconds:g})")
    p.add_argument("--events", type=int, default=None, metavar="N",
                   help="run until N publishes, N forgets and N stale publishes (refused with the fence, let "
                        "through without it) have happened, however slow the machine; reaching --seconds first "
                        "exits 1 (default: run for --seconds)")
    p.add_argument("--subjects", type=int, default=defaults.subjects,
                   help=f"subjects they share, 1..12; fewer = more races (default {defaults.subjects})")
    p.add_argument("--think-ms", type=float, default=defaults.think_ms, dest="think_ms",
                   help=f"worker think time between read and publish, ms, drawn from [0.5x, 1.5x] "
                        f"(default {defaults.think_ms:g})")
    p.add_argument("--forget-gap-ms", type=float, default=defaults.forget_gap_ms, dest="forget_gap_ms",
                   help=f"forgetter wait between forgets, ms, drawn from [0.5x, 1.5x] (default {defaults.forget_gap_ms:g})")
    p.add_argument("--seed", type=int, default=defaults.seed, help=f"seed of the feeds and choices (default {defaults.seed})")
    # the negative control
    p.add_argument("--no-fence", action="store_true", dest="no_fence",
                   help="skip only the publish's re-proof of the erase generation (shows what the fence prevents)")
    p.set_defaults(func=_stress_main)


def _stress_defaults():
    from clerk.store.stress import StressConfig

    return StressConfig(url="sqlite:///unused")
