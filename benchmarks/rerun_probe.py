"""Rerun probe (reproducing a run): what a model job computes, hashed bit for bit, under this process's settings.

One probe = one fresh process: the numeric settings under test (``ATEN_CPU_CAPABILITY``,
``MKL_CBWR``, ``ONEDNN_MAX_CPU_ISA``, ...) are environment variables that torch and its libraries
read once at start, so the caller sets them on the command line. Three stages, each the work of a
workflow job on small inputs:

* ``read``: MC log-likelihood scores (:func:`clerk.scoring.mc.score_options`) of the first
  ``--questions`` questions of a timeline file, over the gold ledger view (the oracle reader);
* ``write``: greedy CONSOLIDATE programs (:func:`clerk.models.decoding.greedy_generate`) for the
  first ``--writes`` sessions;
* ``train``: ``--train-steps`` LoRA steps of :func:`clerk.train.trainer.run_training`.

``compare`` prints, per probe and stage, whether it is bit-identical to the first probe, the
largest score difference, how many chosen options / programs differ, and the wall time.

    ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE python benchmarks/rerun_probe.py run \
        --model resources/models/smollm2-135m --timelines results/data/137/test.jsonl --out /tmp/a.json
    python benchmarks/rerun_probe.py compare /tmp/a.json /tmp/b.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

#: Environment variables recorded with every probe (read by torch, MKL, oneDNN, OpenMP at start).
ENV_VARS = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA",
            "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _questions(timelines: Path, limit: int) -> list[tuple[str, dict]]:
    """(gold ledger view text, question) pairs in file order, up to ``limit``."""
    from clerk.ledger import serialize

    out = []
    for line in timelines.read_text(encoding="utf-8").splitlines():
        for session in json.loads(line)["sessions"]:
            for q in session["questions"]:
                out.append((serialize(session["ledger_before"]), q))
                if len(out) == limit:
                    return out
    return out


def _sessions(timelines: Path, limit: int) -> list[dict]:
    out = []
    for line in timelines.read_text(encoding="utf-8").splitlines():
        out += json.loads(line)["sessions"]
        if len(out) >= limit:
            break
    return out[:limit]


def _read(model, tokenizer, args) -> dict:
    from clerk import prompts
    from clerk.models.loading import chat_prompt
    from clerk.scoring.mc import pick, score_options

    start, cpu, scores, chosen = time.perf_counter(), time.process_time(), [], []
    for view, q in _questions(Path(args.timelines), args.questions):
        row = score_options(model, tokenizer, chat_prompt(tokenizer, prompts.answer_messages(view, q["question"])),
                            q["options"])
        scores.append([float(s) for s in row])
        chosen.append(pick(row))
    return {"seconds": round(time.perf_counter() - start, 2), "cpu_seconds": round(time.process_time() - cpu, 2),
            "scores": scores, "chosen": chosen,
            "sha256": _sha(json.dumps(scores).encode())}


def _write(model, tokenizer, args) -> dict:
    from clerk import prompts
    from clerk.ledger import serialize
    from clerk.models.decoding import greedy_generate
    from clerk.models.loading import chat_prompt

    texts = [chat_prompt(tokenizer, prompts.consolidate_messages(
        serialize(s["ledger_before"]), s["index"], prompts.render_turns(s["turns"])))
        for s in _sessions(Path(args.timelines), args.writes)]
    start, cpu = time.perf_counter(), time.process_time()
    programs = greedy_generate(model, tokenizer, texts, args.max_new_tokens, batch_size=8)
    return {"seconds": round(time.perf_counter() - start, 2), "cpu_seconds": round(time.process_time() - cpu, 2),
            "programs": programs,
            "sha256": _sha(json.dumps(programs).encode())}


def _train(args) -> dict:
    from clerk.train.config import TrainConfig
    from clerk.train.trainer import run_training

    with tempfile.TemporaryDirectory() as tmp:
        cfg = TrainConfig(sft=args.train_sft, model=args.model, out=tmp, seed=137, lr=args.train_lr,
                          max_steps=args.train_steps, batch_size=1, grad_accum=2, max_length=1024,
                          logging_steps=1, save_steps=0, validation_loss=False, lora_dropout=0.05, snapshot_steps=0,
                          bf16=args.train_bf16, threads=args.threads,
                          modules_to_save=tuple(m for m in args.modules_to_save.split(",") if m))
        start, cpu = time.perf_counter(), time.process_time()
        run_training(cfg)
        seconds, cpu = round(time.perf_counter() - start, 2), round(time.process_time() - cpu, 2)
        rows = (Path(tmp) / "train_log.csv").read_text().splitlines()[1:]
        record = json.loads((Path(tmp) / "train_config.json").read_text())
        return {"seconds": seconds, "cpu_seconds": cpu, "losses": [r.split(",")[1] for r in rows], "bf16": record["bf16"],
                "sha256": _sha((Path(tmp) / "adapter_model.safetensors").read_bytes())}


def run(args) -> None:
    import torch

    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    if args.threads:
        torch.set_num_threads(args.threads)
    result = {"env": {k: os.environ.get(k) for k in ENV_VARS},
              "torch": {"version": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                        "threads": torch.get_num_threads(), "deterministic": args.deterministic},
              "dtype": args.dtype, "label": args.label, "stages": {}}
    stages = args.stages.split(",")
    if {"read", "write"} & set(stages):
        from clerk.models.loading import load_model

        model, tokenizer = load_model(args.model, args.adapter, device="cpu", dtype=args.dtype)
        if "read" in stages:
            result["stages"]["read"] = _read(model, tokenizer, args)
        if "write" in stages:
            result["stages"]["write"] = _write(model, tokenizer, args)
    if "train" in stages:
        result["stages"]["train"] = _train(args)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({s: {"sha256": v["sha256"][:12], "seconds": v["seconds"]} for s, v in result["stages"].items()}))


def _settings(probe: dict) -> str:
    env = ", ".join(f"{k}={v}" for k, v in probe["env"].items() if v and k != "PYTHONHASHSEED")
    return (probe["label"] or env or "(none)") + f" · {probe['dtype']} · {probe['torch']['threads']} thr" + (
        " · det" if probe["torch"]["deterministic"] else "")


def compare(paths: list[str]) -> None:
    """A Markdown table: every probe's stages against the first probe's."""
    probes = [json.loads(Path(p).read_text()) for p in paths]
    base = probes[0]
    print("| probe | stage | output sha256 | bit-identical to first | max abs diff to first | options / programs / losses differing | wall s | CPU s |")
    print("| :--- | :--- | :--- | :---: | ---: | ---: | ---: | ---: |")
    for probe in probes:
        for stage, got in probe["stages"].items():
            ref = base["stages"].get(stage)
            same = ref is not None and ref["sha256"] == got["sha256"]
            diff, differing = "", ""
            if ref is not None and stage == "read":
                diff = f"{max(abs(a - b) for ra, rb in zip(ref['scores'], got['scores']) for a, b in zip(ra, rb)):.2e}"
                differing = f"{sum(a != b for a, b in zip(ref['chosen'], got['chosen']))}/{len(got['chosen'])}"
            elif ref is not None and stage == "write":
                differing = f"{sum(a != b for a, b in zip(ref['programs'], got['programs']))}/{len(got['programs'])}"
            elif ref is not None and stage == "train":
                differing = f"{sum(a != b for a, b in zip(ref['losses'], got['losses']))}/{len(got['losses'])}"
                diff = f"{max(abs(float(a) - float(b)) for a, b in zip(ref['losses'], got['losses'])):.2e} (loss)"
            print(f"| {_settings(probe)} | {stage} | `{got['sha256'][:12]}` | {'yes' if same else '**no**'} | {diff} | {differing} | {got['seconds']} | {got.get('cpu_seconds', '')} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("run", help="one probe in this process")
    p.add_argument("--model", required=True)
    p.add_argument("--adapter", default=None)
    p.add_argument("--timelines", required=True)
    p.add_argument("--stages", default="read,write", help="comma list of read, write, train (default: read,write)")
    p.add_argument("--questions", type=int, default=12)
    p.add_argument("--writes", type=int, default=4)
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=48)
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--deterministic", action="store_true", help="torch.use_deterministic_algorithms(True)")
    p.add_argument("--train-sft", dest="train_sft", default=None)
    p.add_argument("--train-steps", dest="train_steps", type=int, default=3)
    p.add_argument("--train-lr", dest="train_lr", type=float, default=1e-3)
    p.add_argument("--train-bf16", dest="train_bf16", default="off", choices=("auto", "on", "off"))
    p.add_argument("--modules-to-save", dest="modules_to_save", default="")
    p.add_argument("--label", default="")
    p.add_argument("--out", required=True)
    c = sub.add_parser("compare", help="Markdown table of probes against the first")
    c.add_argument("probes", nargs="+")
    args = parser.parse_args(argv)
    run(args) if args.verb == "run" else compare(args.probes)


if __name__ == "__main__":
    sys.exit(main())
