"""Replay one persona of a finished erasure study through CLERK and print its ledger around each forget.

Run from the repository root of the run that wrote ``results/erasure/SEED/metrics.json``; the
runtime is rebuilt from the configuration that file records (the ``erasure`` rule's own flags), so
the ledgers are the ones the study scored:

    python benchmarks/erasure-leak/replay_one.py --seed 4242 --persona Ottilie
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clerk.evaluate.erasure import leaked_values, live_forgotten
from clerk.evaluate.runner import catalogue_keys, load_timelines_file, load_up_front, make_systems, replay
from clerk.memory import EvalConfig, Runtime
from clerk.models.device import set_torch_threads


def slots(system, state) -> list[tuple]:
    return [(s["p"], s["o"], s["v"]) for s in system.ledger(state) if "p" in s]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--persona", required=True, help="the persona's name in results/data/SEED/forget.jsonl")
    args = parser.parse_args()
    recorded = json.loads(Path(f"results/erasure/{args.seed}/metrics.json").read_text())
    config, timelines = recorded["config"], recorded["input"]["path"]
    knobs = {k: v for k, v in config.items() if k in EvalConfig.__dataclass_fields__}
    set_torch_threads(1)
    runtime = Runtime(EvalConfig(**{**knobs, "write_only": tuple(knobs["write_only"])}), model_dir=config["model"],
                      adapter_dir=config["adapter"], reader_adapter_dir=config["reader_adapter"])
    runtime.predicates = catalogue_keys(None)
    persona = [tl for tl in load_timelines_file(timelines) if tl["name"] == args.persona]
    if not persona:
        raise SystemExit(f"--persona: {args.persona!r} is not in {timelines}")
    systems = {("clerk", "forget"): make_systems(["clerk"], runtime)["clerk"]}
    load_up_front(runtime, systems)
    live = live_forgotten(persona[0])

    def prepare(key, system, tl, session, state):
        for request in session.get("forget") or []:
            print(f"forget at session {session['index']}: {request}\n  before: {slots(system, state)}")
            state = system.forget(state, tl, request["pred"], list(request["values"]))
            print(f"  after:  {slots(system, state)}")
        return state

    def answer(key, system, tl, session, state, views):
        values = live[session["index"]]
        leaked = sorted({v for view in views for v in leaked_values(view.text, values)})
        print(f"session {session['index']}: live forgotten {values}, leaked {leaked}\n  {slots(system, state)}")

    replay(persona, systems, answer, progress=False, prepare=prepare)


if __name__ == "__main__":
    main()
