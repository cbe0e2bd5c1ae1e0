"""Provenance: number registry, sha256 manifest, ``trace`` and ``verify`` (SPEC §8).

Every number the paper prints is an entry of ``results/numbers.json``, read from a results file at
a *key*, formatted, and pinned to the file's sha256 and the Snakemake rule that wrote it. The
manifest lists every file under ``results/`` (and the paper) with sha256, size, producing rule,
wildcards, params and hashed inputs, so any number can be walked back to config and code.

Keys: JSON sources take an RFC 6901 pointer (``/runs/0/acc``; ``~1`` = ``/``, ``~0`` = ``~``); CSV
sources take ``SELECTOR/COLUMN``, SELECTOR = ``col=value[,col=value...]`` matching exactly one row
(empty = a one-row file; split at the last ``/``; values must not contain ``,`` or ``=``).

Rules come from Snakemake's own records: with the default file persistence backend Snakemake 9
writes ``.snakemake/metadata/<urlsafe-base64 of output path>`` (split into ``@``-prefixed folders
beyond NAME_MAX), a JSON object with ``rule``, ``input``, ``log``, ``params`` (sorted ``repr``
strings, no names), ``shellcmd``, ``input_checksums`` (files up to --max-checksum-file-size), times
and ``record_format_version`` (6 in 9.27). We read them directly: no lock, no Snakemake process,
works inside a running job. Wildcards are not recorded, so they come from matching the path against
the rule's output patterns (Snakefile loaded through Snakemake's API; ``glob_wildcards`` matches).
``--drop-metadata`` or ``--persistence-backend db`` runs leave no records: rules are then null.

    clerk numbers --spec paper/numbers.yaml --out results/numbers.json
    clerk manifest --root results --extra paper/paper.md --out results/manifest.json
    clerk trace main.clerk.test.accuracy_mean && clerk verify
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
import subprocess
import sys
from base64 import urlsafe_b64decode
from pathlib import Path
from typing import Any

from clerk.errors import UserError

#: Packages whose versions the manifest records (missing ones are recorded as null).
PACKAGES = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "snakemake",
            "pandas", "numpy", "scipy", "matplotlib", "seaborn")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_INT = re.compile(r"[+-]?\d+")
_NUMBER_KEYS = {"source", "key", "format", "rule"}
_FOREACH_KEYS = {"source", "id", "select", "columns", "where", "format", "rule"}


# ---- hashing ---------------------------------------------------------------------------------

def sha256_path(path: str | Path) -> str:
    """Hex sha256 of a file; of a directory, the sha256 of its sorted ``relpath<TAB>sha256`` lines.

    Raises:
        UserError: the path does not exist.
    """
    path = Path(path)
    if path.is_dir():
        lines = [f"{p.relative_to(path).as_posix()}\t{sha256_path(p)}\n"
                 for p in sorted(path.rglob("*")) if p.is_file()]
        return hashlib.sha256("".join(lines).encode()).hexdigest()
    if not path.is_file():
        raise UserError(f"file '{path}' does not exist")
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---- keys ------------------------------------------------------------------------------------

def json_pointer(doc: Any, pointer: str) -> Any:
    """The member of ``doc`` at an RFC 6901 pointer.

    >>> json_pointer({"a": [{"b/c": 3}]}, "/a/0/b~1c")
    3

    Raises:
        KeyError: with a message naming the missing member and where it was looked for.
    """
    if pointer and not pointer.startswith("/"):
        raise KeyError(f"a JSON pointer starts with '/', got '{pointer}'")
    here, seen = doc, ""
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(here, list) and part.isdigit() and int(part) < len(here):
            here = here[int(part)]
        elif isinstance(here, dict) and part in here:
            here = here[part]
        else:
            raise KeyError(f"no member '{part}' at '{seen or '/'}'")
        seen += "/" + raw
    return here


def csv_lookup(rows: list[dict[str, str]], key: str) -> str:
    """The cell at ``SELECTOR/COLUMN`` in CSV rows (see the module docstring).

    >>> csv_lookup([{"system": "a", "acc": "0.5"}, {"system": "b", "acc": "0.7"}], "system=b/acc")
    '0.7'

    Raises:
        KeyError: malformed key, unknown column, or not exactly one matching row.
    """
    selector, sep, column = key.rpartition("/")
    if not sep:
        raise KeyError(f"a CSV key is 'col=value,.../column', got '{key}'")
    conditions = [c.split("=", 1) for c in selector.split(",")] if selector else []
    columns = list(rows[0]) if rows else []
    for name in [c[0] for c in conditions] + [column]:
        if name not in columns:
            raise KeyError(f"no column '{name}' (columns: {', '.join(columns)})")
    if any(len(c) != 2 for c in conditions):
        raise KeyError(f"a row selector is 'col=value,...', got '{selector}'")
    hits = [r for r in rows if all(r[c] == v for c, v in conditions)]
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} rows match '{selector}' (need exactly 1)")
    return hits[0][column]


def _as_number(raw: Any) -> int | float:
    """A JSON value or CSV cell as a number; empty/NaN/null cells are NaN."""
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "nan")):
        return math.nan
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ValueError(f"not a number: {raw!r}")
    if isinstance(raw, str):
        return int(raw) if _INT.fullmatch(raw.strip()) else float(raw)
    return raw


def _read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def resolve(path: Path, key: str, where: str = "") -> int | float:
    """The number at ``key`` in the JSON or CSV file ``path``.

    Raises:
        UserError: the file is missing, the key does not resolve, or the value is not a number;
            the message starts with ``where`` (e.g. the number id) and names the file and key.
    """
    if not path.is_file():
        raise UserError(f"{where}source file '{path}' does not exist")
    try:
        if path.suffix == ".csv":
            return _as_number(csv_lookup(_read_rows(path), key))
        return _as_number(json_pointer(json.loads(path.read_text(encoding="utf-8")), key))
    except (KeyError, ValueError) as err:
        reason = err.args[0] if err.args else str(err)
        raise UserError(f"{where}key '{key}' in '{path}': {reason}") from None


def format_value(value: int | float, fmt: str) -> str:
    """Format a number with a Python format spec; NaN prints as ``n/a``.

    >>> format_value(0.73456, ".3f"), format_value(12.0, "d"), format_value(0.1234, ".1%")
    ('0.735', '12', '12.3%')
    """
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if fmt.endswith("d") and isinstance(value, float) and value.is_integer():
        value = int(value)
    return format(value, fmt)


def reference(number_id: str, text: str) -> str:
    """How a number appears in the paper: its text and a footnote reference.

    >>> reference("acc.clerk", "0.734")
    '0.734[^num-acc.clerk]'
    """
    return f"{text}[^num-{number_id}]"


def footnote(number_id: str, entry: dict) -> str:
    """The footnote definition that gives a number's rule, file, key and sha256."""
    return (f"[^num-{number_id}]: `{number_id}` = {entry['text']}: rule `{entry['rule']}`, "
            f"file `{entry['source']}`, key `{entry['key']}`, sha256 `{entry['sha256']}`.")


# ---- Snakemake records -----------------------------------------------------------------------

def snakemake_records(workdir: Path) -> dict[str, dict]:
    """Snakemake's per-output metadata records under ``workdir/.snakemake/metadata``.

    Returns:
        Normalised output path (as Snakemake saw it, relative to ``workdir``) -> record dict.
    """
    base = Path(workdir) / ".snakemake" / "metadata"
    records = {}
    for rec in sorted(base.rglob("*")) if base.is_dir() else []:
        if not rec.is_file():
            continue
        parts = rec.relative_to(base).parts
        name = "".join(p[1:] if p.startswith("@") else p for p in parts)
        try:
            path = urlsafe_b64decode(name.encode()).decode()
            records[os.path.normpath(path)] = json.loads(rec.read_text(encoding="utf-8"))
        except ValueError:  # not a record (or one being written): Snakemake skips these too
            continue
    return records


def find_record(records: dict[str, dict], path: str) -> tuple[str | None, dict | None]:
    """The record of ``path`` or of the ``directory()`` output that contains it."""
    here = os.path.normpath(path)
    while here not in ("", ".", "/"):
        if here in records:
            return here, records[here]
        here = os.path.dirname(here)
    return None, None


def rule_output_patterns(snakefile: Path, workdir: Path) -> dict[str, list[str]]:
    """Rule name -> output file patterns, from loading the Snakefile with Snakemake's API.

    ``WorkflowApi._workflow`` (checked against Snakemake 9.27) parses the workflow without
    building a DAG; the API changes into ``workdir`` and back.
    """
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import OutputSettings, Quietness, ResourceSettings

    if not Path(snakefile).is_file():
        raise UserError(f"--snakefile: file '{snakefile}' does not exist")
    quiet = OutputSettings(quiet={Quietness.ALL}, enable_file_logging=False)  # no .snakemake/log
    with SnakemakeApi(quiet) as api:
        wf = api.workflow(resource_settings=ResourceSettings(),
                          snakefile=Path(snakefile).resolve(), workdir=Path(workdir).resolve())
        return {r.name: [str(o) for o in r.output] for r in wf._workflow.rules}


def wildcards_for(path: str, patterns: list[str]) -> dict[str, str]:
    """Wildcard values of ``path`` under the first matching output pattern ({} if none)."""
    from snakemake.io import glob_wildcards

    for pattern in patterns:
        found = glob_wildcards(pattern, files=[path])._asdict()
        if found and all(len(v) == 1 for v in found.values()):
            return {k: v[0] for k, v in sorted(found.items())}
    return {}


# ---- numbers.json ----------------------------------------------------------------------------

def expand_spec(spec: dict, workdir: Path) -> dict[str, dict]:
    """Expand a numbers spec (``numbers:`` entries and ``foreach:`` patterns) into id -> entry.

    A ``foreach`` item iterates the rows of a CSV ``source`` (optionally filtered by ``where:``,
    a mapping column -> value) and makes one id per row and entry of ``columns``: the ``id``
    template is formatted with the row's cells and ``column``; the key selects the row by the
    ``select`` columns; ``format`` is a Python format spec or a mapping column -> spec. ``rule``
    is optional everywhere (Snakemake's record supplies it and must agree). Example::

        numbers:
          n_personas: {source: results/data/stats.json, key: /test/personas, format: d}
        foreach:
          - {source: results/tables/table1.csv, where: {split: test}, select: [system, split],
             columns: [accuracy_mean, accuracy_ci_low], id: "t1.{system}.{split}.{column}",
             format: .3f}

    Raises:
        UserError: unknown fields, invalid or duplicate ids, a missing source.
    """
    out: dict[str, dict] = {}

    def add(number_id: str, entry: dict, origin: str) -> None:
        if not _ID.fullmatch(number_id):
            raise UserError(f"numbers spec: {origin}: id '{number_id}' must match {_ID.pattern}")
        if number_id in out:
            raise UserError(f"numbers spec: {origin}: duplicate id '{number_id}'")
        out[number_id] = entry

    unknown = set(spec) - {"numbers", "foreach"}
    if unknown:
        raise UserError(f"numbers spec: unknown top-level keys {sorted(unknown)}; "
                        "expected 'numbers' and/or 'foreach'")
    for number_id, entry in (spec.get("numbers") or {}).items():
        if set(entry) - _NUMBER_KEYS or {"source", "key", "format"} - set(entry):
            raise UserError(f"numbers spec: id '{number_id}': expected fields source, key, "
                            f"format (and optional rule), got {sorted(entry)}")
        add(str(number_id), dict(entry), f"id '{number_id}'")
    for n, item in enumerate(spec.get("foreach") or []):
        origin = f"foreach #{n}"
        if set(item) - _FOREACH_KEYS or {"source", "id", "select", "columns", "format"} - set(item):
            raise UserError(f"numbers spec: {origin}: expected fields {sorted(_FOREACH_KEYS)} "
                            "(where, rule optional), got " + str(sorted(item)))
        source = Path(workdir) / item["source"]
        if not source.is_file():
            raise UserError(f"numbers spec: {origin}: source file '{item['source']}' does not exist")
        where = {str(k): str(v) for k, v in (item.get("where") or {}).items()}
        rows = _read_rows(source)
        header = list(rows[0]) if rows else []
        missing = [c for c in [*item["select"], *item["columns"], *where] if c not in header]
        if missing:
            raise UserError(f"numbers spec: {origin}: no column(s) {missing} in '{item['source']}'")
        for row in rows:
            if any(row[k] != v for k, v in where.items()):
                continue
            selector = ",".join(f"{c}={row[c]}" for c in item["select"])
            for column in item["columns"]:
                fmt = item["format"]
                fmt = fmt[column] if isinstance(fmt, dict) else fmt
                entry = {"source": item["source"], "key": f"{selector}/{column}", "format": fmt}
                if "rule" in item:
                    entry["rule"] = item["rule"]
                try:
                    number_id = item["id"].format(**row, column=column)
                except (KeyError, IndexError, ValueError) as err:
                    raise UserError(f"numbers spec: {origin}: id template '{item['id']}': "
                                    f"no field {err}") from None
                add(number_id, entry, origin)
    return out


def build_numbers(spec: dict, workdir: Path) -> dict:
    """Resolve a numbers spec against the files under ``workdir``.

    Returns:
        ``{"numbers": {id: {value, format, text, source, key, sha256, rule}}}``; NaN values are
        stored as null with text ``n/a``.

    Raises:
        UserError: naming the id and file for a missing file, an unresolvable key, a bad format,
            or a rule that is neither in the spec nor in Snakemake's record (or that disagrees).
    """
    workdir = Path(workdir)
    records = snakemake_records(workdir)
    numbers = {}
    for number_id, entry in sorted(expand_spec(spec, workdir).items()):
        where = f"number '{number_id}': "
        source = os.path.normpath(entry["source"])
        value = resolve(workdir / source, entry["key"], where)
        if not isinstance(entry["format"], str):  # YAML reads `.2` as 0.2: formats must be strings
            raise UserError(f"{where}format must be a string (quote it), got {entry['format']!r}")
        try:
            text = format_value(value, entry["format"])
        except ValueError as err:
            raise UserError(f"{where}format '{entry['format']}' cannot print {value!r}: {err}") from None
        _, record = find_record(records, source)
        rule = entry.get("rule") or (record or {}).get("rule")
        if rule is None:
            raise UserError(f"{where}no Snakemake record for '{source}' and no 'rule:' in the spec")
        if record and record.get("rule") != rule:
            raise UserError(f"{where}spec says rule '{rule}' but Snakemake's record of '{source}' "
                            f"says '{record.get('rule')}'")
        numbers[number_id] = {
            "value": None if isinstance(value, float) and math.isnan(value) else value,
            "format": entry["format"], "text": text, "source": Path(source).as_posix(),
            "key": entry["key"], "sha256": sha256_path(workdir / source), "rule": rule}
    return {"numbers": numbers}


def load_json(path: str | Path, what: str) -> dict:
    """Read a JSON file; a missing file is a UserError naming ``what`` and the path."""
    if not Path(path).is_file():
        raise UserError(f"{what} file '{path}' does not exist")
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_json(obj: Any, path: str | Path) -> None:
    """Deterministic JSON: sorted keys, one-space indent, trailing newline."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n", encoding="utf-8")


# ---- manifest --------------------------------------------------------------------------------

def code_version() -> dict:
    """The clerk version and the git commit of its checkout (null outside a git checkout)."""
    import clerk

    root = Path(clerk.__file__).resolve().parent.parent
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # read-only: never refresh the index

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                  text=True, env=env, check=True)
        except (OSError, subprocess.CalledProcessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"clerk": clerk.__version__, "git_commit": commit,
            "git_dirty": None if commit is None else bool(dirty)}


def package_versions() -> dict[str, str | None]:
    """Installed versions of :data:`PACKAGES` and Python."""
    from importlib import metadata

    versions: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _file_entry(workdir: Path, path: str, records: dict, patterns: dict, listed: bool) -> dict:
    full, (output, record) = workdir / path, find_record(records, path)
    if not full.exists() and (listed or record is None):
        raise UserError(f"manifest: file '{path}' does not exist")
    # An unlisted input that is gone was a temp() output: keep its record, with no hash.
    entry = {"sha256": sha256_path(full) if full.exists() else None,
             "bytes": full.stat().st_size if full.is_file() else None,
             "rule": None, "wildcards": {}, "params": [], "shellcmd": None, "log": [], "inputs": {}}
    if record is None:
        return entry
    if record.get("incomplete"):
        raise UserError(f"manifest: '{output}' is marked incomplete by Snakemake; rerun the workflow")
    checksums = record.get("input_checksums") or {}
    for inp in record.get("input") or []:
        if inp.startswith("<"):  # "<pipe>" / "<service>": nothing on disk to hash
            continue
        digest = sha256_path(workdir / inp) if (workdir / inp).exists() else None
        recorded = str(checksums.get(inp, f"sha256:{digest}"))
        if digest and (recorded if ":" in recorded else f"sha256:{recorded}") != f"sha256:{digest}":
            raise UserError(f"manifest: input '{inp}' changed after rule {record['rule']} wrote "
                            f"'{output}' (stale output); rerun the workflow")
        entry["inputs"][os.path.normpath(inp)] = digest
    entry.update(rule=record["rule"], params=record.get("params") or [],
                 shellcmd=record.get("shellcmd"), log=record.get("log") or [],
                 wildcards=wildcards_for(output, patterns.get(record["rule"], [])))
    if output != os.path.normpath(path):
        entry["output"] = output  # the directory() output the file lives in
    return entry


def build_manifest(workdir: Path, roots: list[str], extras: list[str],
                   exclude: list[str], snakefile: Path | None) -> dict:
    """Hash every file under ``roots`` (but dotfiles) plus ``extras``, with Snakemake's record of each.

    Inputs that Snakemake produced are added too (transitively), so ``trace`` can walk from any
    listed file down to files no rule wrote (config, code, package data); inputs deleted since
    (``temp()``) keep their record with a null sha256.

    Raises:
        UserError: a missing file or input, an incomplete record, or an input whose sha256
            differs from the checksum Snakemake recorded when it ran the rule (stale output).
    """
    workdir = Path(workdir)
    records = snakemake_records(workdir)
    patterns = rule_output_patterns(snakefile, workdir) if snakefile else {}
    skip = {os.path.normpath(p) for p in exclude}
    queue = [os.path.normpath(p.relative_to(workdir)) for root in roots  # no dotfiles (.gitkeep)
             for p in sorted((workdir / root).rglob("*")) if p.is_file() and not p.name.startswith(".")]
    queue += [os.path.normpath(p) for p in extras]
    listed, files = set(queue), {}
    while queue:
        path = queue.pop(0)
        if path in files or path in skip:
            continue
        files[path] = _file_entry(workdir, path, records, patterns, path in listed)
        queue += [i for i in files[path]["inputs"] if find_record(records, i)[1] is not None]
    return {"code": code_version(), "packages": package_versions(),
            "files": {Path(k).as_posix(): v for k, v in sorted(files.items())}}


# ---- trace and verify ------------------------------------------------------------------------

def trace(target: str, manifest: dict, numbers: dict) -> list[str]:
    """Lines of the chain number -> file -> rule (params) -> inputs -> ..., down to leaf inputs.

    Raises:
        UserError: ``target`` is neither a number id nor a file in the manifest.
    """
    files, lines, seen = manifest["files"], [], set()

    def walk(path: str, digest: str, depth: int) -> None:
        pad = "  " * depth + ("<- " if depth else "")
        digest = digest or "n/a (deleted after use: temp())"
        entry = files.get(path)
        if entry is None or entry["rule"] is None:
            lines.append(f"{pad}{path}  sha256 {digest}  (not produced by a rule)")
            return
        wc = ", ".join(f"{k}={v}" for k, v in entry["wildcards"].items())
        lines.append(f"{pad}{path}  sha256 {digest}  rule {entry['rule']}  wildcards {{{wc}}}  "
                     f"params [{', '.join(entry['params'])}]")
        if path in seen:
            lines.append("  " * (depth + 1) + "(inputs listed above)")
            return
        seen.add(path)
        lines.append("  " * (depth + 1) + f"shell: {entry['shellcmd']}")
        for inp, inp_digest in entry["inputs"].items():
            walk(inp, inp_digest, depth + 1)

    target_path = os.path.normpath(target)
    if target in numbers.get("numbers", {}):
        num = numbers["numbers"][target]
        lines.append(f"number {target} = {num['text']} (value {num['value']}, format "
                     f"'{num['format']}', key '{num['key']}')")
        walk(num["source"], num["sha256"], 1)
    elif Path(target_path).as_posix() in files:
        path = Path(target_path).as_posix()
        walk(path, files[path]["sha256"], 0)
    else:
        raise UserError(f"'{target}' is neither a number id in numbers.json nor a file in the manifest")
    return lines


def _git_ignored(workdir: Path, path: str) -> bool:
    """True when git ignores ``path`` (relative to ``workdir``): untracked and matching an ignore
    rule. Tracked files are never ignored, so a deleted committed file stays a problem."""
    try:
        proc = subprocess.run(["git", "check-ignore", "-q", path], cwd=workdir,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def verify(workdir: Path, manifest: dict | None, numbers: dict | None,
           paper: Path | None, *, absent: list[str] | None = None,
           strict: bool = False) -> list[str]:
    """Re-hash and re-resolve everything; return one message per mismatch ([] = all good).

    Checks: every manifest file and leaf input still has its sha256; every number's
    source still has the recorded sha256, the value at its key and its text; every number the
    paper references is in numbers.json and printed as ``reference(id, text)`` with its footnote.

    A clean clone lacks the large git-ignored outputs (base model, adapters) that the manifest
    records: unless ``strict``, a missing file that git ignores is appended to ``absent``
    instead of being a problem (it cannot be re-hashed here; its recorded sha256 still pins it).
    Any file that is present must match, and a missing file git does not ignore is a problem.
    """
    workdir, problems = Path(workdir), []

    def check_hash(path: str, want: str | None, what: str) -> None:
        full = workdir / path
        if want is None:  # was already gone (temp()) when the manifest was made
            return
        if not full.exists() and not strict and _git_ignored(workdir, path):
            if absent is not None and path not in absent:
                absent.append(path)
        elif not full.exists():
            problems.append(f"{path}: missing ({what})")
        elif (got := sha256_path(full)) != want:
            problems.append(f"{path}: sha256 {got} != {want} recorded in {what}")

    files = (manifest or {}).get("files", {})
    leaves: dict[str, tuple[str, str]] = {}
    for path, entry in files.items():
        check_hash(path, entry["sha256"], "the manifest")
        for inp, digest in entry["inputs"].items():
            if inp not in files:
                leaves.setdefault(inp, (digest, path))
    for inp, (digest, parent) in sorted(leaves.items()):
        check_hash(inp, digest, f"the manifest as input of {parent}")
    nums = (numbers or {}).get("numbers", {})
    for number_id, num in nums.items():
        src = num["source"]
        if src in files and files[src]["sha256"] != num["sha256"]:
            problems.append(f"number '{number_id}': numbers.json pins {src} at sha256 "
                            f"{num['sha256']} but the manifest has {files[src]['sha256']}")
        if not (workdir / src).is_file():
            problems.append(f"{src}: missing (source of number '{number_id}')")
            continue
        check_hash(src, num["sha256"], f"numbers.json for '{number_id}'")
        try:
            value = resolve(workdir / src, num["key"], f"number '{number_id}': ")
        except UserError as err:
            problems.append(str(err))
            continue
        text = format_value(value, num["format"])
        stored = math.nan if num["value"] is None else num["value"]
        same = (value == stored) or (math.isnan(value) and math.isnan(stored))
        if not same or text != num["text"]:
            problems.append(f"number '{number_id}': {src} key '{num['key']}' now gives {text} "
                            f"({value!r}); numbers.json has {num['text']} ({num['value']!r})")
    if paper is not None:
        text_md = Path(paper).read_text(encoding="utf-8") if Path(paper).is_file() else None
        if text_md is None:
            return problems + [f"{paper}: missing (paper)"]
        for number_id in dict.fromkeys(re.findall(r"\[\^num-([A-Za-z0-9_.-]+)\](?!:)", text_md)):
            if number_id not in nums:
                problems.append(f"{paper}: refers to number '{number_id}', not in numbers.json")
            elif reference(number_id, nums[number_id]["text"]) not in text_md:
                problems.append(f"{paper}: number '{number_id}' is not printed as "
                                f"{nums[number_id]['text']}")
            elif footnote(number_id, nums[number_id]) not in text_md.splitlines():
                problems.append(f"{paper}: footnote of number '{number_id}' is missing or stale")
    return problems


# ---- CLI -------------------------------------------------------------------------------------

def _numbers_main(args) -> None:
    import yaml

    if not Path(args.spec).is_file():
        raise UserError(f"--spec: file '{args.spec}' does not exist")
    spec = yaml.safe_load(Path(args.spec).read_text(encoding="utf-8")) or {}
    write_json(build_numbers(spec, Path(args.workdir)), args.out)


def _manifest_main(args) -> None:
    snakefile = None if args.snakefile == "none" else Path(args.snakefile)
    own = os.path.relpath(args.out, args.workdir)  # the manifest never lists itself
    manifest = build_manifest(Path(args.workdir), args.root or ["results"], args.extra, [own],
                              snakefile)
    write_json(manifest, args.out)


def _trace_main(args) -> None:
    numbers = load_json(args.numbers, "--numbers") if Path(args.numbers).is_file() else {}
    print("\n".join(trace(args.target, load_json(args.manifest, "--manifest"), numbers)))


def _verify_main(args) -> None:
    manifest = load_json(args.manifest, "--manifest")
    numbers = load_json(args.numbers, "--numbers")
    paper = None if args.paper == "none" else Path(args.paper)
    absent: list[str] = []
    problems = verify(Path(args.workdir), manifest, numbers, paper, absent=absent, strict=args.strict)
    for problem in problems:
        print(f"clerk verify: {problem}", file=sys.stderr)
    if problems:
        raise SystemExit(f"clerk verify: FAILED with {len(problems)} problem(s)")
    for path in absent:
        print(f"clerk verify: not in this checkout (git-ignored; sha256 recorded): {path}", file=sys.stderr)
    print(f"verified {len(manifest['files']) - len(absent)} files and {len(numbers['numbers'])} numbers"
          + (f" against {paper}" if paper else "")
          + (f" ({len(absent)} git-ignored outputs not in this checkout)" if absent else ""))


def register_cli(sub) -> None:
    """Add the verbs ``numbers``, ``manifest``, ``trace`` and ``verify``."""
    p = sub.add_parser("numbers", help="resolve paper/numbers.yaml into results/numbers.json",
                       description="Read every number the paper prints from its results file.")
    p.add_argument("--spec", required=True, help="numbers spec YAML (ids -> source, key, format, rule)")
    p.add_argument("--out", required=True, help="numbers JSON to write")
    p.add_argument("--workdir", default=".", help="Snakemake working directory (default: .)")
    p.set_defaults(func=_numbers_main)

    p = sub.add_parser("manifest", help="sha256 manifest of results/ with Snakemake's records",
                       description="Hash every results file; attach rule, wildcards, params, inputs.")
    p.add_argument("--root", action="append", default=None, help="folder to list (repeatable; default: results)")
    p.add_argument("--extra", action="append", default=[], help="extra file to list (repeatable)")
    p.add_argument("--out", required=True, help="manifest JSON to write (never lists itself)")
    p.add_argument("--snakefile", default="workflow/Snakefile",
                   help="Snakefile whose output patterns give wildcards ('none' = skip; default: workflow/Snakefile)")
    p.add_argument("--workdir", default=".", help="Snakemake working directory (default: .)")
    p.set_defaults(func=_manifest_main)

    p = sub.add_parser("trace", help="walk a number or file back through rules and inputs",
                       description="Print number -> file (sha256) -> rule (params) -> inputs, recursively.")
    p.add_argument("target", help="a number id from numbers.json or a file path in the manifest")
    p.add_argument("--manifest", default="results/manifest.json", help="default: results/manifest.json")
    p.add_argument("--numbers", default="results/numbers.json", help="default: results/numbers.json")
    p.set_defaults(func=_trace_main)

    p = sub.add_parser("verify", help="re-hash the manifest and check every number in the paper",
                       description="Exit 1 naming every file or number id that no longer matches.")
    p.add_argument("--manifest", default="results/manifest.json", help="default: results/manifest.json")
    p.add_argument("--numbers", default="results/numbers.json", help="default: results/numbers.json")
    p.add_argument("--paper", default="paper/paper.md", help="rendered paper ('none' = skip; default: paper/paper.md)")
    p.add_argument("--workdir", default=".", help="directory the manifest paths are relative to (default: .)")
    p.add_argument("--strict", action="store_true",
                   help="also fail on missing git-ignored outputs (models, adapters) instead of listing them")
    p.set_defaults(func=_verify_main)
