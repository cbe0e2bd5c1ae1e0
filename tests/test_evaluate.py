"""Tests for clerk.evaluate: schemas, the runner end to end on a scratch model, robustness to
garbage writers, the exact rule reader on the oracle, CLI errors and the read-cost probe."""

from __future__ import annotations

import csv
import hashlib
import json
import random
from pathlib import Path

import pytest
from doctest_kit import run_package_doctests

from clerk import cli
from clerk import ledger as L
from clerk.evaluate.runner import evaluate
from clerk.evaluate.schemas import SCHEMAS, validate_record
from clerk.generator.files import write_timelines
from clerk.generator.timelines import generate
from clerk.memory import MEMORY_REGISTRY, EvalConfig, LedgerSystem, Proposal, Registry, Runtime
from clerk.memory.ledger_system import ModelLedgerSystem
from clerk.memory.registry import SYNTHETIC

ALL = ["clerk", "oracle", "prompted-ledger", "full", "window", "rag", "add-only", "null"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """Timelines (train for the tokenizer, test for evaluation), a scratch model and a LoRA adapter."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from clerk.models.materialize import materialize
    from clerk.models.spec import ModelSpec

    root = tmp_path_factory.mktemp("eval")
    write_timelines(root / "train.jsonl", generate(5, "train", personas=3, sessions=4, budget=6))
    write_timelines(root / "test.jsonl", generate(5, "test", personas=2, sessions=3, budget=6))
    materialize(ModelSpec(kind="scratch", timelines=str(root / "train.jsonl"), vocab_size=400, hidden=32, layers=1,
                          heads=2, intermediate=64, max_positions=2048, seed=0), root / "model")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(root / "model")
    # init_lora_weights=False: a non-zero adapter, so adapter and base readers really differ.
    peft = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"],
                                            init_lora_weights=False))
    peft.save_pretrained(root / "adapter")
    return root


def _cli(*argv: str) -> None:
    cli.main([str(a) for a in argv])


@pytest.fixture(scope="module")
def full_run(workdir) -> Path:
    """One `clerk evaluate` over every system with the MC reader."""
    out = workdir / "run_all"
    _cli("evaluate", "--timelines", workdir / "test.jsonl", "--model", workdir / "model", "--adapter",
         workdir / "adapter", "--systems", *ALL, "--out", out, "--max-new-tokens", "24", "--batch-size", "2",
         "--max-read-tokens", "200", "--teacher-forced", "clerk", "prompted-ledger", "--quiet")
    return out


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_doctests():
    """The >>> examples of every clerk.evaluate module hold."""
    result = run_package_doctests("clerk.evaluate")
    assert result.attempted > 0 and result.failed == 0


class TestValidateRecord:
    def test_extra_field(self):
        """An unexpected field is named."""
        row = {name: None for name in SCHEMAS["metrics"]} | {"x": 1}
        with pytest.raises(ValueError) as err:
            validate_record("metrics", row)
        assert str(err.value) == "metrics record: unexpected field(s) ['x']"

    def test_wrong_type(self):
        """A field of the wrong type is named with the allowed types; bool is not an int."""
        row = {"schema": "s", "input": {}, "config": {}, "versions": {}, "systems": {}, "wall_seconds": True}
        with pytest.raises(ValueError) as err:
            validate_record("metrics", row)
        assert str(err.value) == "metrics record: field 'wall_seconds' must be float, got bool"


class TestEvaluateEndToEnd:
    def test_files_and_schemas(self, full_run):
        """All three files exist and every record matches its schema."""
        for row in _rows(full_run / "predictions.jsonl"):
            validate_record("predictions", row)
        for row in _rows(full_run / "ledgers.jsonl"):
            validate_record("ledgers", row)
        metrics = json.loads((full_run / "metrics.json").read_text())
        validate_record("metrics", metrics)
        for record in metrics["systems"].values():
            validate_record("metrics.system", record)
        assert list(metrics["systems"]) == ALL

    def test_row_counts(self, full_run, workdir):
        """One prediction per question x system; one ledger row per session x persona x ledger system."""
        timelines = [json.loads(x) for x in (workdir / "test.jsonl").read_text().splitlines()]
        n_q = sum(len(s["questions"]) for tl in timelines for s in tl["sessions"])
        n_s = sum(len(tl["sessions"]) for tl in timelines)
        assert len(_rows(full_run / "predictions.jsonl")) == n_q * len(ALL)
        ledger_rows = _rows(full_run / "ledgers.jsonl")
        assert len(ledger_rows) == n_s * 3
        assert sorted({r["system"] for r in ledger_rows}) == ["clerk", "oracle", "prompted-ledger"]
        metrics = json.loads((full_run / "metrics.json").read_text())
        assert all(m["n_questions"] == n_q for m in metrics["systems"].values())

    def test_provenance(self, full_run, workdir):
        """metrics.json records the input sha256, the config, the versions and the readers."""
        metrics = json.loads((full_run / "metrics.json").read_text())
        assert metrics["input"]["sha256"] == hashlib.sha256((workdir / "test.jsonl").read_bytes()).hexdigest()
        assert metrics["input"]["splits"] == ["test"] and metrics["input"]["seeds"] == [5]
        assert metrics["config"]["systems"] == ALL and metrics["config"]["max_read_tokens"] == 200
        assert set(metrics["versions"]) == {"clerk", *ALL}
        assert metrics["config"]["reader_model"] == "adapter" and metrics["config"]["constrained"] is True
        readers = {name: m["reader"] for name, m in metrics["systems"].items()}
        assert readers == {name: {"method": "mc", "model": "adapter"} for name in ALL}  # one reader for every system

    def test_oracle_is_exact(self, full_run):
        """The oracle's ledger matches gold after every session and its ops score 1.0."""
        m = json.loads((full_run / "metrics.json").read_text())["systems"]["oracle"]
        assert (m["state_exact_rate"], m["state_f1_mean"], m["op"]["f1"], m["invalid_op_rate"]) == (1.0, 1.0, 1.0, 0.0)
        assert m["parse_failure_rate"] == 0.0 and m["write_tokens_mean"] == 0.0

    def test_model_writers_measured(self, full_run):
        """Model writers report generated tokens within the cap, and the budget always holds."""
        metrics = json.loads((full_run / "metrics.json").read_text())["systems"]
        for name in ("clerk", "prompted-ledger"):
            assert 0 < metrics[name]["write_tokens_mean"] <= 24
            assert metrics[name]["op"] is not None and 0 <= metrics[name]["state_f1_mean"] <= 1
        assert metrics["full"]["op"] is None and metrics["full"]["write_tokens_mean"] == 0.0

    def test_read_costs(self, full_run):
        """null reads nothing; full is truncated at the cap and reads more than the ledger."""
        metrics = json.loads((full_run / "metrics.json").read_text())["systems"]
        assert metrics["null"]["read_tokens_mean"] == 0.0
        assert metrics["full"]["truncated_rate"] > 0 and metrics["oracle"]["truncated_rate"] == 0.0
        rows = [r for r in _rows(full_run / "predictions.jsonl") if r["system"] == "full"]
        assert max(r["read_tokens"] for r in rows) <= 200
        assert metrics["full"]["read_tokens_mean"] > metrics["window"]["read_tokens_mean"] * 0.99

    def test_predictions_deterministic(self, full_run, workdir):
        """Re-running two systems in process reproduces their prediction rows exactly."""
        from clerk.generator.files import load_timelines

        rt = Runtime(EvalConfig(max_read_tokens=200), model_dir=str(workdir / "model"), adapter_dir=str(workdir / "adapter"))
        preds, _, _, _ = evaluate(load_timelines(workdir / "test.jsonl"), ["rag", "full"], rt, progress=False)
        first = [r for r in _rows(full_run / "predictions.jsonl") if r["system"] in ("rag", "full")]
        key = lambda r: (r["system"], r["session"], r["persona"], r["q"])  # noqa: E731
        assert sorted(first, key=key) == sorted(preds, key=key)


class TestProgramsFile:
    def test_one_line_per_write_of_each_model_writer(self, full_run, workdir):
        """programs.jsonl.gz holds one closed-loop line per session x persona of each model writer (not
        the oracle) plus one marked line per teacher-forced rewrite, sorted; every record fits its
        schema and its ledger is the exact serialization of a valid ledger."""
        from clerk.evaluate.programs import PROGRAMS_FILE, read_programs

        rows = read_programs(full_run / PROGRAMS_FILE)
        metrics = json.loads((full_run / "metrics.json").read_text())["systems"]
        timelines = [json.loads(x) for x in (workdir / "test.jsonl").read_text().splitlines()]
        n_s = sum(len(tl["sessions"]) for tl in timelines)
        for row in rows:
            validate_record("programs", row)
        closed = [r for r in rows if not r["teacher_forced"]]
        assert sorted({r["system"] for r in rows}) == ["clerk", "prompted-ledger"]
        for name in ("clerk", "prompted-ledger"):
            mine = [r for r in closed if r["system"] == name]
            keys = {(r["persona"], r["session"]) for r in mine}
            assert len(mine) == len(keys) == n_s
            forced = [r for r in rows if r["system"] == name and r["teacher_forced"]]
            assert len(forced) == metrics[name]["teacher_forced_writes"] and all(r["ledger"] is None for r in forced)
        order = [(r["system"], r["persona"], r["session"], r["teacher_forced"]) for r in rows]
        assert order == sorted(order)
        by_key = {(r["persona"], r["session"]): r for r in closed if r["system"] == "clerk"}
        for tl in timelines:
            for session in tl["sessions"]:
                ledger = L.deserialize(by_key[(tl["name"], session["index"])]["ledger"])
                assert len(ledger) == tl["budget"]
                L.validate_ledger(ledger)

    def test_verdicts_agree_with_metrics(self, full_run):
        """The closed-loop verdicts count exactly the invalid ops of ledgers.jsonl and metrics.json
        (n_invalid, invalid_op_rate, invalid_reasons); ops and verdicts pair one to one."""
        from clerk.evaluate.programs import PROGRAMS_FILE, read_programs

        rows = read_programs(full_run / PROGRAMS_FILE)
        ledger_rows = {(r["system"], r["persona"], r["session"]): r for r in _rows(full_run / "ledgers.jsonl")}
        metrics = json.loads((full_run / "metrics.json").read_text())["systems"]
        for name in ("clerk", "prompted-ledger"):
            mine = [r for r in rows if r["system"] == name and not r["teacher_forced"]]
            counts: dict[str, int] = {}
            for row in mine:
                assert len(row["ops"]) == len(row["verdicts"]) and set(row["verdicts"]) <= {"applied", *L.REJECTION_CODES}
                rejected = [v for v in row["verdicts"] if v != "applied"]
                written = ledger_rows[(name, row["persona"], row["session"])]
                assert (len(row["ops"]), len(rejected)) == (written["n_ops"], written["n_invalid"])
                assert isinstance(row["text"], str)
                for code in rejected:
                    counts[code] = counts.get(code, 0) + 1
            m = metrics[name]
            assert m["invalid_reasons"] == {c: counts[c] for c in L.REJECTION_CODES if c in counts}
            assert sum(counts.values()) / m["n_ops"] == m["invalid_op_rate"]
        assert metrics["oracle"]["invalid_reasons"] == {} and metrics["full"]["invalid_reasons"] is None

    def test_no_model_writer_no_lines(self, workdir, tmp_path):
        """A run without model writers writes the file with no line."""
        from clerk.evaluate.programs import PROGRAMS_FILE, read_programs

        _cli("evaluate", "--timelines", workdir / "test.jsonl", "--model", workdir / "model", "--systems", "oracle",
             "--reader", "rule", "--out", tmp_path / "o", "--quiet")
        assert read_programs(tmp_path / "o" / PROGRAMS_FILE) == []


class Sloppy(ModelLedgerSystem):
    """A model writer without a model: it writes the gold program for its own ledger in the program
    language, then three lines the reducer rejects (an UPDATE of a key no slot holds, an ADD of a
    key it holds after the gold program, a line of no form), and compiles its text as a model
    writer does."""

    version = "test"
    writer_kind = "base"

    def propose(self, states, timelines, sessions):
        from clerk.generator.gold import gold_program
        from clerk.program import compile_program, render_program

        out = []
        for state, tl, session in zip(states, timelines, sessions):
            program = gold_program(state, session["events"], tl["name"], session["index"])
            after, _ = L.reduce(state, program, session["index"])
            held = [slot["p"] for slot in L.occupied(after)]
            lines = [render_program(state, program)] if program else []
            lines += ["UPDATE no_such_key x", *([f"ADD {held[0]} again"] if held else []), "please remember this"]
            text = "\n".join(lines)
            compiled = compile_program(text, state, tl["name"], session["index"])
            out.append(Proposal(text, compiled.program, compiled.parse_failed, len(lines)))
        return out


class TestProgramsOfASloppyWriter:
    def test_records_and_counts(self, workdir, tmp_path):
        """Rejected lines show in the records as their codes, at their positions; the counts of
        metrics (invalid_reasons, n_invalid, invalid_op_rate) are the records' verdicts; the file
        round-trips the records in order."""
        from clerk.evaluate.programs import read_programs, write_programs

        local = Registry()
        local.register("sloppy", order=1, benchmarks=(SYNTHETIC,))(Sloppy)
        timelines = generate(11, "test", personas=3, sessions=4, budget=6)
        rt = Runtime(EvalConfig(reader="rule"), model_dir=str(workdir / "model"))
        _, rows, summary, programs = evaluate(timelines, ["sloppy"], rt, registry=local, progress=False)
        assert len(programs) == len(rows) == 12 and not any(r["teacher_forced"] for r in programs)
        ledgers = {(r["persona"], r["session"]): r for r in rows}
        counts: dict[str, int] = {}
        for record in programs:
            row = ledgers[(record["persona"], record["session"])]
            rejected = [v for v in record["verdicts"] if v != "applied"]
            assert (len(record["ops"]), len(rejected)) == (row["n_ops"], row["n_invalid"])
            assert record["ops"][-1] == "please remember this" and record["verdicts"][-1] == "unparsed_line"
            assert "unknown_key" in rejected and record["text"].splitlines()[-1] == "please remember this"
            for code in rejected:
                counts[code] = counts.get(code, 0) + 1
        m = summary["sloppy"]
        assert m["invalid_reasons"] == {"unparsed_line": 12, "unknown_key": 12, "key_held": counts["key_held"]}
        assert counts["key_held"] > 0 and sum(counts.values()) / m["n_ops"] == m["invalid_op_rate"]
        write_programs(tmp_path / "p.jsonl.gz", programs[::-1])
        first = (tmp_path / "p.jsonl.gz").read_bytes()
        assert read_programs(tmp_path / "p.jsonl.gz") == sorted(
            programs, key=lambda r: (r["system"], r["persona"], r["session"], r["teacher_forced"]))
        write_programs(tmp_path / "p.jsonl.gz", programs)
        assert (tmp_path / "p.jsonl.gz").read_bytes() == first  # same records, same bytes


class TestBaseReaderUnconstrained:
    def test_one_base_reader_and_free_writers(self, workdir, tmp_path):
        """--reader-model base reads every system with the base model (no adapter needed without clerk);
        --no-constrained is recorded in the config."""
        out = tmp_path / "run"
        _cli("evaluate", "--timelines", workdir / "test.jsonl", "--model", workdir / "model", "--systems", "oracle",
             "prompted-ledger", "full", "--reader-model", "base", "--no-constrained", "--max-new-tokens", "12",
             "--out", out, "--quiet", "--threads", "1")
        metrics = json.loads((out / "metrics.json").read_text())
        assert (metrics["config"]["reader_model"], metrics["config"]["constrained"]) == ("base", False)
        assert {m["reader"]["model"] for m in metrics["systems"].values()} == {"base"}
        assert {r["reader"] for r in _rows(out / "predictions.jsonl")} == {"base"}


class TestRunArgs:
    def _args(self, *extra):
        import argparse

        from clerk.evaluate.cli import add_run_args

        p = argparse.ArgumentParser()
        add_run_args(p)
        return p.parse_args(["--timelines", "t", "--model", "m", "--systems", "oracle", "--out", "o", *extra])

    def test_runtime_from_args(self):
        """The shared run flags become the Runtime's EvalConfig, model and adapter directories, and
        the catalogue's keys for constrained ADDs."""
        from clerk.evaluate.cli import runtime_from_args
        from clerk.evaluate.runner import catalogue_keys

        rt = runtime_from_args(self._args("--adapter", "a", "--reader-model", "base", "--reader-pmi", "0.25",
                                          "--reader-adapter", "r", "--no-constrained",
                                          "--window-k", "2", "--rag-k", "5", "--max-read-tokens", "99",
                                          "--add-only-budget", "40", "--max-new-tokens", "7", "--batch-size", "3",
                                          "--reader", "rule", "--dtype", "float32"))
        assert rt.config == EvalConfig(window_k=2, rag_k=5, max_new_tokens=7, batch_size=3, reader="rule",
                                       reader_model="base", reader_pmi=0.25, constrained=False, max_read_tokens=99,
                                       add_only_budget=40, dtype="float32")
        assert (rt.model_dir, rt.adapter_dir, rt.reader_adapter_dir) == ("m", "a", "r")
        assert rt.predicates == catalogue_keys(None) and "job" in rt.predicates

    def test_defaults_are_evalconfigs(self):
        """Without flags the run gets EvalConfig's defaults (constrained, the adapter reader)."""
        from clerk.evaluate.cli import runtime_from_args

        assert runtime_from_args(self._args()).config == EvalConfig()

    def test_runners_take_a_typed_config_not_argparse(self):
        """The runners import no CLI module (no circle): they take an EvaluateConfig / ErasureConfig."""
        import inspect

        from clerk.evaluate import erasure, runner

        for module in (runner, erasure):
            assert "clerk.evaluate.cli" not in inspect.getsource(module) and "argparse" not in inspect.getsource(module)
        assert "EvaluateConfig" in str(inspect.signature(runner.run_evaluate).parameters["cfg"].annotation)
        assert "ErasureConfig" in str(inspect.signature(erasure.run_erasure).parameters["cfg"].annotation)

    def test_erasure_shares_the_flags(self):
        """clerk erasure takes evaluate's run flags, but the write-only and teacher-forced scoring
        only clerk evaluate does, plus its own --ignore-forget."""
        import argparse

        from clerk.evaluate import cli as eval_cli

        sub = argparse.ArgumentParser().add_subparsers()
        eval_cli.register_cli(sub)

        def options(verb):
            return {a.dest for a in sub.choices[verb]._actions} - {"help"}

        evaluate_flags, erasure_flags = options("evaluate"), options("erasure")
        assert erasure_flags - evaluate_flags == {"ignore_forget"}
        assert evaluate_flags - erasure_flags == {"write_only", "teacher_forced"}
        assert {"reader_model", "reader_adapter", "reader_pmi", "constrained", "phrasings"} <= evaluate_flags


class Garbage(LedgerSystem):
    """A writer emitting random bytes, invalid ops, an unhashable op kind, deep nesting or 300 ADDs."""

    version = "test"

    def propose(self, states, timelines, sessions):
        out = []
        for tl, session in zip(timelines, sessions):
            rng = random.Random(f"{tl['name']}/{session['index']}")  # derived seed: deterministic
            kind = rng.randrange(5)
            if kind == 0:
                text = bytes(rng.randrange(256) for _ in range(200)).decode("latin-1")
            elif kind == 1:
                text = '[{"op":"EVICT","i":-1},{"op":"UPDATE","i":0,"s":1},{"op":"TOMBSTONE","i":"0"},7,null]'
            elif kind == 2:
                text = 'sure: [{"op":["ADD"]},{"op":{}}]'
            elif kind == 3:
                text = "[" * 3000 + "]" * 3000
            else:
                text = L.dumps([{"op": "ADD", "s": tl["name"], "p": f"p{k}", "o": "x"} for k in range(300)])
            parsed = L.parse_program(text)
            out.append(Proposal(text, parsed.program, parsed.failed, len(text)))
        return out


class TestGarbageWriter:
    def test_never_crashes_and_is_measured(self, workdir):
        """Garbage output never breaks the budget; it shows up as parse failures and invalid ops."""
        local = Registry()
        local.register("garbage", order=1, benchmarks=(SYNTHETIC,))(Garbage)
        tok_dir = workdir / "model"
        from transformers import AutoTokenizer

        timelines = generate(7, "test", personas=4, sessions=6, budget=5)
        rt = Runtime(EvalConfig(reader="rule"), tokenizer=AutoTokenizer.from_pretrained(tok_dir), context_tokens=10**9)
        preds, ledger_rows, summary, programs = evaluate(timelines, ["garbage"], rt, registry=local, progress=False)
        assert "garbage" not in MEMORY_REGISTRY.names()
        for row in ledger_rows:
            validate_record("ledgers", row)
        validate_record("metrics.system", summary["garbage"])
        m = summary["garbage"]
        assert m["n_writes"] == 24 and m["invalid_op_rate"] > 0.5
        assert 0 < m["parse_failure_rate"] < 1
        assert max(r["n_ops"] for r in ledger_rows) == 300
        assert all(r["n_invalid"] <= r["n_ops"] for r in ledger_rows)
        assert sum(m["invalid_reasons"].values()) == sum(r["n_invalid"] for r in ledger_rows)
        assert {"not_an_object", "unknown_op", "budget_full"} <= set(m["invalid_reasons"])
        assert programs == []  # no writer_kind: not a model writer, so no programs lines
        assert len(preds) == sum(len(s["questions"]) for tl in timelines for s in tl["sessions"])


class Drifting(ModelLedgerSystem):
    """A model writer without a model, as greedy decoding is: its program is a function of its
    prompt text (the serialized ledger and the session's lines). It writes the gold program for
    its own ledger (``gold_program``), but for one prompt in eight it drops the last op (a miss,
    so its ledger drifts) and for three in eight it evicts and re-adds a true fact it keeps (the
    same facts, other bookkeeping: ``uses``, ``born`` and ``t`` differ from gold). Every prompt it
    is given is recorded in ``PROMPTS`` as (persona, session, prompt text, ledger)."""

    version = "test"
    writer_kind = "base"
    PROMPTS: list[tuple[str, int, str, list]] = []

    def prompt(self, state, session):
        from clerk.models.loading import chat_prompt

        return chat_prompt(self.rt.tokenizer, self.messages(state, session))

    def program(self, state, tl, session):
        from clerk.generator.gold import gold_program

        text = self.prompt(state, session)
        pick = int(hashlib.sha256(text.encode()).hexdigest(), 16) % 8
        program = gold_program(state, session["events"], tl["name"], session["index"])
        if pick == 0:
            return program[:-1]
        work, _ = L.reduce(state, program, session["index"])
        kept = [slot for slot in work if not L.is_free(slot) and slot["v"] == 1]
        if pick <= 3 and kept:
            slot = kept[len(text) % len(kept)]
            return program + [{"op": "EVICT", "i": slot["i"]}, {"op": "ADD", "s": slot["s"], "p": slot["p"], "o": slot["o"]}]
        return program

    def propose(self, states, timelines, sessions):
        out = []
        for state, tl, session in zip(states, timelines, sessions):
            self.PROMPTS.append((tl["name"], session["index"], self.prompt(state, session), state))
            out.append(Proposal("", self.program(state, tl, session)))
        return out


class TestTeacherForced:
    def test_model_writers_scored_both_ways(self, full_run):
        """clerk and prompted-ledger get teacher-forced op scores beside the closed-loop ones; the
        oracle and the transcript systems get none; a write against the gold ledger is reused, so
        its teacher-forced scores equal its closed-loop ones."""
        metrics = json.loads((full_run / "metrics.json").read_text())
        assert metrics["config"]["teacher_forced"] == ["clerk", "prompted-ledger"]
        rows = _rows(full_run / "ledgers.jsonl")
        for name, m in metrics["systems"].items():
            mine = [r for r in rows if r["system"] == name]
            if name in ("clerk", "prompted-ledger"):
                assert set(m["op_teacher_forced"]["by_type"]) == {"ADD", "UPDATE", "TOMBSTONE", "EVICT"}
                assert m["teacher_forced_writes"] == sum(r["drifted"] for r in mine) > 0
                assert m["teacher_forced_seconds"] > 0 and m["drift_rate"] == m["teacher_forced_writes"] / len(mine)
                tf = [(r["op_tf_tp"], r["op_tf_fp"], r["op_tf_fn"]) for r in mine]
                assert tuple(map(sum, zip(*tf))) == tuple(m["op_teacher_forced"][k] for k in ("tp", "fp", "fn"))
                for r in mine:
                    if not r["drifted"]:
                        assert {k: r[f"op_tf{k[2:]}"] for k in r if k.startswith("op_") and not k.startswith("op_tf")} \
                            == {k: r[k] for k in r if k.startswith("op_") and not k.startswith("op_tf")}
            else:
                assert (m["op_teacher_forced"], m["teacher_forced_writes"], m["teacher_forced_seconds"]) == (None,) * 3
                assert all(r["op_tf_f1"] is None for r in mine)
        assert metrics["systems"]["oracle"]["drift_rate"] == 0.0 and metrics["systems"]["full"]["drift_rate"] is None

    def test_reuse_is_exact_and_only_drifted_sessions_are_rewritten(self, workdir):
        """The closed-loop write is reused exactly where its prompt text is the teacher-forced one;
        every other session is written again from the gold ledger, and the scores equal those of
        writing every session from the gold ledger."""
        from clerk.metrics import micro_op_scores, op_scores, state_f1

        local = Registry()
        local.register("drifting", order=1, benchmarks=(SYNTHETIC,))(Drifting)
        timelines = generate(13, "test", personas=6, sessions=6, budget=5, evict_personas=2)
        rt = Runtime(EvalConfig(reader="rule", batch_size=4, teacher_forced=("drifting",)),
                     model_dir=str(workdir / "model"))
        Drifting.PROMPTS.clear()
        _, rows, summary, programs = evaluate(timelines, ["drifting"], rt, registry=local, progress=False)
        writer = Drifting(rt)
        seen: dict[tuple, list[str]] = {}
        for persona, index, text, _ in Drifting.PROMPTS:
            seen.setdefault((persona, index), []).append(text)
        states: dict[tuple, list] = {}  # the closed-loop ledgers: each session's first write
        for persona, index, _, state in Drifting.PROMPTS:
            states.setdefault((persona, index), state)
        forced, same_facts_other_ledger = [], 0
        by_name = {tl["name"]: tl for tl in timelines}
        for row in rows:
            tl = by_name[row["persona"]]
            session = tl["sessions"][row["session"]]
            gold_prompt = writer.prompt(session["ledger_before"], session)
            prompts = seen[(row["persona"], row["session"])]
            if row["drifted"]:  # the closed-loop prompt differs; one extra write, from the gold ledger
                assert len(prompts) == 2 and prompts[0] != gold_prompt and prompts[1] == gold_prompt
            else:  # reused: the closed-loop prompt is the teacher-forced prompt, byte for byte
                assert prompts == [gold_prompt]
            program = writer.program(session["ledger_before"], tl, session)
            forced.append(op_scores(session["ledger_before"], program, session["gold_ops"], session["index"]))
            own = states[(row["persona"], row["session"])]
            same_facts_other_ledger += own != session["ledger_before"] and state_f1(own, session["ledger_before"]) == 1
        m = summary["drifting"]
        # The data holds both cases, and ledgers with the gold facts but other bookkeeping (a reuse
        # keyed on facts alone would reuse a prompt that is not the teacher-forced one).
        assert 0 < m["teacher_forced_writes"] < len(rows) and same_facts_other_ledger > 0
        assert len(Drifting.PROMPTS) == len(rows) + m["teacher_forced_writes"]
        # The programs records: one closed-loop line per write, one marked line per rewrite, whose
        # ops are the program written from the gold ledger.
        assert len(programs) == len(rows) + m["teacher_forced_writes"]
        for record in programs:
            if record["teacher_forced"]:
                session = by_name[record["persona"]]["sessions"][record["session"]]
                assert record["ops"] == writer.program(session["ledger_before"], by_name[record["persona"]], session)
        assert m["op_teacher_forced"] == micro_op_scores(forced)
        assert m["op_teacher_forced"]["f1"] > m["op"]["f1"]  # drift costs the closed loop; forcing removes it

    @pytest.mark.parametrize("extra, message", [
        (["--systems", "oracle", "--teacher-forced", "oracle"],
         "--teacher-forced: 'oracle' is not a model writer (allowed: the model writers of --systems, []"),
        (["--systems", "oracle", "--teacher-forced", "clerk"], "--teacher-forced: 'clerk' is not one of --systems ['oracle']"),
    ])
    def test_names_model_writers_of_the_run(self, workdir, tmp_path, capsys, extra, message):
        """--teacher-forced takes model writers of --systems only, before any model loads."""
        with pytest.raises(SystemExit) as err:
            _cli("evaluate", "--timelines", workdir / "test.jsonl", "--model", workdir / "model", "--reader", "rule",
                 "--out", tmp_path / "o", *extra)
        assert err.value.code == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "o").exists()


class TestEvictionSlice:
    def test_slice_personas_are_written_not_read(self, workdir, tmp_path):
        """Slice personas (no questions) are consolidated and scored for their edits, never read:
        every answer of the regular personas is the one a run without the slice gives, and the
        slice's EVICT ops count in the op scores."""
        plain = generate(5, "test", personas=2, sessions=3, budget=6)
        sliced = generate(5, "test", personas=2, sessions=3, budget=6, evict_personas=2)
        assert sliced[:2] == plain and all(not s["questions"] for tl in sliced[2:] for s in tl["sessions"])
        runs = {}
        for name, timelines in (("plain", plain), ("sliced", sliced)):
            write_timelines(tmp_path / f"{name}.jsonl", timelines)
            _cli("evaluate", "--timelines", tmp_path / f"{name}.jsonl", "--model", workdir / "model", "--adapter",
                 workdir / "adapter", "--systems", "oracle", "full", "rag", "--out", tmp_path / name,
                 "--max-read-tokens", "200", "--quiet")
            runs[name] = json.loads((tmp_path / name / "metrics.json").read_text())
        assert _rows(tmp_path / "sliced" / "predictions.jsonl") == _rows(tmp_path / "plain" / "predictions.jsonl")
        assert (runs["plain"]["input"]["n_slice_personas"], runs["sliced"]["input"]["n_slice_personas"]) == (0, 2)
        for name in ("oracle", "full", "rag"):
            a, b = runs["plain"]["systems"][name], runs["sliced"]["systems"][name]
            assert {k: a[k] for k in ("accuracy", "accuracy_by_type", "n_questions", "read_tokens_mean")} \
                == {k: b[k] for k in ("accuracy", "accuracy_by_type", "n_questions", "read_tokens_mean")}
        evicts = sum(op["op"] == "EVICT" for tl in sliced[2:] for s in tl["sessions"] for op in s["gold_ops"])
        oracle = {k: runs[k]["systems"]["oracle"]["op"]["by_type"]["EVICT"]["tp"] for k in runs}
        assert evicts > 0 and oracle["sliced"] == oracle["plain"] + evicts
        assert {r["persona"] for r in _rows(tmp_path / "sliced" / "ledgers.jsonl")} == {tl["name"] for tl in sliced}


class TestRuleReader:
    @pytest.mark.parametrize("split", ["train", "test", "test_ood"])
    def test_oracle_is_perfect(self, workdir, split):
        """With the oracle ledger and the exact rule reader, every question is answered correctly."""
        from transformers import AutoTokenizer

        timelines = generate(11, split, personas=6, sessions=8)
        rt = Runtime(EvalConfig(reader="rule"), tokenizer=AutoTokenizer.from_pretrained(workdir / "model"))
        preds, ledger_rows, summary, _ = evaluate(timelines, ["oracle"], rt, progress=False)
        assert summary["oracle"]["n_questions"] > 20
        assert summary["oracle"]["accuracy"] == 1.0 and summary["oracle"]["stale_error_rate"] in (0.0, None)
        assert all(r["state_exact"] for r in ledger_rows)
        assert {r["reader"] for r in preds} == {"rule"}


class TestCliErrors:
    @pytest.mark.parametrize("extra, message", [
        (["--systems", "mem0"], "--systems: unknown memory system 'mem0'; known: "),
        (["--systems", "full", "--reader", "rule"], "--reader rule needs a ledger system, got 'full' (use --reader mc)"),
        (["--systems", "clerk"], "--adapter is required for system 'clerk' (it reads or writes with the trained adapter)"),
        (["--systems", "oracle", "oracle"], "--systems lists 'oracle' twice"),
        (["--systems", "null", "--window-k", "0"], "argument --window-k: must be >= 1, got 0"),
    ])
    def test_user_errors(self, workdir, tmp_path, capsys, extra, message):
        """Bad input exits with status 2 and one message naming the problem."""
        with pytest.raises(SystemExit) as err:
            _cli("evaluate", "--timelines", workdir / "test.jsonl", "--model", workdir / "model", "--out", tmp_path,
                 *extra)
        assert err.value.code == 2
        assert message in capsys.readouterr().err

    def test_missing_timelines(self, workdir, tmp_path, capsys):
        """A missing timelines file is a user error."""
        with pytest.raises(SystemExit):
            _cli("evaluate", "--timelines", tmp_path / "nope.jsonl", "--model", workdir / "model", "--systems", "null",
                 "--reader-model", "base", "--out", tmp_path)
        assert "--timelines must be an existing timelines file (JSON lines), got" in capsys.readouterr().err

    def test_adapter_reader_needs_an_adapter(self, workdir, tmp_path, capsys):
        """The default reader is the trained adapter, so even a writer-free system needs --adapter
        (or --reader-model base), before any model loads."""
        with pytest.raises(SystemExit) as err:
            _cli("evaluate", "--timelines", workdir / "test.jsonl", "--model", workdir / "model", "--systems", "full",
                 "--out", tmp_path / "o")
        assert err.value.code == 2
        assert "--adapter is required for system 'full' (it reads or writes with the trained adapter)" in capsys.readouterr().err
        assert not (tmp_path / "o").exists()


class TestSeparateReader:
    def test_reader_adapter_reads_every_system(self, workdir, full_run, tmp_path):
        """--reader-model reader reads with --reader-adapter, not with the policy's --adapter: with the
        policy's adapter given as the reader adapter and another adapter as the policy's, every
        transcript system picks what the shared-adapter run picked, and the readers say "reader"."""
        import torch
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM

        torch.manual_seed(1)
        other = get_peft_model(AutoModelForCausalLM.from_pretrained(workdir / "model"),
                               LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
        other.save_pretrained(tmp_path / "policy")
        systems = ["full", "window", "rag"]
        _cli("evaluate", "--timelines", workdir / "test.jsonl", "--model", workdir / "model", "--adapter",
             tmp_path / "policy", "--reader-model", "reader", "--reader-adapter", workdir / "adapter",
             "--systems", *systems, "--out", tmp_path / "o", "--max-read-tokens", "200", "--quiet")
        metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
        assert metrics["config"]["reader_adapter"] == str(workdir / "adapter")
        assert {m["reader"]["model"] for m in metrics["systems"].values()} == {"reader"}
        def picks(path):
            return [(r["system"], r["persona"], r["session"], r["q"], r["chosen"]) for r in _rows(path)
                                      if r["system"] in systems]
        assert picks(tmp_path / "o" / "predictions.jsonl") == picks(full_run / "predictions.jsonl")

    def test_reader_model_reader_needs_the_reader_adapter(self, workdir, tmp_path, capsys):
        """--reader-model reader without --reader-adapter exits 2 before any model loads."""
        with pytest.raises(SystemExit) as err:
            _cli("evaluate", "--timelines", workdir / "test.jsonl", "--model", workdir / "model", "--systems", "full",
                 "--reader-model", "reader", "--out", tmp_path / "o")
        assert err.value.code == 2
        assert "--reader-adapter is required for system 'full'" in capsys.readouterr().err
        assert not (tmp_path / "o").exists()


class TestReadCost:
    def test_probe_csv(self, workdir, tmp_path):
        """The probe writes mean read tokens per session and view; the ledger stays flat, full grows."""
        write_timelines(tmp_path / "long.jsonl", generate(3, "test", personas=2, sessions=12, budget=6))
        out = tmp_path / "cost.csv"
        _cli("read-cost", "--timelines", tmp_path / "long.jsonl", "--tokenizer", workdir / "model", "--out", out,
             "--window-k", "2", "--rag-k", "4", "--quiet")
        with open(out) as fh:
            rows = list(csv.DictReader(fh))
        assert list(rows[0]) == ["session", "view", "mean_read_tokens", "n"]
        by = {(int(r["session"]), r["view"]): float(r["mean_read_tokens"]) for r in rows}
        assert {v for _, v in by} == {"oracle", "full", "window", "rag", "add-only"}
        sessions = sorted({s for s, _ in by})
        full = [by[(s, "full")] for s in sessions]
        assert full == sorted(full) and full[-1] > 3 * by[(sessions[-1], "oracle")]
        assert by[(sessions[-1], "add-only")] <= by[(sessions[-1], "oracle")]
