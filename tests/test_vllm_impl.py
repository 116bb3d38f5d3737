"""The vLLM check reads one record of an impl (:class:`ImplFacts`), made from a source tree's
parsed facts or from the class (or object) a running vLLM built: both ways give the same
declarations for the same code, an object's own attribute is its class's, and the check judges
only the record. The
tree here is a few lines written for these tests (no vLLM)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from attn_contracts.findings import Location
from attn_contracts.integrations import vllm as iv
from attn_contracts.integrations.vllm_impl import ImplFacts
from attn_contracts.integrations.vllm_impl import MroClass
from attn_contracts.integrations.vllm_impl import from_runtime

_MODULE = "vllm.v1.attention.backends.mine"
_REGISTRY = ("import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
             f"    MINE = '{_MODULE}.MineBackend'\n")
# a base that declares defaults and returns no LSE itself; the impl says it returns one
_MINE = ("class MineBase:\n    can_return_lse_for_decode = False\n    lse_base_on_e = True\n\n\n"
         "class MineImpl(MineBase):\n    can_return_lse_for_decode = True\n\n\n"
         "class MineBackend:\n    @staticmethod\n    def get_impl_cls():\n        return MineImpl\n")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {"vllm/__init__.py": "__version__ = '0.33.0'\n", "vllm/v1/__init__.py": "",
             "vllm/v1/attention/__init__.py": "", "vllm/v1/attention/backends/__init__.py": "",
             "vllm/v1/attention/backends/registry.py": _REGISTRY,
             "vllm/v1/attention/backends/mine/__init__.py": _MINE}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def _loaded(tree: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The tree's impl module as a running vLLM would have it (under its own name)."""
    spec = importlib.util.spec_from_file_location(
        _MODULE, tree / "vllm/v1/attention/backends/mine/__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, _MODULE, module)
    spec.loader.exec_module(module)
    return module


def test_the_source_and_the_runtime_give_one_record(tree: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = iv.mapping_for(tree).impls["MINE"]
    running = from_runtime(_loaded(tree, monkeypatch).MineImpl, iv.DECLARATIONS)
    assert (parsed.key, parsed.declared) == (running.key, running.declared)
    assert [c.key for c in parsed.mro] == [c.key for c in running.mro]
    # the sources give each attribute's resolved owner only: an ancestor's setting that a nearer
    # class overrides (MineBase's can_return_lse_for_decode) is in the running record alone
    for p, r in zip(parsed.mro, running.mro, strict=True):
        assert set(p.sets) <= set(r.sets)
    assert parsed.path == f"{_MODULE}.MineImpl"
    assert [c.key for c in parsed.mro] == [(_MODULE, "MineImpl"), (_MODULE, "MineBase")]
    base = parsed.attr(iv.BASE_ATTR)
    assert (base.value, base.owner_name, parsed.inherited(iv.BASE_ATTR)) == (True, "MineBase", True)
    assert base.where == Location("vllm/v1/attention/backends/mine/__init__.py", 3)
    # what the base's owner says of itself: it returns no LSE (the AC002 hazard), read as such
    # both ways (unset in the sources' record, False in the running one)
    owner = base.owner or ("", "")
    assert not parsed.read_on(owner, iv.RETURNS_ATTR, False)
    assert running.read_on(owner, iv.RETURNS_ATTR) is False


def test_an_objects_own_attribute_and_property_are_what_it_answers(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _loaded(tree, monkeypatch)
    impl = module.MineImpl()
    impl.lse_base_on_e = False  # set on the object: its class's, not the base's default
    facts = from_runtime(impl, iv.DECLARATIONS)
    assert facts.value(iv.BASE_ATTR) is False and not facts.inherited(iv.BASE_ATTR)
    # no file: the object vLLM built, a unit named (no line)
    assert facts.attr(iv.BASE_ATTR).where == Location("set on the MineImpl object vLLM built")

    class Prop(module.MineImpl):  # type: ignore[name-defined,misc]
        @property
        def lse_base_on_e(self) -> bool:
            raise RuntimeError("not built yet")

    # a property that raises reads as None (vLLM's own read would fail too)
    assert from_runtime(Prop(), iv.DECLARATIONS).value(iv.BASE_ATTR) is None


def test_the_check_reads_the_record_alone() -> None:
    """A record no class stands behind is judged as the class it describes would be."""
    mro = (MroClass("m", "Impl", (("can_return_lse_for_decode", True),
                                  ("lse_base_on_e", True))),)
    facts = ImplFacts("m", "Impl", mro)
    assert facts.value(iv.BASE_ATTR) is None and not facts.is_set(iv.BASE_ATTR)
    bent = facts.with_value(iv.RETURNS_ATTR, True, Location("m.py", 2)).with_value(
        iv.BASE_ATTR, False, Location("m.py", 3))
    assert bent.value(iv.BASE_ATTR) is False and bent.attr(iv.BASE_ATTR).owner == ("m", "Impl")
    assert [c.key for c in bent.mro] == [("m", "Impl")]
    assert dict(bent.mro[0].sets) == {"can_return_lse_for_decode": True, "lse_base_on_e": False}
