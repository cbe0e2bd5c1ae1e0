"""The memory registry is the one list of systems (clerk.memory.registry): what the systems declare,
the lists every table, figure, view, probe and config enum reads from it, that its answers do not
depend on import order, and the declarations it refuses."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from clerk.config import SYNTHETIC_SESSION_FIELDS
from clerk.memory import MEMORY_REGISTRY, LedgerSystem, MemorySystem, Registry
from clerk.memory.registry import LEDGER_VIEW, LOCOMO, SYNTHETIC


class TestDeclarations:
    """The declared attributes give exactly the lists the code held before it read them from here
    (the shipped tables, figures, SFT views and config enums depend on them)."""

    def test_orders(self):
        assert MEMORY_REGISTRY.in_order() == ["clerk", "clerk-repair", "oracle", "prompted-ledger", "full", "window", "rag",
                                              "add-only", "null", "clerk-unconstrained", "summary-rag", "evidence"]
        assert MEMORY_REGISTRY.in_order(LOCOMO) == ["clerk", "clerk-repair", "prompted-ledger", "full", "null",
                                                    "summary-rag", "evidence"]
        assert "summary-rag" not in MEMORY_REGISTRY.in_order(SYNTHETIC)

    def test_views_probe_and_reference(self):
        assert MEMORY_REGISTRY.view_kinds() == [LEDGER_VIEW, "full", "window", "rag", "add-only"]
        assert MEMORY_REGISTRY.read_cost_views() == {
            "oracle": "ledger (CLERK)", "full": "full history", "window": "last-k window",
            "rag": "BM25 top-k turns", "add-only": "add-only notes"}
        assert MEMORY_REGISTRY.reference() == "clerk"
        assert {n for n in MEMORY_REGISTRY.names() if MEMORY_REGISTRY.info(n).writer_kind} == {
            "clerk", "clerk-repair", "clerk-unconstrained", "prompted-ledger"}

    def test_the_consumers_read_the_registry(self):
        from clerk.evaluate.read_cost import READ_COST_VIEWS
        from clerk.locomo.data import LOCOMO_SYSTEMS
        from clerk.memory.choices import registry_enums
        from clerk.report.figures import VIEW_LABELS
        from clerk.report.paired import REFERENCE
        from clerk.report.systems import SYSTEM_ORDER
        from clerk.wiring import locomo_systems

        assert list(SYSTEM_ORDER) == MEMORY_REGISTRY.in_order() and REFERENCE == MEMORY_REGISTRY.reference()
        assert list(LOCOMO_SYSTEMS) == MEMORY_REGISTRY.in_order(LOCOMO)
        assert VIEW_LABELS == MEMORY_REGISTRY.read_cost_views() and list(READ_COST_VIEWS) == list(VIEW_LABELS)
        enums = registry_enums()
        assert enums["memory_system"] == sorted(MEMORY_REGISTRY.in_order(SYNTHETIC))
        assert enums["locomo_system"] == MEMORY_REGISTRY.in_order(LOCOMO)
        assert enums["view_kind"] == MEMORY_REGISTRY.view_kinds()
        config = {"locomo": {"systems": MEMORY_REGISTRY.in_order(LOCOMO)}, "evaluate": {"reader_model": "reader"}}
        assert locomo_systems(config) == (["clerk", "clerk-repair"],
                                          ["prompted-ledger", "full", "null", "summary-rag", "evidence"])

    def test_benchmarks_agree_with_the_data_each_system_reads(self):
        """A system serves the synthetic benchmark exactly when it reads only fields synthetic
        sessions have (summary-rag reads LoCoMo's summaries)."""
        for name in MEMORY_REGISTRY.names():
            reads = set(getattr(MEMORY_REGISTRY.get(name), "session_fields", ()))
            assert (SYNTHETIC in MEMORY_REGISTRY.info(name).benchmarks) == (reads <= SYNTHETIC_SESSION_FIELDS), name


def test_answers_do_not_depend_on_import_order():
    """Whatever imports the systems first, in whatever order, the registry answers the same."""
    names = sorted(m.__module__ for m in map(MEMORY_REGISTRY.get, MEMORY_REGISTRY.names()))
    query = ("from clerk.memory import MEMORY_REGISTRY as R; import json; "
             "print(json.dumps([R.names(), R.in_order(), R.in_order('locomo'), R.view_kinds(), "
             "R.read_cost_views(), R.reference()]))")
    outputs = set()
    for first in ([], sorted(set(names)), sorted(set(names), reverse=True), ["clerk.report.paired"]):
        code = "".join(f"import {module}; " for module in first) + query
        outputs.add(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())[1] == MEMORY_REGISTRY.in_order()


def _package(tmp_path, monkeypatch, name: str, modules: dict[str, str]) -> Registry:
    """A throwaway package of system modules registering into ``<name>.REG`` (its __init__)."""
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text(f"from clerk.memory import Registry\nREG = Registry({name!r})\n")
    for module, body in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    return importlib.import_module(name).REG


SYSTEM = """
from clerk.memory import MemorySystem
from {pkg} import REG

@REG.register({name!r}, order={order}, benchmarks=("synthetic",))
class S(MemorySystem):
    version = "1"
"""


class TestLoading:
    def test_every_module_is_imported_before_the_first_answer(self, tmp_path, monkeypatch):
        reg = _package(tmp_path, monkeypatch, "regpkg_a", {
            "zeta": SYSTEM.format(pkg="regpkg_a", name="zeta", order=1),
            "alpha": SYSTEM.format(pkg="regpkg_a", name="alpha", order=2)})
        assert "regpkg_a.zeta" not in sys.modules
        assert reg.in_order() == ["zeta", "alpha"] and reg.names() == ["alpha", "zeta"]

    def test_asking_at_import_time_is_refused(self, tmp_path, monkeypatch):
        """A module that asks the registry while it is being loaded would see part of it: refused."""
        reg = _package(tmp_path, monkeypatch, "regpkg_b", {
            "alpha": SYSTEM.format(pkg="regpkg_b", name="alpha", order=1),
            "beta": "from regpkg_b import REG\nNAMES = REG.names()\n"})
        with pytest.raises(RuntimeError, match="asked while regpkg_b's modules are being imported"):
            reg.names()


class _Transcript(MemorySystem):
    version = "1"


class _Ledger(LedgerSystem):
    version = "1"


class TestRefusedDeclarations:
    def test_order_is_an_unshared_int(self):
        reg = Registry()
        reg.register("a", order=1, benchmarks=(SYNTHETIC,))(type("A", (_Transcript,), {"version": "1"}))
        with pytest.raises(KeyError, match="order 1 is already 'a''s"):
            reg.register("b", order=1, benchmarks=(SYNTHETIC,))(type("B", (_Transcript,), {"version": "1"}))
        with pytest.raises(TypeError, match="order must be an int"):
            reg.register("c", order=2.0, benchmarks=(SYNTHETIC,))(type("C", (_Transcript,), {"version": "1"}))
        assert reg.names() == ["a"]

    @pytest.mark.parametrize("benchmarks", [(), ("synthetic", "mmlu")])
    def test_benchmarks_are_known(self, benchmarks):
        with pytest.raises(TypeError, match="benchmarks must be some of"):
            Registry().register("a", order=1, benchmarks=benchmarks)(type("A", (_Transcript,), {"version": "1"}))

    def test_view_kind_is_ledger_for_a_ledger_and_the_name_for_a_transcript(self):
        reg = Registry()
        reg.register("led", order=1, benchmarks=(SYNTHETIC,), view_kind=LEDGER_VIEW)(
            type("L", (_Ledger,), {"version": "1"}))
        reg.register("tr", order=2, benchmarks=(SYNTHETIC,), view_kind="tr")(type("T", (_Transcript,), {"version": "1"}))
        assert reg.view_kinds() == [LEDGER_VIEW, "tr"]
        with pytest.raises(TypeError, match="view_kind must be None or 'ledger'"):
            reg.register("x", order=3, benchmarks=(SYNTHETIC,), view_kind="x")(type("X", (_Ledger,), {"version": "1"}))
        with pytest.raises(TypeError, match="view_kind must be None or 'y'"):
            reg.register("y", order=4, benchmarks=(SYNTHETIC,), view_kind=LEDGER_VIEW)(
                type("Y", (_Transcript,), {"version": "1"}))

    def test_exactly_one_reference(self):
        reg = Registry()
        reg.register("a", order=1, benchmarks=(SYNTHETIC,))(type("A", (_Transcript,), {"version": "1"}))
        with pytest.raises(KeyError, match=r"exactly one .* found \[\]"):
            reg.reference()
        for name, order in (("b", 2), ("c", 3)):
            reg.register(name, order=order, benchmarks=(SYNTHETIC,), reference=True)(
                type(name, (_Transcript,), {"version": "1"}))
        with pytest.raises(KeyError, match=r"found \['b', 'c'\]"):
            reg.reference()
