"""Reader lever study: scoring-rule calibration of the shipped MC reader, on VALIDATION personas.

The shipped reader picks the option with the highest mean log-probability per token after
(view, question). Over the gold ledger it leans to the fixed answer "unknown". This script scores
every option once after the real view and once after the empty view (the same prompt frame with
``prompts.EMPTY_MEMORY``) and reports, per question type, the accuracy of:

* ``mean``: the shipped rule (mean log-prob per option token);
* ``sum``: summed log-prob;
* ``pmi a``: mean log-prob minus ``a`` x the mean log-prob after the empty view (contextual
  calibration: an option the reader would pick without any memory is discounted);
* ``bias b``: the shipped rule with ``b`` subtracted from the two fixed answers' scores.

Only the validation personas of the SFT build (held out of training) are read; test splits are
never touched. Run from a finished default run:

    python benchmarks/reader_calibration.py --run /path/to/run --seed 137 --out benchmarks/reader-calibration.json

With ``--policy-adapter DIR`` the run's adapter (``results/train/SEED``) is the reader and DIR the
policy that writes the ``clerk`` ledgers, with the default profile's evaluation settings
(``config/config.yaml``: window and RAG sizes, write cap, batch, grammar): a validation preview of
table 1 for a policy and a reader trained apart (benchmarks/policy_only.sh and reader_only.sh
at commit b5a37c3).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path


def collect(run: Path, seed: int, systems: list[str], model_dir: str,
            policy: Path | None = None) -> tuple[list, object]:
    """(system, persona, questions, views) for every validation persona-session with questions."""
    from clerk.evaluate.runner import load_timelines_file, make_systems, replay
    from clerk.memory.base import EvalConfig, Runtime

    stats = json.loads((run / f"results/sft/{seed}/sft_stats.json").read_text())
    names = set(stats["splits"]["validation"]["personas"])
    timelines = [tl for tl in load_timelines_file(str(run / f"results/data/{seed}/train.jsonl")) if tl["name"] in names]
    reader_dir = str(run / f"results/train/{seed}")
    if policy is None:
        runtime = Runtime(EvalConfig(), model_dir=model_dir, adapter_dir=reader_dir)
    else:
        import yaml

        ev = yaml.safe_load(Path("config/config.yaml").read_text())["evaluate"]
        config = EvalConfig(window_k=ev["window_k"], rag_k=ev["rag_k"], max_new_tokens=ev["max_new_tokens"],
                            batch_size=ev["batch_size"], constrained=ev["constrained"], reader_model="reader")
        runtime = Runtime(config, model_dir=model_dir, adapter_dir=str(policy), reader_adapter_dir=reader_dir)
    records = []

    def answer(name, system, tl, session, state, views):
        records.append((name, tl["name"], session["questions"], [v.text for v in views]))

    replay(timelines, make_systems(systems, runtime), answer, progress=False)
    return records, runtime


def option_scores(reader, view_text: str, questions: list[dict]) -> list[list[tuple[float, int]]]:
    """(mean log-prob, token count) per option of each question, all asked over ``view_text``."""
    import torch

    from clerk import prompts
    from clerk.memory.reader import split_prompt
    from clerk.models.loading import chat_prompt
    from clerk.models.prefix import encode_text, token_ids
    from clerk.scoring.tree import Query, score_tree

    tok = reader.tokenizer
    parts = [split_prompt(chat_prompt(tok, prompts.answer_messages(view_text, q["question"]))) for q in questions]
    with torch.inference_mode():
        prefix = encode_text(reader.model, tok, parts[0][0], "view")
        queries = [Query(tuple(token_ids(tok, p[1])), tuple(tuple(token_ids(tok, o)) for o in q["options"]))
                   for p, q in zip(parts, questions)]
        scores = score_tree(reader.model, prefix, queries)
    return [[(s, len(ids)) for s, ids in zip(row, query.option_ids)] for row, query in zip(scores, queries)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, type=Path, help="a finished default run (its results/ tree)")
    ap.add_argument("--seed", type=int, default=137)
    ap.add_argument("--model", default="resources/models/smollm2-135m")
    ap.add_argument("--systems", nargs="+", default=["oracle", "full"])
    ap.add_argument("--policy-adapter", type=Path, default=None,
                    help="the policy that writes clerk's ledgers (the run's adapter is then the reader)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    from clerk import prompts

    start = time.perf_counter()
    records, runtime = collect(args.run, args.seed, args.systems, args.model, args.policy_adapter)
    reader = runtime.reader()
    fixed = {prompts.UNKNOWN_ANSWER, prompts.NEGATED_ANSWER}
    null_cache: dict[tuple, list[tuple[float, int]]] = {}
    rows = []  # (system, type, gold index, options, cond scores, null scores, persona)
    for system, persona, questions, views in records:
        groups = defaultdict(list)
        for k, text in enumerate(views):
            groups[text].append(k)
        cond = [None] * len(questions)
        for text, ks in groups.items():
            for k, sc in zip(ks, option_scores(reader, text, [questions[k] for k in ks])):
                cond[k] = sc
        for k, q in enumerate(questions):
            key = (q["question"], tuple(q["options"]))
            if key not in null_cache:
                null_cache[key] = option_scores(reader, "", [q])[0]
            rows.append((system, q["type"], q["options"].index(q["answer"]), q["options"], cond[k], null_cache[key], persona))
        print(f"{system} {persona}: {len(rows)} questions read, {time.perf_counter() - start:.0f} s", file=sys.stderr)

    rules = {"mean": lambda c, n, o: [m for m, _ in c],
             "sum": lambda c, n, o: [m * t for m, t in c]}
    for a in (0.25, 0.5, 0.75, 1.0):
        rules[f"pmi {a}"] = lambda c, n, o, a=a: [m - a * mn for (m, _), (mn, _) in zip(c, n)]
    for b in (0.1, 0.2, 0.3, 0.5):
        rules[f"bias {b}"] = lambda c, n, o, b=b: [m - (b if opt in fixed else 0.0) for (m, _), opt in zip(c, o)]
    # Hybrid: values calibrated against the empty view, the two fixed answers (whose empty-view
    # score is high by design) left uncalibrated and shifted by b.
    for a in (0.5, 1.0):
        for b in (-0.5, -0.25, 0.0, 0.25):
            rules[f"hyb {a}/{b}"] = lambda c, n, o, a=a, b=b: [
                m - b if opt in fixed else m - a * mn for (m, _), (mn, _), opt in zip(c, n, o)]

    from clerk.scoring.mc import pick

    result = {"seed": args.seed, "split": "validation", "n_questions": {}, "accuracy": {},
              "seconds": round(time.perf_counter() - start, 1)}
    for system in args.systems:
        mine = [r for r in rows if r[0] == system]
        result["n_questions"][system] = len(mine)
        for name, rule in rules.items():
            by_type = defaultdict(list)
            for _s, qtype, gold, options, c, n, _p in mine:
                by_type[qtype].append(pick(rule(c, n, options)) == gold)
            acc = {t: round(sum(v) / len(v), 3) for t, v in sorted(by_type.items())}
            acc["all"] = round(sum(sum(v) for v in by_type.values()) / len(mine), 3)
            acc["worst type"] = min(v for t, v in acc.items() if t != "all")
            result["accuracy"].setdefault(system, {})[name] = acc
    result["rows"] = [{"system": r[0], "type": r[1], "gold": r[2], "options": r[3], "cond": r[4], "null": r[5], "persona": r[6]}
                      for r in rows]  # raw scores: (mean log-prob, tokens) per option, for further rules
    args.out.write_text(json.dumps(result) + "\n")  # one line: the raw rows are most of it
    for system, table in result["accuracy"].items():
        print(f"\n{system} ({result['n_questions'][system]} validation questions)")
        types = [t for t in next(iter(table.values())) if t not in ("all", "worst type")]
        print("rule".ljust(12), *(t[:10].rjust(10) for t in ["all", "worst type", *types]))
        for name, acc in table.items():
            print(name.ljust(12), *(f"{acc[t]:10.3f}" for t in ["all", "worst type", *types]))


if __name__ == "__main__":
    main()
