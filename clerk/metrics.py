"""Write-side metrics: edit-op precision/recall/F1 against gold, and ledger-state F1.

SPEC §6. Programs written against different ledgers cannot be compared by slot index (a
predicted ``TOMBSTONE 3`` and a gold ``TOMBSTONE 5`` may retract the same fact), so both are
first resolved to *facts* (:func:`canonical_ops`), stepping through the program with the lenient
reducer exactly as evaluation applies model output. Invalid ops resolve to an ``INVALID`` tuple
that never matches gold, so they count as false positives. Matching is a multiset intersection;
every score carries its tp/fp/fn counts so sessions and personas can be micro-averaged
(:func:`micro_op_scores`).

    python -m doctest clerk/metrics.py -v
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from clerk.form import LedgerForm
from clerk.ledger import OP_KINDS, Ledger, check_op, dumps, is_free, reduce

#: A canonical op: ("ADD"|"UPDATE", s, p, o), ("TOMBSTONE"|"EVICT", s, p) or
#: ("INVALID", claimed kind or "", compact JSON of the op).
CanonicalOp = tuple


def prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    """Precision, recall and F1 from counts.

    Convention: when there was nothing to find and nothing was predicted (tp = fp = fn = 0) all
    three are 1.0 (doing nothing was exactly right); otherwise an empty denominator gives 0.0.
    F1 is ``2tp / (2tp + fp + fn)``, which equals the harmonic mean wherever that is defined.

    Args:
        tp: true positives. fp: false positives. fn: false negatives.

    Returns:
        ``{"precision", "recall", "f1"}``.

    >>> prf(2, 1, 1)
    {'precision': 0.6666666666666666, 'recall': 0.6666666666666666, 'f1': 0.6666666666666666}
    >>> prf(0, 0, 0)
    {'precision': 1.0, 'recall': 1.0, 'f1': 1.0}
    >>> prf(0, 0, 3)
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0}
    """
    if tp == fp == fn == 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    return {
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "f1": 2 * tp / (2 * tp + fp + fn),
    }


def _op_json(op: Any) -> str:
    """Compact JSON of an op for the INVALID tuple; repr for anything JSON cannot encode.

    >>> _op_json({"op": "EVICT", "i": 1}), _op_json(b"x")
    ('{"op":"EVICT","i":1}', "b'x'")
    """
    try:
        return dumps(op)
    except (TypeError, ValueError, RecursionError):
        text = repr(op) if not isinstance(op, (list, dict)) else f"<unencodable {type(op).__name__}>"
        return text


def canonical_ops(ledger_before: Ledger, program: Any, now: int, form: LedgerForm | None = None) -> list[CanonicalOp]:
    """Resolve a program's slot indices to the facts they touch.

    The program is applied op by op with the lenient reducer, so each op is resolved against the
    ledger as it stands at that point: ADD/UPDATE -> ``(kind, s, p, o)``; TOMBSTONE/EVICT ``i``
    -> ``(kind, s, p)`` of slot ``i`` before the op. An op the reducer would skip becomes
    ``("INVALID", claimed kind, op JSON)`` (claimed kind "" when ``op`` is not a known kind).

    Args:
        ledger_before: the ledger the program was written against (not mutated).
        program: the parsed program; a non-list is one invalid op.
        now: session index (only passed to the reducer).
        form: an open ledger's form (SPEC §1.7): ops are checked under it, and a dated ADD/UPDATE
            resolves to ``(kind, s, p, o, w)``, so a wrong date is a wrong op. None = closed.

    Returns:
        One canonical tuple per op, in program order.

    >>> L = [{"i": 0, "s": "Ari", "p": "job", "o": "nurse", "prev": None, "v": 1, "born": 0, "t": 0, "uses": 0}, {"i": 1}]
    >>> canonical_ops(L, [{"op": "TOMBSTONE", "i": 0}, {"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"},
    ...                   {"op": "EVICT", "i": 1}, {"op": "EVICT", "i": 1}], now=1)
    [('TOMBSTONE', 'Ari', 'job'), ('ADD', 'Ari', 'pet', 'cat'), ('EVICT', 'Ari', 'pet'), ('INVALID', 'EVICT', '{"op":"EVICT","i":1}')]
    """
    if not isinstance(program, list):
        return [("INVALID", "", _op_json(program))]
    ledger = ledger_before
    out: list[CanonicalOp] = []
    for op in program:
        if check_op(ledger, op, form) is not None:
            kind = op.get("op") if isinstance(op, dict) else None
            out.append(("INVALID", kind if kind in OP_KINDS else "", _op_json(op)))
            continue
        kind = op["op"]
        if kind in ("ADD", "UPDATE"):
            out.append((kind, op["s"], op["p"], op["o"], *([op["w"]] if "w" in op else [])))
        else:
            slot = ledger[op["i"]]
            assert not is_free(slot)  # check_op rejects free slots for TOMBSTONE/EVICT
            out.append((kind, slot["s"], slot["p"]))
        ledger, _ = reduce(ledger, [op], now, strict=True, form=form)
    return out


def _kind_of(cop: CanonicalOp) -> str:
    """The op type a canonical op is scored under (an INVALID op under its claimed kind)."""
    return cop[1] if cop[0] == "INVALID" else cop[0]


def op_scores(
    ledger_before: Ledger,
    pred_program: Any,
    gold_program: Any,
    now: int,
    *,
    gold_ledger_before: Ledger | None = None,
    form: LedgerForm | None = None,
) -> dict[str, Any]:
    """Score a predicted program against the gold one.

    Both programs are canonicalised (:func:`canonical_ops`) and matched as multisets. An invalid
    predicted op is a false positive overall and under the op type it claims (an op of unknown
    type only overall). Scores follow :func:`prf` (empty vs empty = 1.0).

    Args:
        ledger_before: the ledger the predicted program was written against.
        pred_program: the parsed model program.
        gold_program: the gold program (always valid for generated data).
        now: session index.
        gold_ledger_before: the ledger the gold program was written against, when a system's own
            ledger has drifted from gold (evaluation); default ``ledger_before``. Because ops are
            compared as facts, a correct op matches even if the slot positions differ.
        form: an open ledger's form (:func:`canonical_ops`); None = closed.

    Returns:
        ``{"tp","fp","fn","precision","recall","f1","n_invalid","by_type"}`` where ``by_type``
        maps each of ADD/UPDATE/TOMBSTONE/EVICT to ``{"tp","fp","fn","precision","recall","f1"}``.

    >>> L = [{"i": 0, "s": "Ari", "p": "job", "o": "nurse", "prev": None, "v": 1, "born": 0, "t": 0, "uses": 0}, {"i": 1}]
    >>> gold = [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}]
    >>> s = op_scores(L, [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}, {"op": "EVICT", "i": 1}], gold, 1)
    >>> (s["tp"], s["fp"], s["fn"], s["precision"], s["recall"], s["n_invalid"])
    (1, 1, 0, 0.5, 1.0, 1)
    >>> s["by_type"]["EVICT"]["fp"], s["by_type"]["UPDATE"]["f1"]
    (1, 1.0)
    """
    pred = canonical_ops(ledger_before, pred_program, now, form)
    gold = canonical_ops(ledger_before if gold_ledger_before is None else gold_ledger_before, gold_program, now, form)
    matched = Counter(pred) & Counter(gold)
    tp_by = Counter()
    for cop, n in matched.items():
        tp_by[_kind_of(cop)] += n
    pred_by = Counter(_kind_of(c) for c in pred)
    gold_by = Counter(_kind_of(c) for c in gold)
    tp = sum(matched.values())
    out: dict[str, Any] = {"tp": tp, "fp": len(pred) - tp, "fn": len(gold) - tp}
    out.update(prf(out["tp"], out["fp"], out["fn"]))
    out["n_invalid"] = sum(1 for c in pred if c[0] == "INVALID")
    out["by_type"] = {}
    for kind in OP_KINDS:
        counts = {"tp": tp_by[kind], "fp": pred_by[kind] - tp_by[kind], "fn": gold_by[kind] - tp_by[kind]}
        out["by_type"][kind] = {**counts, **prf(counts["tp"], counts["fp"], counts["fn"])}
    return out


def micro_op_scores(scores: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Micro-average :func:`op_scores` results: sum the counts, then recompute P/R/F1.

    Args:
        scores: op_scores dicts (one per session and persona).

    Returns:
        The same shape as :func:`op_scores` (``n_invalid`` summed). No scores = empty vs empty.

    >>> a = {"tp": 1, "fp": 0, "fn": 1, "n_invalid": 0, "by_type": {}}
    >>> b = {"tp": 1, "fp": 2, "fn": 0, "n_invalid": 2, "by_type": {}}
    >>> m = micro_op_scores([a, b]); (m["tp"], m["fp"], m["fn"], m["precision"], m["n_invalid"])
    (2, 2, 1, 0.5, 2)
    """
    total = {"tp": 0, "fp": 0, "fn": 0, "n_invalid": 0}
    by_type = {kind: {"tp": 0, "fp": 0, "fn": 0} for kind in OP_KINDS}
    for s in scores:
        for key in total:
            total[key] += s[key]
        for kind, counts in s.get("by_type", {}).items():
            for key in ("tp", "fp", "fn"):
                by_type[kind][key] += counts[key]
    out: dict[str, Any] = {k: total[k] for k in ("tp", "fp", "fn")}
    out.update(prf(total["tp"], total["fp"], total["fn"]))
    out["n_invalid"] = total["n_invalid"]
    out["by_type"] = {kind: {**c, **prf(c["tp"], c["fp"], c["fn"])} for kind, c in by_type.items()}
    return out


def _facts(ledger: Ledger) -> Counter:
    return Counter((slot["s"], slot["p"], slot["o"], slot["v"]) for slot in ledger if not is_free(slot))


def state_f1(pred_ledger: Ledger, gold_ledger: Ledger) -> float:
    """F1 between the occupied facts ``(s, p, o, v)`` of two ledgers (slot positions ignored).

    Two empty ledgers score 1.0. ``prev``, ``born``, ``t`` and ``uses`` are bookkeeping and are
    not compared.

    Args:
        pred_ledger: the system's ledger. gold_ledger: the gold ``ledger_after``.

    Returns:
        F1 in [0, 1].

    >>> a = [{"i": 0, "s": "Ari", "p": "job", "o": "chef", "prev": None, "v": 1, "born": 0, "t": 0, "uses": 0}, {"i": 1}]
    >>> b = [{"i": 0}, {"i": 1, "s": "Ari", "p": "job", "o": "chef", "prev": "x", "v": 1, "born": 1, "t": 2, "uses": 5}]
    >>> state_f1(a, b), state_f1(a, [{"i": 0}, {"i": 1}]), state_f1([{"i": 0}], [{"i": 0}])
    (1.0, 0.0, 1.0)
    """
    pred, gold = _facts(pred_ledger), _facts(gold_ledger)
    tp = sum((pred & gold).values())
    return prf(tp, sum(pred.values()) - tp, sum(gold.values()) - tp)["f1"]
