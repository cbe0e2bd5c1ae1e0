"""Tests for the erasure study: forget requests in the generator, every memory system's forget,
the ``clerk erasure`` verb (exact rule reader, and a scratch model with an adapter), table 5, the
paper's table-5 numbers and the smoke workflow's DAG."""

from __future__ import annotations

import copy
import doctest
import json
import re
from collections import Counter

import pytest
import yaml
from workflow_kit import ROOT, SMOKE, run_snakemake, shell_commands

import clerk.evaluate.erasure as erasure_module
import clerk.generator.forgets as forgets_module
import clerk.memory.forgetting as forgetting_module
import clerk.report.erasure as report_erasure_module
from clerk import cli
from clerk import ledger as L
from clerk.errors import UserError
from clerk.evaluate.erasure import SCHEMAS, erasure, leaked_values, live_forgotten
from clerk.evaluate.runner import replay
from clerk.evaluate.schemas import validate_record
from clerk.generator.files import write_timelines
from clerk.generator.forgets import FORGOTTEN
from clerk.generator.timelines import generate
from clerk.memory import MEMORY_REGISTRY, EvalConfig, MemorySystem, Registry, Runtime, View, WriteResult
from clerk.memory.forgetting import REDACTED, scrub_session
from clerk.memory.registry import SYNTHETIC
from clerk.prompts import UNKNOWN_ANSWER

#: Systems that need no model to write (their forget is checked on every view of a replay).
NO_MODEL = ["oracle", "full", "window", "rag", "add-only", "null"]
SMOKE_ERASURE = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())["erasure"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _gen(**kw) -> list[dict]:
    args = {"seed": 7, "split": "test", "personas": 6, "sessions": 8, "budget": 6, "n_init": 3, "forgets": 3}
    return generate(**{**args, **kw})


@pytest.fixture(scope="module")
def timelines() -> list[dict]:
    return _gen()


@pytest.fixture(scope="module")
def tokenizer(timelines):
    """A small byte-level BPE tokenizer trained on the forget timelines (real, offline, fast)."""
    from clerk.models.tokenizer import train_tokenizer

    texts = [t["content"] for tl in timelines for s in tl["sessions"] for t in s["turns"]]
    return train_tokenizer(texts + [L.serialize(s["ledger_after"]) for tl in timelines for s in tl["sessions"]], 300)


def _runtime(tokenizer, **knobs) -> Runtime:
    return Runtime(EvalConfig(**knobs), tokenizer=tokenizer, context_tokens=10**9)


def _forgets(tl: dict) -> list[tuple[int, dict]]:
    return [(s["index"], r) for s in tl["sessions"] for r in s["forget"]]


def test_doctests():
    """The >>> examples of the erasure modules hold."""
    for module in (forgets_module, forgetting_module, erasure_module, report_erasure_module):
        assert doctest.testmod(module).failed == 0


# ---- the generator ---------------------------------------------------------------------------

class TestGeneratorForgets:
    def test_deterministic_and_only_new_keys(self, timelines):
        """Same arguments, same bytes; forgets=0 writes no forget key and no forgotten question."""
        assert L.dumps(_gen()) == L.dumps(timelines)
        plain = _gen(forgets=0)
        assert L.dumps(plain) != L.dumps(timelines)
        sessions = [s for tl in plain for s in tl["sessions"]]
        assert not any("forget" in s for s in sessions)
        assert not any(q["type"] == FORGOTTEN for s in sessions for q in s["questions"])
        assert all(set(s) == set(sessions[0]) | {"forget"} for tl in timelines for s in tl["sessions"])

    def test_requests_name_a_stated_predicate_with_every_value(self, timelines):
        """K requests per persona at distinct sessions >= 1; each names a predicate stated before and
        not forgotten since, with every value it ever held in first-stated order."""
        for tl in timelines:
            found = _forgets(tl)
            assert len(found) == 3 and len({i for i, _ in found}) == 3 and min(i for i, _ in found) >= 1
            assert all(len(s["forget"]) <= 1 for s in tl["sessions"])
            stated: set[str] = set()
            held: dict[str, list[str]] = {}
            for s in tl["sessions"]:
                for r in s["forget"]:
                    assert r["pred"] in stated and r["values"] == held[r["pred"]], (tl["name"], s["index"], r)
                    stated.discard(r["pred"])
                for e in s["events"]:
                    if e["kind"] in ("ADD", "UPDATE"):
                        stated.add(e["pred"])
                        held.setdefault(e["pred"], [])
                        held[e["pred"]] += [e["value"]] if e["value"] not in held[e["pred"]] else []

    def test_gold_ledger_frees_the_slot_until_restated(self, timelines):
        """ledger_before = previous ledger_after with the forgotten slot freed, then question uses;
        no slot of a forgotten predicate until a later ADD states it again; gold ops apply strictly."""
        for tl in timelines:
            gone: set[str] = set()
            for s in tl["sessions"]:
                prev = tl["sessions"][s["index"] - 1]["ledger_after"] if s["index"] else L.empty_ledger(tl["budget"])
                expected = prev
                for r in s["forget"]:
                    gone.add(r["pred"])
                    expected = [{"i": x["i"]} if "s" in x and x["p"] == r["pred"] else x for x in expected]
                for q in s["questions"]:
                    expected = L.record_use(expected, tl["name"], q["pred"])
                assert s["ledger_before"] == expected
                for pred in gone:
                    assert L.find(s["ledger_before"], tl["name"], pred) is None
                assert L.reduce(s["ledger_before"], s["gold_ops"], now=s["index"], strict=True)[0] == s["ledger_after"]
                gone -= {e["pred"] for e in s["events"]}

    def test_restatement_is_a_fresh_add(self, timelines):
        """A forgotten predicate stated again is an ADD into a fresh slot (no prev); the data has some."""
        restated = 0
        for tl in timelines:
            gone: set[str] = set()
            for s in tl["sessions"]:
                gone |= {r["pred"] for r in s["forget"]}
                for e in s["events"]:
                    if e["pred"] in gone:
                        assert e["kind"] == "ADD"
                        slot = s["ledger_after"][L.find(s["ledger_after"], tl["name"], e["pred"])]
                        assert slot["prev"] is None and slot["born"] == s["index"]
                        gone.discard(e["pred"])
                        restated += 1
        assert restated > 0

    def test_forgotten_questions(self, timelines):
        """A forget session asks about the forgotten predicate first; every forgotten question has the
        unknown answer, the forgotten values as options, and is about a forgotten, unrestated
        predicate; such a predicate is never an 'unknown' question; later sessions ask some too."""
        later = 0
        for tl in timelines:
            gone: dict[str, list[str]] = {}
            for s in tl["sessions"]:
                for r in s["forget"]:
                    gone[r["pred"]] = r["values"]
                    assert s["questions"][0]["type"] == FORGOTTEN and s["questions"][0]["pred"] == r["pred"]
                for k, q in enumerate(s["questions"]):
                    if q["type"] == FORGOTTEN:
                        assert q["pred"] in gone and q["answer"] == UNKNOWN_ANSWER
                        assert q["options"][q["correct"]] == UNKNOWN_ANSWER and len(q["options"]) == 10
                        assert set(gone[q["pred"]]) <= set(q["options"])
                        later += not s["forget"] or k > 0
                    assert not (q["type"] == "unknown" and q["pred"] in gone)
                for e in s["events"]:
                    gone.pop(e["pred"], None)
        assert later > 0

    def test_cli_bound(self, tmp_path, capsys):
        """More forgets than sessions >= 1 is a user error naming the bound."""
        with pytest.raises(SystemExit):
            cli.main(["generate", "--seed", "1", "--split", "test", "--sessions", "3", "--forgets", "3",
                      "--out", str(tmp_path / "x.jsonl")])
        assert ("forgets must be an int from 0 to sessions - 1 = 2 (one forget per session >= 1), got 3"
                in capsys.readouterr().err)


# ---- the systems -----------------------------------------------------------------------------

def _replay_views(name: str, runtime: Runtime, timelines: list[dict], deliver: bool) -> list[tuple[list[str], str]]:
    """(live forgotten values, view text) of every question after a forget, from one replay."""
    system = MEMORY_REGISTRY.get(name)(runtime)
    live = {tl["name"]: live_forgotten(tl) for tl in timelines}
    seen = []

    def prepare(key, sys_, tl, session, state):
        for r in session["forget"] if deliver else []:
            state = sys_.forget(state, tl, r["pred"], r["values"])
        return state

    def answer(key, sys_, tl, session, state, views):
        values = live[tl["name"]][session["index"]]
        seen.extend((values, v.text) for v in views if values)

    replay(timelines, {name: system}, answer, progress=False, prepare=prepare)
    return seen


#: The add-only view shows only the newest statements that fit the ledger's token budget, so on
#: this small fixture whether an old statement is shown depends on the phrasings' lengths; with
#: an unbounded view every statement it stores is shown, which is what these tests are about.
UNBOUNDED = {"add-only": {"add_only_budget": 10**6}}


class TestSystemForget:
    @pytest.mark.parametrize("name", NO_MODEL)
    def test_no_view_holds_a_forgotten_value(self, name, timelines, tokenizer):
        """After forget, no later view holds a live forgotten value (whole word, any case), and the
        replay leaves the timelines unchanged."""
        before = copy.deepcopy(timelines)
        seen = _replay_views(name, _runtime(tokenizer, **UNBOUNDED.get(name, {})), timelines, deliver=True)
        assert seen and all(not leaked_values(text, values) for values, text in seen)
        assert timelines == before

    @pytest.mark.parametrize("name", ["oracle", "full", "rag", "add-only"])
    def test_without_forget_the_views_leak(self, name, timelines, tokenizer):
        """The same replay without delivering the requests shows forgotten values (the check can fail)."""
        seen = _replay_views(name, _runtime(tokenizer, **UNBOUNDED.get(name, {})), timelines, deliver=False)
        assert any(leaked_values(text, values) for values, text in seen)

    @pytest.mark.parametrize("name", ["clerk", "prompted-ledger", "oracle"])
    def test_ledger_forget_frees_every_slot_of_the_predicate(self, name, tokenizer):
        """Every slot of the predicate (any subject string) is freed; other slots and the input stay."""
        def slot(i, s, p, o, prev):
            return {"i": i, "s": s, "p": p, "o": o, "prev": prev, "v": 1, "born": 0, "t": 1, "uses": 2}

        ledger = [slot(0, "Ari", "city", "Oslo", "Rome"), slot(1, "Ari", "job", "chef", None),
                  slot(2, "user", "city", "Lima", None), {"i": 3}]
        kept = copy.deepcopy(ledger)
        system = MEMORY_REGISTRY.get(name)(_runtime(tokenizer))
        out = system.forget(ledger, {"name": "Ari"}, "city", ["Rome", "Oslo", "Lima"])
        assert out == [{"i": 0}, ledger[1], {"i": 2}, {"i": 3}] and ledger == kept
        text = system.view(out, {"name": "Ari"}, {"index": 2}, {"question": "Where?"}).text
        assert not leaked_values(text, ["Rome", "Oslo", "Lima"]) and "chef" in text

    @pytest.mark.parametrize("name", ["clerk", "prompted-ledger", "oracle"])
    def test_ledger_forget_frees_a_misfiled_copy(self, name, tokenizer):
        """A forgotten value the writer filed under another predicate goes too (the 2026-12-04 run's
        leak: `deadline: the mobile app` beside `work_project`); an unrelated slot stays."""
        ledger = [{"i": 0, "s": "Ari", "p": "work_project", "o": "the mobile app", "prev": None, "v": 0, "born": 0, "t": 2, "uses": 0},
                  {"i": 1, "s": "Ari", "p": "deadline", "o": "the mobile app", "prev": None, "v": 1, "born": 2, "t": 2, "uses": 0},
                  {"i": 2, "s": "Ari", "p": "job", "o": "chef", "prev": "the customer survey", "v": 1, "born": 0, "t": 3, "uses": 0}]
        system = MEMORY_REGISTRY.get(name)(_runtime(tokenizer))
        out = system.forget(ledger, {"name": "Ari"}, "work_project", ["the customer survey", "the mobile app"])
        assert out[:2] == [{"i": 0}, {"i": 1}] and out[2]["o"] == "chef" and out[2]["prev"] is None
        text = system.view(out, {"name": "Ari"}, {"index": 3}, {"question": "What?"}).text
        assert not leaked_values(text, ["the customer survey", "the mobile app"]) and "chef" in text

    @pytest.mark.parametrize("name", ["full", "window", "rag", "add-only"])
    def test_forget_equals_never_having_heard_the_value(self, name, timelines, tokenizer):
        """forget(write(sessions)) holds what write(redacted sessions) holds: the same views, and for
        rag the same BM25 index input."""
        rt = _runtime(tokenizer)
        system = MEMORY_REGISTRY.get(name)(rt)
        tl = timelines[0]
        index, request = _forgets(tl)[0]
        sessions = tl["sessions"][:index]
        state, clean = system.init_state(tl), system.init_state(tl)
        for s in sessions:
            state = system.write([state], [tl], [s])[0].state
            clean = system.write([clean], [tl], [{**s, **scrub_session(s, request["values"])}])[0].state
        state = system.forget(state, tl, request["pred"], request["values"])
        session = tl["sessions"][index]
        for q in session["questions"]:
            assert system.view(state, tl, session, q) == system.view(clean, tl, session, q)
        if name == "rag":
            assert state.lines == clean.lines and state.tokens == clean.tokens
            words = {tok for toks in state.tokens for tok in toks}
            assert not any(v.lower() in words for v in request["values"] if re.fullmatch(r"\w+", v))

    def test_summary_rag_redacts_summaries_and_their_index(self, tokenizer):
        """summary-rag redacts the value from its summaries and re-indexes them."""
        system = MEMORY_REGISTRY.get("summary-rag")(_runtime(tokenizer))
        sessions = [{"index": 0, "date": "1 May", "turns": [], "summary": "Ari moved to Oslo with her cat."},
                    {"index": 1, "date": "2 May", "turns": [], "summary": "Ari adopted a dog."}]
        state = system.init_state({})
        for s in sessions:
            state = system.write([state], [{}], [s])[0].state
        out = system.forget(state, {}, "city", ["Oslo"])
        assert out.blocks == ["[session 0] date: 1 May\nAri moved to [forgotten] with her cat.", state.blocks[1]]
        assert "oslo" in state.tokens[0] and "oslo" not in out.tokens[0] and out.tokens[1] == state.tokens[1]
        view = system.view(out, {}, {"index": 2}, {"question": "Where does Ari live, Oslo?"})
        assert REDACTED in view.text and not leaked_values(view.text, ["Oslo"])

    def test_every_registered_system_forgets(self):
        """Every registered system overrides forget and names what it does."""
        for name in MEMORY_REGISTRY.names():
            cls = MEMORY_REGISTRY.get(name)
            assert cls.forget is not MemorySystem.forget and cls.forget_action in ("free-slot", "redact", "nothing")

    def test_a_system_without_forget_is_refused(self, timelines, tokenizer):
        """The default forget raises, and the study refuses such a system by name."""
        reg = Registry()

        @reg.register("toy", order=1, benchmarks=(SYNTHETIC,))
        class Toy(MemorySystem):
            version = "1"

            def init_state(self, timeline):
                return None

            def view(self, state, timeline, session, question):
                return View("")

            def write(self, states, timelines, sessions):
                return [WriteResult(state=None) for _ in states]

        with pytest.raises(NotImplementedError, match="memory system 'toy' does not implement forget"):
            Toy(None).forget(None, {}, "city", [])
        with pytest.raises(UserError, match="memory system 'toy' does not implement forget"):
            erasure(timelines, ["toy"], _runtime(tokenizer, reader="mc", reader_model="base"), registry=reg, progress=False)


# ---- the study -------------------------------------------------------------------------------

class TestStudy:
    def test_rule_reader(self, timelines, tokenizer):
        """Exact reader on the oracle: delivered, no leak and every forgotten question answered unknown;
        ignored, leaks and forgotten values answered."""
        rows, summary, programs = erasure(timelines, ["oracle"], _runtime(tokenizer, reader="rule"), ["oracle"], progress=False)
        by_mode = {r["mode"]: r for r in summary}
        for rec in summary:
            validate_record("metrics.row", rec, SCHEMAS)
        for row in rows:
            validate_record("views", row, SCHEMAS)
        forget, ignore = by_mode["forget"], by_mode["ignore"]
        assert forget["n_views"] == ignore["n_views"] == len(rows) // 2 > 0
        assert forget["leak_rate"] == 0.0 and forget["accuracy_forgotten"] == 1.0 and forget["forgotten_value_rate"] == 0.0
        assert ignore["leak_rate"] > 0 and ignore["forgotten_value_rate"] > 0 and ignore["accuracy_forgotten"] < 1
        n = sum(q["type"] == FORGOTTEN for tl in timelines for s in tl["sessions"] for q in s["questions"])
        assert forget["n_forgotten"] == n and forget["forget_action"] == "free-slot" and ignore["forget_action"] == "ignored"
        assert programs == [] and forget["invalid_reasons"] is None  # the oracle writes no model program

    def test_needs_forget_requests(self, tokenizer):
        """Timelines without forget requests are refused."""
        with pytest.raises(UserError, match="hold no forget request; generate them with clerk generate --forgets K"):
            erasure(_gen(forgets=0, personas=1), ["oracle"], _runtime(tokenizer, reader="rule"), progress=False)


@pytest.fixture(scope="module")
def run(tmp_path_factory, timelines):
    """``clerk erasure`` with the smoke profile's systems on a scratch model and a LoRA adapter."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from clerk.models.materialize import materialize
    from clerk.models.spec import ModelSpec

    root = tmp_path_factory.mktemp("erasure")
    small = _gen(personas=3, sessions=5, forgets=2)
    write_timelines(root / "forget.jsonl", small)
    write_timelines(root / "train.jsonl", generate(7, "train", personas=3, sessions=4, budget=6))
    materialize(ModelSpec(kind="scratch", timelines=str(root / "train.jsonl"), vocab_size=400, hidden=32,
                          layers=1, heads=2, intermediate=64, max_positions=2048, seed=0), root / "model")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(root / "model")
    peft = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"],
                                            init_lora_weights=False))
    peft.save_pretrained(root / "adapter")
    cli.main([str(a) for a in ["erasure", "--timelines", root / "forget.jsonl", "--model", root / "model",
                               "--adapter", root / "adapter", "--systems", *SMOKE_ERASURE["systems"],
                               "--ignore-forget", *SMOKE_ERASURE["ignore_forget"], "--max-new-tokens", "12",
                               "--threads", "1", "--out", root / "out", "--quiet"]])
    return root


class TestVerb:
    def test_metrics_and_views(self, run):
        """metrics.json and views.jsonl follow their schemas; delivered rows of the writer-free systems
        never leak, ignored ones do; every row checks the same views and reads the same questions."""
        metrics = json.loads((run / "out" / "metrics.json").read_text())
        validate_record("metrics", metrics, SCHEMAS)
        rows = {(r["system"], r["mode"]): r for r in metrics["rows"]}
        expected = {(s, "forget") for s in SMOKE_ERASURE["systems"]} | {(s, "ignore") for s in SMOKE_ERASURE["ignore_forget"]}
        assert set(rows) == expected
        views = [json.loads(line) for line in (run / "out" / "views.jsonl").read_text().splitlines()]
        for key, rec in rows.items():
            validate_record("metrics.row", rec, SCHEMAS)
            assert rec["n_views"] == sum((v["system"], v["mode"]) == key for v in views) > 0
            assert rec["n_forgotten"] == rows[("oracle", "forget")]["n_forgotten"] > 0
            assert 0 <= rec["accuracy_forgotten"] <= 1
        assert {rec["n_views"] for rec in rows.values()} == {rows[("oracle", "forget")]["n_views"]}
        for name in set(SMOKE_ERASURE["systems"]) & set(NO_MODEL):
            assert rows[(name, "forget")]["leak_rate"] == 0.0
        for name in SMOKE_ERASURE["ignore_forget"]:
            assert rows[(name, "ignore")]["leak_rate"] > 0
        assert {key: rec["reader"]["model"] for key, rec in rows.items()} == {key: "adapter" for key in rows}  # one reader
        assert {v["reader"] for v in views if v["reader"] is not None} == {"adapter"}
        assert metrics["input"]["n_forget_requests"] == 6 and metrics["input"]["n_sessions"] == 5

    def test_programs_of_the_model_writers(self, run):
        """programs.jsonl.gz holds one line per persona-session of each model writer's delivered-forget
        replay; its verdicts are what that row's invalid_reasons counts; other rows count none."""
        from clerk.evaluate.programs import PROGRAMS_FILE, read_programs
        from clerk.evaluate.schemas import SCHEMAS as PROGRAM_SCHEMAS

        programs = read_programs(run / "out" / PROGRAMS_FILE)
        metrics = json.loads((run / "out" / "metrics.json").read_text())
        writers = [r for r in metrics["rows"] if r["mode"] == "forget" and r["invalid_reasons"] is not None]
        assert [r["system"] for r in writers] == ["clerk"]
        timelines = [json.loads(line) for line in (run / "forget.jsonl").read_text().splitlines()]
        assert len(programs) == sum(len(tl["sessions"]) for tl in timelines)
        for row in programs:
            validate_record("programs", row, PROGRAM_SCHEMAS)
        rejected = Counter(v for row in programs for v in row["verdicts"] if v != "applied")
        assert writers[0]["invalid_reasons"] == dict(rejected)
        assert all(r["invalid_reasons"] is None for r in metrics["rows"] if r["system"] != "clerk")

    def test_evaluate_refuses_forget_timelines(self, run, capsys):
        """clerk evaluate does not deliver forget requests, so it refuses such timelines."""
        with pytest.raises(SystemExit):
            cli.main([str(a) for a in ["evaluate", "--timelines", run / "forget.jsonl", "--model", run / "model",
                                       "--systems", "oracle", "--reader", "rule", "--out", run / "ev"]])
        assert "holds forget requests, which clerk evaluate does not deliver; replay it with clerk erasure" in capsys.readouterr().err


# ---- table 5 and the paper -------------------------------------------------------------------

class TestTable5:
    def test_aggregates_over_seeds_and_resolves_the_papers_numbers(self, run, tmp_path):
        """Two seeds' metrics -> table 5 (mean over seeds per system and mode, forget rows first), and
        every t5 number the paper template cites is an id of the numbers spec over that table."""
        from clerk.provenance.numbers import expand_spec

        metrics = json.loads((run / "out" / "metrics.json").read_text())
        other = copy.deepcopy(metrics)
        other["input"]["seeds"] = [8]
        for rec in other["rows"]:
            rec["leak_rate"] = 0.5
        paths = []
        for k, m in enumerate((metrics, other)):
            paths.append(tmp_path / f"{k}.json")
            paths[-1].write_text(json.dumps(m))
        (tmp_path / "results").mkdir()
        cli.main(["table-erasure", "--metrics", *map(str, paths), "--out", str(tmp_path / "results" / "table5.csv"),
                  "--markdown", str(tmp_path / "table5.md")])
        import pandas as pd

        table = pd.read_csv(tmp_path / "results" / "table5.csv")
        assert len(table) == len(metrics["rows"]) and set(table["n_seeds"]) == {2}
        for rec in metrics["rows"]:
            row = table[(table["system"] == rec["system"]) & (table["mode"] == rec["mode"])].iloc[0]
            assert row["leak_rate_mean"] == pytest.approx((rec["leak_rate"] + 0.5) / 2)
            assert row["n_forgotten_mean"] == rec["n_forgotten"]
        assert len(pd.read_csv(tmp_path / "results" / "table5_seeds.csv")) == 2 * len(metrics["rows"])
        md = (tmp_path / "table5.md").read_text().splitlines()
        body = [line.split(" | ")[0].strip("| ") for line in md[2:2 + len(metrics["rows"])]]
        assert body == [*SMOKE_ERASURE["systems"], *SMOKE_ERASURE["ignore_forget"]]
        assert "request ignored" in md[-3] and "values redacted" in "\n".join(md) and "slot freed" in "\n".join(md)

        spec = yaml.safe_load((ROOT / "paper" / "numbers.yaml").read_text())
        spec["foreach"] = [item for item in spec["foreach"] if item["source"] == "results/table5.csv"]
        ids = set(expand_spec({"foreach": spec["foreach"]}, tmp_path))
        cited = set(re.findall(r"\{\{num:(t5\.[^}]+)\}\}", (ROOT / "paper" / "template.md").read_text()))
        assert cited and cited <= ids, cited - ids


def test_smoke_dag_runs_the_study():
    """The smoke profile's dry run schedules the forget timelines and the study per seed, and table 5."""
    proc = run_snakemake(ROOT, "-n", "-p", "--cores", "1", "--forceall", "results/table5.md", *SMOKE, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    table = out.split("Job stats:")[1].split("total")[0]
    jobs = dict((m.split()[0], int(m.split()[1])) for m in table.splitlines() if m.strip() and m.split()[-1].isdigit())
    seeds = len(yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())["seeds"])
    assert jobs["generate_forget"] == jobs["erasure"] == seeds and jobs["table_erasure"] == 1
    # The verbs' effective options (each command's --config object applied, as the verb sees it).
    assert {a["forgets"] for a in shell_commands(out, "generate") if a["out"].endswith("forget.jsonl")} == {1}
    assert {tuple(a["ignore_forget"]) for a in shell_commands(out, "erasure")} == {("oracle", "full")}
