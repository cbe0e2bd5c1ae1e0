"""Profile one `clerk` command under torch.profiler and summarise its time by op family.

    python benchmarks/profile_ops.py run --json OUT.json -- train --config ... --max-steps 50 ...
    python benchmarks/profile_ops.py summary OUT.json [OUT2.json ...]

`run` runs the clerk verb in this process (``clerk.cli.main``) under a CPU profiler and writes
every op's self time (``key_averages``), the process wall time, and the wall time of the
phases this script marks with ``record_function`` ranges (checkpoint saves, the dataloader's
batches, optimizer steps, decode and scoring calls; see ``_PHASES``). `summary` turns such a
file into the table of ``benchmarks/profile-fp32.md``: ATen ops grouped by family (self time, so
nothing is counted twice), and the time no op accounts for (Python, the Trainer's own work,
tokenisation outside torch) as the rest of the wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import re
import sys
import time
from pathlib import Path

# (family, regex over the ATen op name), first match wins; ops of no family go to "other ops".
FAMILIES: list[tuple[str, str]] = [
    ("GEMM / linear", r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_addmm_activation)$"),
    ("attention", r"scaled_dot_product|_flash_attention|_efficient_attention|softmax"),
    ("optimizer", r"^Optimizer\.|_foreach_|^aten::(lerp|addcmul|addcdiv|sqrt|_fused_adamw)"),
    ("loss / log-softmax", r"cross_entropy|nll_loss|log_softmax"),
    ("elementwise / casts", r"^aten::(add|add_|mul|mul_|sub|rsub|div|neg|pow|rsqrt|mean|silu|sigmoid|tanh|exp|"
                            r"to|_to_copy|copy_|clone|contiguous|cat|where|masked_fill|fill_|zero_|zeros|ones|"
                            r"empty|empty_like|zeros_like|ones_like|full|sum|index|index_select|embedding|"
                            r"embedding_dense_backward|argmax|max|cumsum|isin|gather|scatter|topk|sort|eq|ne|"
                            r"lt|gt|ge|le|clamp|norm|linalg_vector_norm|abs|maximum|minimum|cos|sin|tril|triu|"
                            r"arange|expand|_unsafe_view|view|reshape|transpose|t|permute|slice|select|unsqueeze|"
                            r"squeeze|as_strided|detach|alias|_reshape_alias|split|chunk|narrow|stack|"
                            r"set_|resize_|threshold_backward|silu_backward|sigmoid_backward|mul_backward)"),
    ("autograd backward nodes", r"Backward|backward|^autograd::"),
]
# Phases marked by wrapping these (module, object path) callables in a record_function range.
_PHASES: dict[str, tuple[str, str]] = {
    "phase: checkpoint save": ("transformers.trainer", "Trainer._save_checkpoint"),
    "phase: snapshot save": ("peft.peft_model", "PeftModel.save_pretrained"),
    "phase: dataloader batches": ("transformers.trainer", "Trainer.get_batch_samples"),
    "phase: training_step": ("transformers.trainer", "Trainer.training_step"),
    "phase: decode (greedy_generate)": ("clerk.models.decoding", "greedy_generate"),
    "phase: decode batch": ("clerk.models.decoding", "_greedy_batch"),
    "phase: tokenizer calls": ("transformers.tokenization_utils_base", "PreTrainedTokenizerBase.__call__"),
}


def family(name: str) -> str:
    for fam, pattern in FAMILIES:
        if re.search(pattern, name):
            return fam
    return "other ops"


def _wrap(module_name: str, path: str, label: str, tally: _Tally | None = None) -> None:
    """Wrap ``module.path`` so each call is a record_function range named ``label`` (and, given a
    ``tally``, timed into it)."""
    import torch

    try:
        owner = importlib.import_module(module_name)
    except ImportError:
        return
    *parents, attr = path.split(".")
    for part in parents:
        owner = getattr(owner, part, None)
        if owner is None:
            return
    original = getattr(owner, attr, None)
    if original is None:
        return

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            with torch.profiler.record_function(label):
                return original(*args, **kwargs)
        finally:
            if tally is not None:
                tally.add(label, time.perf_counter() - t0)

    setattr(owner, attr, wrapped)
    if not parents:  # a module-level function: rebind it where other clerk modules imported it
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("clerk.") and getattr(mod, attr, None) is original:
                setattr(mod, attr, wrapped)


class _Tally:
    """Per-name call counts and seconds, for the light mode (no torch.profiler trace is kept)."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.count[name] = self.count.get(name, 0) + 1
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds


def _light_mode(tally: _Tally):
    """A dispatch mode that times every ATen op it sees (an op's time includes what it dispatches
    to below the mode, which the mode does not see again: self time, as the profiler's)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Timed(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            t0 = time.perf_counter()
            out = func(*args, **(kwargs or {}))
            tally.add(f"aten::{func.overloadpacket.__name__}", time.perf_counter() - t0)
            return out

    return Timed()


def run(json_out: Path, argv: list[str], light: bool = False) -> None:
    """Run ``clerk <argv>`` under torch.profiler, or with ``light`` under a dispatch mode that only
    tallies op times (torch.profiler's trace of a whole evaluation job needs many GB to summarise)."""
    import torch

    from clerk.cli import main

    tally = _Tally() if light else None
    for label, (module_name, path) in _PHASES.items():
        _wrap(module_name, path, label, tally)
    start = time.perf_counter()
    if light:
        with _light_mode(tally), contextlib.suppress(SystemExit):
            main(argv)
        wall = time.perf_counter() - start
        ops = [{"name": k, "count": tally.count[k], "self_us": 0.0 if k.startswith("phase: ") else v * 1e6,
                "total_us": v * 1e6} for k, v in tally.seconds.items()]
    else:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            with contextlib.suppress(SystemExit):
                main(argv)
        wall = time.perf_counter() - start
        ops = [{"name": e.key, "count": e.count, "self_us": e.self_cpu_time_total, "total_us": e.cpu_time_total}
               for e in prof.key_averages()]
    json_out.write_text(json.dumps({"argv": argv, "wall_s": wall, "ops": ops}, indent=1) + "\n")
    print(f"profile: {wall:.1f} s wall, {len(ops)} op names -> {json_out}", file=sys.stderr)


def summarise(data: dict) -> str:
    wall_us = data["wall_s"] * 1e6
    shares: dict[str, float] = {}
    for op in data["ops"]:
        if op["name"].startswith("phase: ") or op["name"].startswith("ProfilerStep"):
            continue
        fam = family(op["name"])
        shares[fam] = shares.get(fam, 0.0) + op["self_us"]
    accounted = sum(shares.values())
    shares["outside ops (Python, Trainer, tokenizer, I/O)"] = max(wall_us - accounted, 0.0)
    lines = ["| op family (self time) | s | share of wall |", "| --- | ---: | ---: |"]
    for fam, us in sorted(shares.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {fam} | {us / 1e6:.1f} | {100 * us / wall_us:.1f} % |")
    lines += ["", "| phase (inclusive time) | calls | s | share of wall |", "| --- | ---: | ---: | ---: |"]
    for op in sorted((o for o in data["ops"] if o["name"].startswith("phase: ")), key=lambda o: -o["total_us"]):
        lines.append(f"| {op['name'][7:]} | {op['count']} | {op['total_us'] / 1e6:.1f} | "
                     f"{100 * op['total_us'] / wall_us:.1f} % |")
    top = sorted(data["ops"], key=lambda o: -o["self_us"])[:12]
    lines += ["", "| top ops by self time | calls | s |", "| --- | ---: | ---: |"]
    lines += [f"| `{o['name']}` | {o['count']} | {o['self_us'] / 1e6:.1f} |" for o in top]
    return f"wall {data['wall_s']:.1f} s\n\n" + "\n".join(lines)


# SmolLM2-135M's linear shapes (in, out) per decoder layer, and the tied LM head.
GEMM_SHAPES = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152)]


def gemm_rate(tokens: int, threads: int, repeats: int = 50) -> str:
    """fp32 GFLOP/s of ``x @ W.T`` at the model's shapes for ``tokens`` rows (the peak the profiles
    are measured against): the best and the median of ``repeats`` after one warm-up (on a shared
    machine the best is the machine's rate, the median what a job got)."""
    import statistics

    import torch

    torch.set_num_threads(threads)
    rows = ["| tokens | in x out | GFLOP/s (best) | GFLOP/s (median) |", "| ---: | --- | ---: | ---: |"]
    for k, n in GEMM_SHAPES:
        x, w = torch.randn(tokens, k), torch.randn(n, k)
        torch.nn.functional.linear(x, w)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            torch.nn.functional.linear(x, w)
            times.append(time.perf_counter() - t0)
        flop = 2 * tokens * k * n / 1e9
        rows.append(f"| {tokens} | {k} x {n} | {flop / min(times):.1f} | {flop / statistics.median(times):.1f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_run = sub.add_parser("run", help="run a clerk verb under the profiler")
    p_run.add_argument("--json", type=Path, required=True)
    p_run.add_argument("--light", action="store_true", help="tally op times with a dispatch mode instead of torch.profiler")
    p_run.add_argument("clerk_argv", nargs=argparse.REMAINDER)
    p_sum = sub.add_parser("summary", help="op-family table of profile JSON files")
    p_sum.add_argument("files", type=Path, nargs="+")
    p_gemm = sub.add_parser("gemm", help="fp32 GEMM rate at the model's shapes")
    p_gemm.add_argument("--tokens", type=int, nargs="+", default=[209, 300])
    p_gemm.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.cmd == "gemm":
        for tokens in args.tokens:
            print(gemm_rate(tokens, args.threads) + "\n")
    elif args.cmd == "run":
        run(args.json, args.clerk_argv[1:] if args.clerk_argv[:1] == ["--"] else args.clerk_argv, args.light)
    else:
        for path in args.files:
            print(f"## {path.name}\n\n{summarise(json.loads(path.read_text()))}\n")


if __name__ == "__main__":
    main()
