"""The ``clerk`` command line: the only entry point the Snakefile calls.

Every verb lives in the library module that owns the concept; this file only maps each verb to
that module (:data:`VERBS`) and imports the one module of the verb it runs, so that a job runs
its own stage's code and no other. A module takes part by defining ``register_cli(subparsers)``,
which adds its verb(s) with ``parser.set_defaults(func=main)``; ``main(args)`` builds the verb's
typed config dataclass from ``args`` and hands it to the library, which never sees ``argparse``.
What every verb shares (``--config JSON``, the precedence of defaults, ``--config`` and flags,
user errors as one line) is :mod:`clerk.command`.

A verb's rule declares as code inputs the modules its command imports, read from the source from
the verb's module (:mod:`clerk.provenance.code_inputs`); this file is not one of them: a verb
routed elsewhere changes those inputs, a verb renamed changes the rule's command. Modules keep
torch, transformers, trl and peft imports inside functions so ``clerk --help`` stays fast, and so
that :func:`~clerk.models.device.apply_reproducible_numerics` pins CPU kernel dispatch before
torch starts (``CLERK_NUMERICS=native`` leaves it to the libraries).

    clerk --help
    clerk generate --help
    clerk train --config '{"lr": 0.001, "max_steps": 8}' --max-steps 4 --sft S --model M --out O
"""

from __future__ import annotations

import argparse
import importlib
import sys
import typing
from collections.abc import Iterable

from clerk.command import add_config_option, apply_config_json, run
from clerk.errors import UserError

__all__ = ["VERBS", "apply_config_json", "given_flags", "main", "make_parser", "verb_parser"]

#: verb -> (the module whose ``register_cli`` adds it, its line in ``clerk --help``), in the
#: pipeline order ``clerk --help`` lists them. A module that registers a verb missing here, or
#: misses one listed here, is an error (:func:`make_parser`).
VERBS: dict[str, tuple[str, str]] = {
    "generate": ("clerk.generator.cli", "write synthetic persona timelines (JSON lines) with gold programs and MC questions"),
    "streams": ("clerk.streams.cli", "generate a foundational-vs-noise stream (SPEC §3)"),
    "eviction-study": ("clerk.streams.cli", "replay streams under eviction policies (SPEC §3)"),
    "build-sft": ("clerk.sft.cli", "turn training timelines into the chat-messages SFT dataset"),
    "materialize-model": ("clerk.models.cli", "turn a base-model spec into resources/models/<name>/ (safetensors + tokenizer + source.json)"),
    "train": ("clerk.train.cli", "LoRA SFT (TRL SFTTrainer + PEFT) of a base model on the CLERK SFT dataset"),
    "bench-train": ("clerk.train.cli", "benchmark training throughput per precision mode (fp32, bf16-frozen, bf16-autocast)"),
    "learning-curve": ("clerk.evaluate.curve", "validation op-F1 of a run's adapter snapshots (the learning curve)"),
    "evaluate": ("clerk.evaluate.cli", "replay timelines through memory systems; write predictions, ledger metrics and a summary"),
    "erasure": ("clerk.evaluate.cli", "the erasure study: replay forget timelines; leak rate and forgotten-fact accuracy per system"),
    "read-cost": ("clerk.evaluate.cli", "read tokens per question by session index for each memory view (tokenizer only)"),
    "bench-scoring": ("clerk.scoring.bench", "time shared-prefix vs naive multiple-choice scoring on a model"),
    "locomo": ("clerk.locomo.cli", "LoCoMo-MC10 zero-shot transfer: load, subset and evaluate memory systems"),
    "locomo-inspect": ("clerk.locomo.cli", "print conversations, sessions, turns and question counts per corrected category"),
    "table-locomo": ("clerk.report.locomo", "table 2: LoCoMo accuracy per system and category, aggregated over seeds"),
    "bench-locomo-prefix": ("clerk.locomo.cli", "prefill tokens and seconds per question for full-context reading with and without prefix reuse"),
    "render-paper": ("clerk.report.cli", "fill the paper template from numbers.json and includes"),
    "environment": ("clerk.report.cli", "Markdown table of code version, packages and device"),
    "table-systems": ("clerk.report.cli", "per-seed and seed-aggregated memory-system table (tables 1, 3)"),
    "table-eviction": ("clerk.report.cli", "eviction study aggregated over seeds (table 4)"),
    "table-erasure": ("clerk.report.cli", "erasure study aggregated over seeds (table 5)"),
    "table-read-cost": ("clerk.report.cli", "read tokens per question by session and view, over seeds"),
    "table-benchmarks": ("clerk.report.cli", "wall time, CPU time and memory per workflow stage"),
    "table-setup": ("clerk.report.cli", "the experimental setup as recorded in the result files"),
    "locomo-status": ("clerk.report.cli", "the paper paragraph stating that LoCoMo was not run"),
    "figure": ("clerk.report.cli", "one paper figure as PDF + PNG (deterministic bytes)"),
    "table-paired": ("clerk.report.paired", "paired differences clerk - every other system, with intervals"),
    "table-errors": ("clerk.report.errors", "where the policy fails: first error per session by op and by the line's wording"),
    "numbers": ("clerk.provenance.cli", "resolve paper/numbers.yaml into results/numbers.json"),
    "manifest": ("clerk.provenance.cli", "sha256 manifest of results/ with Snakemake's records"),
    "trace": ("clerk.provenance.cli", "walk a number or file back through rules and inputs"),
    "verify": ("clerk.provenance.cli", "re-hash the manifest and check every number in the paper"),
    "compare": ("clerk.provenance.cli", "shipped vs rerun: the paper's claims, then every paper number and table cell"),
    "forget": ("clerk.store.cli", "erase a subject's predicate (every value it held) or the whole subject from a store"),
    "stress-forget": ("clerk.store.cli", "race consolidation workers against forgetters on one store; count resurrections"),
}


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, ``clerk VERB: error: ...`` (argparse's own
    print the usage first); ``clerk VERB --help`` shows the usage."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def make_parser(suppress_defaults: bool = False, verbs: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The top-level parser: one sub-command per verb of :data:`VERBS`, each with ``--config``.

    Only the modules of ``verbs`` (every verb's when ``None``) are imported and register their
    verbs in full; every other verb is listed by name and help line only, for ``clerk --help``.
    With ``suppress_defaults`` no option has a default, so a parse holds only the flags given
    (:func:`given_flags`).

    Raises:
        ModuleNotFoundError: a verb's module does not exist (never hidden).
        RuntimeError: a module registers a verb :data:`VERBS` does not map to it, or misses one.
    """
    parser = _OneLineParser(
        prog="clerk",
        description="CLERK: fixed-budget write-time ledger memory. One verb per pipeline stage.",
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    modules = dict.fromkeys(VERBS[verb][0] for verb in (VERBS if verbs is None else verbs))
    for name in modules:
        before = set(sub.choices)
        importlib.import_module(name).register_cli(sub)
        added = set(sub.choices) - before
        listed = {verb for verb, (module, _) in VERBS.items() if module == name}
        if added != listed:
            raise RuntimeError(f"{name} registers the verbs {sorted(added)}, but clerk.cli.VERBS maps "
                               f"{sorted(listed)} to it")
    for verb, (_, line) in VERBS.items():
        if verb not in sub.choices:  # not loaded: a line of `clerk --help`, never parsed further
            sub.add_parser(verb, help=line, add_help=False)
    order = list(VERBS)
    sub._choices_actions.sort(key=lambda action: order.index(action.dest))
    for name in modules:
        for verb, (module, _) in VERBS.items():
            if module == name:
                add_config_option(sub.choices[verb], suppress_defaults)
    return parser


def verb_parser(parser: argparse.ArgumentParser, verb: str) -> argparse.ArgumentParser:
    """The sub-parser of ``verb``."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[verb]


def _chosen(argv: list[str]) -> list[str]:
    """The verb of a command line (its first word that is not an option), if it is one; else none."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    return [word] if word in VERBS else []


def given_flags(argv: list[str] | None) -> set[str]:
    """The option names (``dest``) given on the command line ``argv`` (not defaulted)."""
    argv = list(argv) if argv is not None else sys.argv[1:]
    parser = make_parser(suppress_defaults=True, verbs=_chosen(argv))
    return set(vars(parser.parse_args(argv))) - {"verb"}


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` and run the chosen verb (:func:`clerk.command.run`), importing only the
    module that owns it; user errors exit with status 2 and one message."""
    argv = list(argv) if argv is not None else sys.argv[1:]
    parser = make_parser(verbs=_chosen(argv))
    try:
        args = parser.parse_args(argv)
    except UserError as err:  # a flag's converter refused its text (e.g. --questions abc)
        print(f"clerk {' '.join(_chosen(argv)) or '?'}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    run(parser, args, given_flags(argv) if args.config_json is not None else set())


if __name__ == "__main__":
    main()
