import json, shlex
from clerk.cli import make_parser
from clerk.evaluate.cli import runtime_from_args
from clerk.evaluate.runner import make_systems, replay, load_up_front, load_timelines_file
from clerk.evaluate.erasure import live_forgotten, leaked_values
cmd = "erasure --timelines results/data/4242/forget.jsonl --model resources/models/smollm2-135m --adapter results/train/4242 --reader-adapter results/train_reader/4242 --systems clerk --max-new-tokens 64 --batch-size 16 --reader-model reader --reader-pmi 0.25 --constrained --dtype float32 --threads 1 --quiet --out /tmp/leakout"
args = make_parser().parse_args(shlex.split(cmd))
rt = runtime_from_args(args)
tls = [t for t in load_timelines_file(args.timelines) if t["name"] == "Ottilie"]
systems = {("clerk", "forget"): make_systems(["clerk"], rt)["clerk"]}
load_up_front(rt, systems)
live = live_forgotten(tls[0])
def prepare(key, system, tl, session, state):
    for r in session.get("forget") or []:
        print("FORGET", session["index"], r)
        print("  before:", [(s.get("p"), s.get("o"), s.get("v")) for s in system.ledger(state) if "p" in s])
        state = system.forget(state, tl, r["pred"], list(r["values"]))
        print("  after:", [(s.get("p"), s.get("o"), s.get("v")) for s in system.ledger(state) if "p" in s])
    return state
def answer(key, system, tl, session, state, views):
    led = [(s.get("p"), s.get("o"), s.get("v")) for s in system.ledger(state) if "p" in s]
    print("S", session["index"], "live", live[session["index"]], "leak", leaked_values(views[0].text, live[session["index"]]) if views else None)
    print("  ", led)
replay(tls, systems, answer, progress=False, prepare=prepare)
