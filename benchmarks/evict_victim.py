r"""EVICT lever (the policy's weakest op): who picks the victim, on VALIDATION personas, without teacher forcing.

The shipped policy writes ``EVICT <pred>`` itself; the grammar only makes it evict when an ADD
meets a full ledger. On the test splits its EVICT F1 (0.52-0.71 per seed) is far below its other
op kinds. This script measures, on the validation personas of one seed (the SFT split's held-out
personas; never a test split), the clerk system as ``clerk evaluate`` runs it (its own ledger,
session after session; exact rule reader, so no reading model is needed) under three victims:

* ``policy``   — the shipped behaviour: the key the policy wrote;
* ``salience`` — the key the policy wrote is replaced, at compile time, by the least salient
  occupied slot of the ledger as it stands at that op (``clerk.ledger.least_salient``, the
  oracle's own rule, computed on the system's ledger). The policy still decides *when* to evict;
* ``reducer``  — the policy's EVICT lines are dropped and the reducer decides both when and whom:
  before an ADD that meets a full ledger it evicts the least salient slot (the SPEC's budget rule,
  applied deterministically). The policy only decides ADD / UPDATE / TOMBSTONE.

Every compiled program is logged (ledger, text, ops) so that errors can be sorted into wrong
victim vs. an eviction gold does not make (``--diagnose``).

The adapters (600 CONSOLIDATE steps, one thread; W a work dir, M resources/cache/smollm2-135m):

    clerk generate --seed SEED --split train --personas 100 --sessions 8 --questions 3-3 --budget 12 --init-facts 4 \
         --out W/data/results/data/SEED/train.jsonl
    source benchmarks/task_sft.sh    # at commit b5a37c3: git show b5a37c3:benchmarks/task_sft.sh
    task_sft W/data W/pSEED SEED M 0.5 consolidate
    train_recipe W/pSEED/sft M SEED 600 0 W/pSEED W/pSEED/adapter

    python benchmarks/evict_victim.py --timelines T --sft SFT --model M --adapter A --out DIR --victim policy
    python benchmarks/evict_victim.py --timelines T --out DIR --diagnose
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from clerk import ledger as L
from clerk import program as P
from clerk.metrics import canonical_ops


def slot_facts(ledger: L.Ledger) -> list[tuple]:
    """The occupied slots' (s, p, o, v) in slot order: a ledger "drifted" from gold when these differ.
    Slot order counts (unlike ``clerk.metrics.state_f1``): salience ties break on the index."""
    return [(s["s"], s["p"], s["o"], s["v"]) for s in L.occupied(ledger)]


def sessions_by_key(timelines: Path) -> dict[tuple[str, int], dict]:
    """Every session of a timelines file, by (persona name, session index)."""
    out = {}
    for line in timelines.read_text().splitlines():
        persona = json.loads(line)
        for session in persona["sessions"]:
            out[(persona["name"], session["index"])] = session
    return out


def split_timelines(timelines: Path, sft: Path, out: Path, split: str = "validation", shard: str = "1/1") -> Path:
    """The timeline lines of one SFT split's personas (shard K of N of them), in file order;
    ``split="all"``: every persona of the file (a fresh set no adapter trained on; no SFT needed)."""
    lines = timelines.read_text().splitlines()
    if split != "all":
        names = set(json.loads((sft / "sft_stats.json").read_text())["splits"][split]["personas"])
        lines = [line for line in lines if json.loads(line)["name"] in names]
    k, n = map(int, shard.split("/"))
    lines = lines[k - 1::n]
    path = out / f"{split}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(args: argparse.Namespace) -> None:
    from clerk.cli import main as clerk_main

    args.out.mkdir(parents=True, exist_ok=True)
    val = split_timelines(args.timelines, args.sft, args.out, args.personas, args.shard)
    log = (args.out / "programs.jsonl").open("w")
    original_line, original_compile = P._compile_line, P.compile_program

    def salience_line(line, ledger, subject):
        op = original_line(line, ledger, subject)
        if op is not None and op["op"] == "EVICT" and L.occupied(ledger):
            op = {"op": "EVICT", "i": L.least_salient(ledger)}
        return op

    def reducer_evicts(compiled, ledger, now):
        program, current = [], ledger
        for op in compiled.program:
            if isinstance(op, dict) and op["op"] == "EVICT":
                continue
            if isinstance(op, dict) and op["op"] == "ADD" and not any(map(L.is_free, current)):
                evict = {"op": "EVICT", "i": L.least_salient(current)}
                program.append(evict)
                current, _ = L.reduce(current, [evict], now, strict=False)
            program.append(op)
            if isinstance(op, dict):
                current, _ = L.reduce(current, [op], now, strict=False)
        return P.Compiled(program, compiled.errors, compiled.parse_failed)

    def logged_compile(text, ledger, subject, now):
        compiled = original_compile(text, ledger, subject, now)
        if args.victim == "reducer":
            compiled = reducer_evicts(compiled, ledger, now)
        log.write(json.dumps({"subject": subject, "now": now, "ledger": ledger, "text": text,
                              "program": compiled.program}) + "\n")
        return compiled

    if args.victim == "salience":
        P._compile_line = salience_line
    P.compile_program = logged_compile
    from clerk.models import constrained as C

    original_apply = C.GrammarConstraint.apply

    # The penalty rides on the grammar's logits hook: clerk's writes always decode with the grammar.
    def penalised_apply(self, logits, done):
        original_apply(self, logits, done)  # grammar mask first: a masked stop stays masked
        logits[:, stops] -= args.stop_penalty  # rows already done ignore their token

    if args.stop_penalty:
        from transformers import AutoTokenizer

        from clerk.models.decoding import stop_token_ids

        stops = stop_token_ids(AutoTokenizer.from_pretrained(args.model))
        C.GrammarConstraint.apply = penalised_apply
    try:
        clerk_main(["evaluate", "--timelines", str(val), "--model", str(args.model), "--adapter", str(args.adapter),
                    "--systems", "clerk", "--reader", "rule", "--max-new-tokens", "64", "--batch-size", "16",
                    "--dtype", args.dtype, "--threads", "1", "--quiet", "--out", str(args.out / "eval")])
    finally:
        P._compile_line, P.compile_program = original_line, original_compile
        C.GrammarConstraint.apply = original_apply
        log.close()
    m = json.loads((args.out / "eval" / "metrics.json").read_text())["systems"]["clerk"]
    print(json.dumps({"victim": args.victim, "stop_penalty": args.stop_penalty, "op_f1": m["op"]["f1"], "state_f1": m["state_f1_mean"],
                      **{k: m["op"]["by_type"][k]["f1"] for k in L.OP_KINDS},
                      "evict": {k: m["op"]["by_type"]["EVICT"][k] for k in ("tp", "fp", "fn")}}))


def diagnose(args: argparse.Namespace) -> None:
    """Sort predicted EVICTs: right victim / wrong victim where gold evicts / eviction gold lacks."""
    gold = sessions_by_key(args.timelines)
    counts = Counter()
    for line in (args.out / "programs.jsonl").read_text().splitlines():
        rec = json.loads(line)
        session = gold[(rec["subject"], rec["now"])]
        g = [c for c in canonical_ops(session["ledger_before"], session["gold_ops"], rec["now"]) if c[0] == "EVICT"]
        p = [c for c in canonical_ops(rec["ledger"], rec["program"], rec["now"]) if c[0] == "EVICT"]
        hit = Counter(p) & Counter(g)
        counts["gold_evicts"] += len(g)
        counts["pred_evicts"] += len(p)
        counts["right"] += sum(hit.values())
        wrong = len(p) - sum(hit.values())
        missed = len(g) - sum(hit.values())
        counts["wrong_victim"] += min(wrong, missed)  # evicted, and gold evicts here too, another fact
        counts["extra_evict"] += max(0, wrong - missed)  # more evictions than gold makes here
        counts["missing_evict"] += max(0, missed - wrong)
        ledger_drift = slot_facts(rec["ledger"]) != slot_facts(session["ledger_before"])
        if wrong or missed:
            counts["sessions_with_error"] += 1
            counts["  of which ledger drifted before"] += ledger_drift
    print(json.dumps(dict(counts), indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timelines", type=Path, required=True, help="train split timelines (results/data/SEED/train.jsonl)")
    ap.add_argument("--sft", type=Path, help="SFT dataset dir whose sft_stats.json names the validation personas")
    ap.add_argument("--model", type=Path)
    ap.add_argument("--adapter", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--victim", choices=("policy", "salience", "reducer"), default="policy")
    ap.add_argument("--personas", choices=("validation", "train", "all"), default="validation",
                    help="the SFT split whose personas are run (train: rollouts for benchmarks/dagger.py; all: every "
                         "persona of --timelines, for a fresh generated set no adapter trained on)")
    ap.add_argument("--shard", default="1/1", help="K/N: every N-th persona from the K-th (parallel rollouts)")
    ap.add_argument("--stop-penalty", type=float, default=0.0,
                    help="subtract this from the end-of-turn logits at every decoding step (a lever against facts "
                         "left unwritten, benchmarks/first_errors.py; measured: no gain, docs/DECISIONS.md)")
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                    help="the writer's inference dtype (clerk evaluate --dtype; default float32)")
    ap.add_argument("--diagnose", action="store_true", help="only sort the EVICT errors of an earlier run in --out")
    args = ap.parse_args()
    diagnose(args) if args.diagnose else run(args)


if __name__ == "__main__":
    main()
