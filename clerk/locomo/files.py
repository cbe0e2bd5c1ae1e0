"""Finding the LoCoMo data file, telling its format and loading it (SPEC §7).

A configured path (``locomo.path``) wins; otherwise, where allowed (``locomo.download``), the
Percena file is fetched from the Hugging Face hub. Without data, one line says where to get it and
which key to set, and nothing is written (below: exit status 2 and that line). Either format is
recognised by its first byte (and, for ``{``, by whether the file is one ``locomo10.json`` sample).

    clerk locomo --model resources/models/smollm2-135m --out /tmp/locomo-none
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from clerk.errors import UserError
from clerk.locomo.data import Conversation
from clerk.locomo.locomo10 import load_locomo10
from clerk.locomo.percena import load_percena

PERCENA_REPO_ID = "Percena/locomo-mc10"
PERCENA_FILENAME = "data/locomo_mc10.json"
PERCENA_URL = "https://huggingface.co/datasets/Percena/locomo-mc10"
ORIGINAL_REPO_URL = "https://github.com/snap-research/locomo"

FORMAT_PERCENA = "percena-jsonl"
FORMAT_LOCOMO10 = "locomo10-json"


# --- reading files -------------------------------------------------------------------------


def detect_format(path: str | Path) -> str:
    """:data:`FORMAT_PERCENA` (JSON lines) or :data:`FORMAT_LOCOMO10` (a JSON list of samples, or
    one sample object: a per-conversation file), by the first byte and, for ``{``, the first object.

    Raises:
        UserError: when the file is empty or starts with anything else.
    """
    with open(path, "rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        return FORMAT_LOCOMO10
    if head.startswith(b"{"):
        return FORMAT_LOCOMO10 if _is_one_sample(path) else FORMAT_PERCENA
    raise UserError(
        f"{path}: expected Percena JSON lines (starting with '{{') or locomo10.json (starting with '['), "
        f"got {head[:20]!r}"
    )


def _is_one_sample(path: str | Path) -> bool:
    """Whether a file starting with ``{`` is one ``locomo10.json`` sample rather than JSON lines:
    its first line is not a whole Percena record and the whole file is one object with a
    ``conversation``."""
    with open(path, encoding="utf-8-sig") as fh:
        first = fh.readline()
    try:
        record = json.loads(first)
        return isinstance(record, dict) and "conversation" in record and "question_id" not in record
    except json.JSONDecodeError:
        pass
    try:
        whole = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError:
        return False  # not one object either: the Percena reader names the bad line
    return isinstance(whole, dict) and "conversation" in whole


def load_locomo(path: str | Path, mc_seed: int = 0) -> list[Conversation]:
    """Load either format (detected from the file) into :class:`Conversation` objects.

    Args:
        path: the data file.
        mc_seed: seed of the distractors built for ``locomo10.json`` (ignored for Percena's file).

    Returns:
        Conversations in file order.

    Raises:
        UserError: on a missing file or malformed data (the message names the field).
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"LoCoMo data: expected an existing file, got {str(path)!r}")
    if detect_format(path) == FORMAT_LOCOMO10:
        return load_locomo10(path, mc_seed=mc_seed)
    return load_percena(path)


# --- locating the data ---------------------------------------------------------------------


def _missing_data_message(reason: str) -> str:
    return (
        f"LoCoMo data not found: {reason}. Get data/locomo_mc10.json from the Hugging Face dataset "
        f"{PERCENA_REPO_ID} ({PERCENA_URL}) or locomo10.json from the original repo {ORIGINAL_REPO_URL} "
        "(licence CC BY-NC 4.0: never commit it), then set locomo.path (clerk locomo --data FILE) to that file, "
        "or set locomo.download: true (clerk locomo --download) where the network allows"
    )


def resolve_locomo_path(path: str | None, download: bool, revision: str | None = None) -> Path:
    """Find the LoCoMo data file: a configured path wins, else the Hugging Face hub when allowed.

    Nothing is written when this fails (the hub client is not even called while
    ``HF_HUB_OFFLINE`` is set).

    Args:
        path: configured file (``locomo.path``), or None.
        download: whether fetching ``data/locomo_mc10.json`` of :data:`PERCENA_REPO_ID` is allowed
            (``locomo.download``); the file lands in the Hugging Face cache.
        revision: hub revision (branch, tag or commit) to fetch; None = ``main``.

    Returns:
        Path of an existing file.

    Raises:
        UserError: one line saying where to get the data and which config key to set.
    """
    if path:
        p = Path(path)
        if p.is_file():
            return p
        what = "is not a file" if p.exists() else "does not exist"
        reason = f"locomo.path {str(p)!r} {what}"
    else:
        reason = "locomo.path is not set"
    if not download:
        raise UserError(_missing_data_message(f"{reason} and locomo.download is false"))
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        raise UserError(_missing_data_message(f"{reason} and the download was skipped because HF_HUB_OFFLINE is set"))
    try:
        from huggingface_hub import hf_hub_download

        fetched = hf_hub_download(
            repo_id=PERCENA_REPO_ID, filename=PERCENA_FILENAME, repo_type="dataset", revision=revision
        )
    except Exception as err:  # any failure (import, network, auth, missing file) means: no data
        detail = " ".join(str(err).split())[:160]
        raise UserError(_missing_data_message(f"{reason} and the download failed ({type(err).__name__}: {detail})")) from None
    return Path(fetched)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def recorded_path(path: str | Path, root: str | Path | None = None) -> str:
    """How the result files name the data file: relative to ``root`` (the working directory, the
    repository when the workflow runs) when it lies inside, else its file name alone. A folder
    outside the repository (an absolute path of the machine, a download cache) means nothing on
    another machine; the sha256 recorded beside it identifies the data.

    >>> recorded_path("/data/x/locomo10.json", root="/repo"), recorded_path("/repo/data/l.json", root="/repo")
    ('locomo10.json', 'data/l.json')
    >>> recorded_path("tests/fixtures/locomo/mini.json", root="/repo")
    'tests/fixtures/locomo/mini.json'
    """
    root = Path(os.path.abspath(root if root is not None else os.getcwd()))
    full = Path(os.path.abspath(root / path))
    return full.relative_to(root).as_posix() if full.is_relative_to(root) else full.name
