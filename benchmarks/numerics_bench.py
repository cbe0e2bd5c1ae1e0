r"""Training, reading and writing throughput of each precision mode on this machine.

Extends the two benchmarks the package has (``clerk bench-train``: :func:`clerk.train.bench.bench_throughput`;
``clerk bench-scoring``: :func:`clerk.scoring.bench.bench_dtypes`) and prints one Markdown record:
the CPU model (``lscpu``), its bf16 units (:func:`clerk.models.device.bf16_units`), what ``auto``
resolves to here, then

* training tokens/s per mode (``fp32``, ``bf16-frozen``, ``bf16-autocast``), modes interleaved
  in ``--rounds`` rounds (A B C A B C), with the per-step training loss of each mode minus fp32's
  on the same batches (the first ``--steps + 1`` steps from the same seed);
* reading: MC questions/s of the shared-prefix scorer (10 options per question) and writing:
  greedy-decode tokens/s, per inference dtype (fp32, bf16), interleaved, with how often the
  bf16 reader picks the fp32 reader's option.

A benchmark, not a test: on a shared machine, read the ratios (and the CPU-time columns), not the
absolute speeds.

    python benchmarks/numerics_bench.py --model resources/cache/smollm2-135m --sft results/sft/137 \
        --steps 20 --rounds 2 --threads 1 --json /tmp/numerics.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path


def cpu_model() -> str:
    """``Model name`` from ``lscpu`` (or /proc/cpuinfo)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        from clerk.models.device import numerics_record

        return numerics_record()["cpu"]


def record_markdown(machine: dict, train: dict | None, read: dict | None) -> str:
    """The Markdown record of one run."""
    lines = [f"Measured {machine['date']} on {machine['cpu']} ({machine['cores']} cores), torch {machine['torch']}, "
             f"{machine['threads']} torch thread(s); ATen kernels {machine['bf16_units']['cpu_capability']}, "
             f"bf16 units: {'yes' if machine['bf16_units']['available'] else 'no'} "
             f"(amx_bf16 {machine['bf16_units']['amx_bf16']}, avx512_bf16 {machine['bf16_units']['avx512_bf16']}); "
             f"`--precision auto` resolves to `{machine['auto_precision']}`, `--dtype auto` to "
             f"`{machine['auto_dtype']}`. Load average at start: {machine['loadavg']}.", ""]
    if train:
        lines += [f"Training ({train['steps']} timed steps + 1 warm-up per run, {train['rounds']} round(s) interleaved, "
                  f"batch {train['batch_size']}, max length {train['max_length']}):", "",
                  "| mode | tokens | wall s | tokens/s | x fp32 | CPU s | tokens/CPU-s | x fp32 (CPU) | "
                  "loss - fp32: mean | mean abs | max abs |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for m in train["modes"]:
            r, d = train[m], train.get("loss_diff", {}).get(m, {})
            lines.append(f"| {m} | {r['tokens']} | {r['seconds']:.1f} | {r['tok_per_s']:.1f} | "
                         f"{train.get('ratio', {}).get(m, float('nan')):.2f} | {r['cpu_seconds']:.1f} | "
                         f"{r['tok_per_cpu_s']:.1f} | {train.get('cpu_ratio', {}).get(m, float('nan')):.2f} | "
                         f"{d.get('mean', float('nan')):+.4f} | {d.get('mean_abs', float('nan')):.4f} | "
                         f"{d.get('max_abs', float('nan')):.4f} |")
        lines.append("")
    if read:
        lines += [f"Reading ({read['cases']} questions x {read['options']} options, prompts of "
                  f"{read['prompt_tokens_mean']:.0f} tokens on average) and writing ({read['decode_prompts']} prompts "
                  f"in one batch, up to {read['max_new_tokens']} new tokens), {read['rounds']} round(s) interleaved:", "",
                  "| dtype | questions/s | x fp32 | same pick as fp32 | max score gap | decode tokens/s | x fp32 |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for d in read["dtypes"]:
            r, a = read[d], read["agreement"][d]
            dec = read["decode_ratio"][d]
            lines.append(f"| {d} | {r['questions_per_s']:.2f} | {read['ratio'][d]:.2f} | {a['same_pick']:.2f} | "
                         f"{a['max_abs_diff']:.3f} | {r['decode_tok_per_s'] or float('nan'):.1f} | "
                         f"{dec if dec is not None else float('nan'):.2f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="materialised base-model directory")
    p.add_argument("--sft", help="SFT DatasetDict directory (clerk build-sft); without it no training is timed")
    p.add_argument("--steps", type=int, default=20, help="timed training steps per run (default 20)")
    p.add_argument("--batch-size", type=int, default=4, help="training batch (default 4)")
    p.add_argument("--max-length", type=int, default=1024, help="training max length (default 1024)")
    p.add_argument("--modes", default="fp32,bf16-frozen,bf16-autocast", help="training modes (comma list)")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the modes (default 2)")
    p.add_argument("--cases", type=int, default=10, help="MC questions per dtype and round (default 10; 0 = skip)")
    p.add_argument("--decode-prompts", type=int, default=16, help="prompts decoded per dtype and round (default 16)")
    p.add_argument("--max-new-tokens", type=int, default=32, help="decode length cap (default 32)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--json", help="also write the numbers as JSON here")
    args = p.parse_args(argv)

    from clerk.models.device import apply_reproducible_numerics

    apply_reproducible_numerics()  # the environment `clerk` runs its verbs in (MKL_CBWR)
    import torch

    from clerk.models.device import bf16_units, resolve_inference_dtype, resolve_precision
    from clerk.scoring.bench import bench_dtypes
    from clerk.train.bench import bench_throughput

    torch.set_num_threads(args.threads)
    machine = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
               "cpu": cpu_model(), "cores": os.cpu_count(), "torch": torch.__version__, "threads": args.threads,
               "bf16_units": bf16_units(), "auto_precision": resolve_precision("auto", "cpu"),
               "auto_dtype": resolve_inference_dtype("auto", "cpu"), "loadavg": " ".join(map(str, os.getloadavg()))}
    read = None
    if args.cases:
        read = bench_dtypes(args.model, cases=args.cases, threads=args.threads, rounds=args.rounds,
                            decode_prompts=args.decode_prompts, max_new_tokens=args.max_new_tokens)
    train = None
    if args.sft:
        train = bench_throughput(args.model, args.sft, args.steps, args.batch_size, args.max_length,
                                 threads=args.threads, modes=tuple(args.modes.split(",")), rounds=args.rounds)
    print(record_markdown(machine, train, read))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine, "train": train, "read": read}, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
