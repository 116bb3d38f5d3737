"""SGLang's backends derived from its sources: on small source trees written here (every run),
and on every released SGLang under ``$ATTN_CONTRACTS_RELEASES`` (default /work/releases; skipped
where there are none)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from attn_contracts.cli import main
from attn_contracts.findings import Code
from attn_contracts.findings import Location
from attn_contracts.findings import Severity
from attn_contracts.integrations import sglang

REGISTRY = '''
def register_attention_backend(name):
    return lambda fn: fn

@register_attention_backend("flashmla")
def create_flashmla_backend(runner):
    from sglang.srt.layers.attention.flashmla_backend import FlashMLABackend
    return FlashMLABackend(runner)

@register_attention_backend("homemade")
def create_homemade_backend(runner):
    if not runner.use_mla_backend:
        from sglang.srt.layers.attention.homemade_backend import HomemadeMHA
        return HomemadeMHA(runner)
    from sglang.srt.layers.attention.homemade_backend import HomemadeMLA
    return HomemadeMLA(runner)

@register_attention_backend("alias")
def create_alias(runner):
    return create_flashmla_backend(runner)
'''

FLASHMLA = '''
from sgl_kernel.flash_mla import flash_mla_with_kvcache
from sglang.srt.runtime_context import get_parallel


class Base:
    def forward_decode(self, q, layer):
        return q


class FlashMLABackend(Base):
    def forward_decode(self, q, layer):
        o, lse = flash_mla_with_kvcache(q=q, k_cache=self.k, block_table=self.t)
        if get_parallel().dcp_enabled:
            return o, lse
        return o
'''

HOMEMADE = '''
from sglang.srt.runtime_context import get_parallel
import homemade_kernels


class HomemadeMHA:
    def forward_decode(self, q, layer):
        return q


class HomemadeMLA:
    def forward_decode(self, q, layer):
        o, lse = homemade_kernels.decode(q)
        if get_parallel().dcp_enabled:
            return o, lse
        return o
'''

FORWARD_MLA = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


def is_mla_dcp_lse_base_on_e(attention_backend):
    return attention_backend in {{{names}}}


class Mixin:
    def forward_core(self, out, lse, group):
        is_lse_base_on_e = is_mla_dcp_lse_base_on_e(self.current_attention_backend)
        return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=is_lse_base_on_e)
'''

FORWARD_MLA_OLD = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


class Mixin:
    def forward_core(self, out, lse, group):
        return cp_lse_ag_out_rs_mla(out, lse, group)
'''

_ATT = "srt/layers/attention"
_FWD = "srt/models/deepseek_common/attention_forward_methods/forward_mla.py"


def _tree(tmp_path: Path, names: str, *, version: str = "0.5.23",
          forward: str | None = None) -> Path:
    pkg = tmp_path / "sglang"
    files = {f"{_ATT}/attention_registry.py": REGISTRY, f"{_ATT}/flashmla_backend.py": FLASHMLA,
             f"{_ATT}/homemade_backend.py": HOMEMADE,
             _FWD: forward if forward is not None else FORWARD_MLA.format(names=names)}
    for rel, text in files.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in (pkg, pkg / "srt", pkg / "srt/layers", pkg / _ATT):
        (folder / "__init__.py").touch()
    meta = tmp_path / f"sglang-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
    return tmp_path


def _errors(row: sglang.SglangReport) -> list[tuple[Code, str]]:
    return [(f.code, f.message) for f in row.findings if f.severity is Severity.ERROR]


def test_the_names_classes_kernels_and_base_come_from_the_source(tmp_path: Path) -> None:
    rows = {r.backend: r for r in sglang.report(root=_tree(tmp_path, '"flashmla", "homemade"'))}
    assert set(rows) == {"flashmla", "homemade", "alias"}
    assert rows["flashmla"].impl == "FlashMLABackend"
    assert rows["flashmla"].records == ["flash_mla.decode"]  # its decode's kernel
    assert rows["alias"].impl == "FlashMLABackend"  # a factory that calls another factory
    assert rows["homemade"].impl == "HomemadeMLA"  # the MLA branch of the factory
    assert rows["flashmla"].declared["is_lse_base_on_e (cp_lse_ag_out_rs_mla)"] == "True"
    assert _errors(rows["flashmla"]) == []  # base-e kernel, told e
    # an unrecorded kernel the code names explicitly: SGLang says its base, a note
    (note,) = [f for f in rows["homemade"].findings if f.code is Code.AC002]
    assert note.severity is Severity.NOTE


def test_lint_reports_the_mappings_base_edges_at_the_combine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``attn-contracts lint`` runs the mapping's rule over its own program model: a name the
    table sends to the wrong base is an error at the combine call, naming the backends."""
    root = _tree(tmp_path, '"other"')
    assert main(["lint", str(root / "sglang"), "--format", "json"]) == 1
    found = [f for f in json.loads(capsys.readouterr().out) if f["code"] in ("AC016", "AC002")]
    assert {(Path(f["path"]).name, f["line"], f["code"]) for f in found} == {
        ("forward_mla.py", 12, "AC016"), ("forward_mla.py", 12, "AC002")}
    (edge,) = [f for f in found if f["code"] == "AC016"]
    assert edge["message"].startswith("SGLang backends 'flashmla', 'alias':")
    # the table that names both: clean; the lint alone (no engine rule) never reads the table
    fixed = _tree(tmp_path / "fixed", '"flashmla", "homemade", "alias"')
    assert main(["lint", str(fixed / "sglang")]) == 0
    from attn_contracts.lint import lint_paths

    assert not [f for f in lint_paths([root / "sglang"]) if f.code is Code.AC016]


def test_lint_leaves_a_tree_without_its_registry_or_combine_alone(tmp_path: Path) -> None:
    """Linting part of a tree: the classes outside the linted files are not guessed at."""
    from attn_contracts.integrations import lint_rules
    from attn_contracts.lint import lint_paths

    root = _tree(tmp_path, '"other"')
    part = lint_paths([root / "sglang" / _ATT], engine_rules=lint_rules())
    assert not [f for f in part if f.code in (Code.AC016, Code.AC002)]


NAME_CHAIN = """    if attention_backend is None:
        return False
    if attention_backend.endswith("_fi"):
        return False
    return attention_backend in "{names}".split(",")"""


def test_lint_of_the_combine_alone_reads_the_packages_backends(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Linting the combine's file alone: the registry and backends of its package are read to
    judge it (never reported on), and the name function is read by the interpreter, whatever
    Python it is written in (a split string, an if chain)."""
    forward = FORWARD_MLA.replace("    return attention_backend in {{{names}}}", NAME_CHAIN)
    bug = _tree(tmp_path / "bug", "", forward=forward.format(names="other,homemade"))
    assert main(["lint", str(bug / "sglang" / _FWD), "--format", "json"]) == 1
    found = [f for f in json.loads(capsys.readouterr().out) if f["code"] == "AC016"]
    assert [Path(f["path"]).name for f in found] == ["forward_mla.py"]
    assert found[0]["message"].startswith("SGLang backends 'flashmla', 'alias':")
    fixed = _tree(tmp_path / "fixed", "", forward=forward.format(names="flashmla,alias,homemade"))
    main(["lint", str(fixed / "sglang" / _FWD), "--format", "json"])
    assert not [f for f in json.loads(capsys.readouterr().out) if f["severity"] == "error"]


FORWARD_MLA_ROCM = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla

_NATURAL = frozenset({{{names}}})


class RocmMixin:
    def forward_core_rocm(self, out, lse, group):
        on_e = self.current_attention_backend in _NATURAL
        return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=on_e)
'''


@pytest.mark.parametrize(("names", "wrong"), [('"homemade"', True),
                                             ('"flashmla", "alias", "homemade"', False)])
def test_the_rocm_forward_is_read_like_the_cuda_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], names: str, wrong: bool) -> None:
    """The same layer's ROCm forward hands its partial to the combine too (engine data,
    ``also``): its base, told by its own table, is judged per backend as the CUDA one's."""
    root = _tree(tmp_path, '"flashmla", "homemade", "alias"')
    rocm = root / "sglang" / _FWD.replace("forward_mla.py", "forward_mla_rocm.py")
    rocm.write_text(FORWARD_MLA_ROCM.format(names=names))
    main(["lint", str(root / "sglang"), "--format", "json"])
    found = [(Path(f["path"]).name, f["message"].partition(":")[0])
             for f in json.loads(capsys.readouterr().out) if f["code"] == "AC016"]
    assert found == ([("forward_mla_rocm.py", "SGLang backends 'flashmla', 'alias'")]
                     if wrong else [])


#: the merge moved into a public module-level helper of the CUDA forward, with a base default,
#: which the ROCm forward imports and calls too
FORWARD_MLA_FACADE = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


def is_mla_dcp_lse_base_on_e(attention_backend):
    return attention_backend in {"flashmla", "alias"}


def merge_partials(out, lse, group, *, is_lse_base_on_e=False):
    return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=is_lse_base_on_e)


class Mixin:
    def forward_core(self, out, lse, group):
        return merge_partials(out, lse, group, is_lse_base_on_e=is_mla_dcp_lse_base_on_e(
            self.current_attention_backend))
'''

FORWARD_MLA_ROCM_FACADE = '''
from sglang.srt.models.deepseek_common.attention_forward_methods.forward_mla import (
    is_mla_dcp_lse_base_on_e,
    merge_partials,
)


class RocmMixin:
    def forward_core_rocm(self, out, lse, group):
        return merge_partials(out, lse, group{told})
'''


@pytest.mark.parametrize(("told", "wrong"), [
    ("", True),  # the helper's default (base 2) for flashmla's natural-log LSE
    (", is_lse_base_on_e=is_mla_dcp_lse_base_on_e(self.current_attention_backend)", False)])
def test_a_helper_of_another_file_is_told_the_base_by_each_call(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], told: str, wrong: bool) -> None:
    """A merge moved into a helper that both forwards call, one from the file that imports
    it: each call tells the combine in the helper its base (one that leaves it out, the
    helper's default), read in the caller as a base written there; the error is at the
    combine, the reason names the way. Where every call passes the base, the default is
    never taken: no AC021 either, and the combine reads as it did inline."""
    root = _tree(tmp_path, "", forward=FORWARD_MLA_FACADE)
    rocm = root / "sglang" / _FWD.replace("forward_mla.py", "forward_mla_rocm.py")
    rocm.write_text(FORWARD_MLA_ROCM_FACADE.format(told=told))
    main(["lint", str(root / "sglang"), "--format", "json"])
    found = [(Path(f["path"]).name, f["line"], f["code"], f["message"])
             for f in json.loads(capsys.readouterr().out) if f["severity"] != "note"]
    errors = [(n, line, code) for n, line, code, _ in found if code == "AC016"]
    assert errors == ([("forward_mla.py", 10, "AC016")] if wrong else [])
    assert any(code == "AC021" for _, _, code, _ in found) == wrong
    if wrong:
        message = next(m for _, _, code, m in found if code == "AC016")
        assert "SGLang backends 'flashmla', 'alias'" in message and \
            "is_lse_base_on_e=False, given by the call at " in message and \
            "forward_mla_rocm.py:10" in message


@pytest.mark.parametrize("rocm", [
    # another class's own method of the same name: a call of it is no call of the helper
    "class RocmMixin:\n    def _merge(self, a, b, c, keep_fp32):\n        return a\n"
    "    def forward_core_rocm(self, out, lse, group):\n"
    "        return self._merge(out, lse, group, False)\n",
    # another file's own function of the same name
    "def _merge(a, b, c, d):\n    return a\n\ndef run(out, lse, group):\n"
    "    return _merge(out, lse, group, False)\n",
])
def test_a_call_of_another_function_of_the_helpers_name_is_not_its_call(
        tmp_path: Path, rocm: str) -> None:
    root = _tree(tmp_path, "", forward=FORWARD_MLA_MOVED.format(
        call="self._merge(out, lse, group, on_e)"))
    (root / "sglang" / _FWD.replace("forward_mla.py", "forward_mla_rocm.py")).write_text(rocm)
    rows = {r.backend: r for r in sglang.report(root=root)}
    assert _errors(rows["flashmla"]) == []


def test_a_helper_that_rebinds_its_base_parameter_is_not_read_at_its_callers(
        tmp_path: Path) -> None:
    forward = FORWARD_MLA_MOVED.format(call="self._merge(out, lse, group, on_e)").replace(
        "        return cp_lse_ag_out_rs_mla(",
        "        is_lse_base_on_e = not is_lse_base_on_e\n        return cp_lse_ag_out_rs_mla(")
    rows = {r.backend: r for r in sglang.report(root=_tree(tmp_path, "", forward=forward))}
    assert any(f.code is Code.AC028 for f in rows["flashmla"].findings)


def test_one_combines_findings_of_one_code_name_each_problem_with_its_backends() -> None:
    """The lint keeps one finding per code and place: where backends break one combine in
    different ways, the message names each problem with its own backends (a new backend's
    mismatch is never folded into another's message, where a new bug would read as old)."""
    from attn_contracts.findings import Finding

    def one(message: str) -> Finding:
        return Finding(Code.AC016, "x", message)
    merged = sglang._merged_message([("trtllm_mla", one("dispatch may pick cute-dsl")),
                                     ("cutedsl_mla", one("cute-dsl told base 2 (why: "
                                                         "cutedsl_mla)")),
                                     ("trtllm_mla", one("dispatch may pick cute-dsl")),
                                     ("flashmla", one("cute-dsl told base 2 (why: flashmla)")),
                                     ("aiter", one("fa told base 2 (why: aiter)"))])
    # each problem with its reason where the reason is new (the way a helper's caller tells
    # the base), else by what feeds what
    assert merged == ("SGLang backend 'trtllm_mla': dispatch may pick cute-dsl (1 more such "
                      "edge(s) here); SGLang backends 'cutedsl_mla', 'flashmla': cute-dsl told "
                      "base 2 (why: cutedsl_mla); SGLang backend 'aiter': fa told base 2")


def test_lint_warns_where_a_names_base_cannot_be_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A name function the interpreter cannot read is no error, and no silence either: the
    combine's ``AC028`` warning names the backends whose base is not read."""
    forward = FORWARD_MLA.replace("    return attention_backend in {{{names}}}",
                                  "    return unknown_table().get(attention_backend)")
    root = _tree(tmp_path, "", forward=forward)
    main(["lint", str(root / "sglang"), "--format", "json"])
    found = [(f["code"], f["severity"], f["message"].partition(":")[0])
             for f in json.loads(capsys.readouterr().out)
             if Path(f["path"]).name == "forward_mla.py"]
    assert found == [("AC028", "warning", "SGLang backends 'flashmla', 'homemade', 'alias'")]


def test_a_backend_left_out_of_the_set_is_an_error(tmp_path: Path) -> None:
    rows = {r.backend: r for r in sglang.report(root=_tree(tmp_path, '"other"'))}
    (err,) = _errors(rows["flashmla"])
    assert err[0] is Code.AC016 and "is_mla_dcp_lse_base_on_e('flashmla') = False" in err[1]
    # the unrecorded kernel combined with the default nothing confirms: fail closed
    assert [c for c, _ in _errors(rows["homemade"])] == [Code.AC002]


FORWARD_MLA_TABLE = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


class _Natural:
    _NAMES = frozenset({{{names}}})

    def __getitem__(self, name):
        return name in self._NAMES


NATURAL = _Natural()


def is_mla_dcp_lse_base_on_e(attention_backend):
    return NATURAL[attention_backend]


class Mixin:
    def forward_core(self, out, lse, group):
        is_lse_base_on_e = is_mla_dcp_lse_base_on_e(self.current_attention_backend)
        return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=is_lse_base_on_e)
'''


@pytest.mark.parametrize(("names", "errors"), [('"flashmla"', []), ('"other"', [Code.AC016])])
def test_the_predicate_asked_per_name_reads_the_calls_it_makes(
        tmp_path: Path, names: str, errors: list[Code]) -> None:
    """The base per registered name is what the predicate returns, its own calls read for
    their values (an object's ``__getitem__``, not an annotation): flashmla's natural-log
    LSE is told base e where the table holds its name, base 2 where it does not."""
    root = _tree(tmp_path, "", forward=FORWARD_MLA_TABLE.format(names=names))
    rows = {r.backend: r for r in sglang.report(root=root)}
    assert [c for c, _ in _errors(rows["flashmla"])] == errors


FORWARD_MLA_INLINE = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


class Mixin:
    def forward_core(self, out, lse, group):
        for name in ("flashmla", "other"):
            if self.current_attention_backend == name:
                is_lse_base_on_e = True
{brk}
        else:
            is_lse_base_on_e = False
        return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=is_lse_base_on_e)
'''


@pytest.mark.parametrize("brk", ["", "                break"])
def test_a_base_written_in_the_layer_is_read_with_each_registered_name(
        tmp_path: Path, brk: str) -> None:
    """No function of the name: the keyword's value where the call is, read with the layer's
    name attribute (engine data) set to each registered name, as Python runs the method. A
    ``for``/``else`` without ``break`` runs its ``else`` every time: base 2 for every name."""
    root = _tree(tmp_path, "", forward=FORWARD_MLA_INLINE.format(brk=brk))
    rows = {r.backend: r for r in sglang.report(root=root)}
    errors = _errors(rows["flashmla"])
    if brk:
        assert errors == []
    else:
        assert [c for c, _ in errors] == [Code.AC016]


FORWARD_MLA_SPREAD = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


def is_mla_dcp_lse_base_on_e(attention_backend):
    return attention_backend in {{"flashmla"}}


class Mixin:
    def forward_core(self, out, lse, group, extra):
        is_lse_base_on_e = is_mla_dcp_lse_base_on_e(self.current_attention_backend)
        options = {options}
        return cp_lse_ag_out_rs_mla(out, lse, group, **options)
'''


@pytest.mark.parametrize(("options", "expected"), [
    ('{"is_lse_base_on_e": is_lse_base_on_e}', []),  # the base read from the mapping: e
    ("dict(is_lse_base_on_e=is_lse_base_on_e)", []),
    ('{"ctx": None}', [Code.AC016]),  # the keyword is left out: the default, base 2
    ("extra", []),  # keys not known: not read (a warning, never an error)
    # filled after its literal: which keys it holds at the call is not read from the literal
    ('{"ctx": None}\n        options["is_lse_base_on_e"] = is_lse_base_on_e', []),
    ('{"ctx": None}\n        options.update(is_lse_base_on_e=is_lse_base_on_e)', []),
    # a mapping chosen per name, read as the interpreter runs the method for each name: empty
    # for flashmla, so the default (base 2) applies to its base-e LSE
    ('{} if is_lse_base_on_e else {"is_lse_base_on_e": False}', [Code.AC016]),
    ('{"is_lse_base_on_e": True} if is_lse_base_on_e else {}', []),
])
def test_a_base_keyword_given_through_a_mapping_is_read_from_it(
        tmp_path: Path, options: str, expected: list[Code]) -> None:
    root = _tree(tmp_path, "", forward=FORWARD_MLA_SPREAD.format(options=options))
    rows = {r.backend: r for r in sglang.report(root=root)}
    assert [c for c, _ in _errors(rows["flashmla"])] == expected
    if not expected:
        assert not any(f.code is Code.AC016 for f in rows["flashmla"].findings)
    if options == "extra":
        assert any(f.code is Code.AC028 for f in rows["flashmla"].findings)
    elif " if " in options:  # read from the method as it runs: no warning either
        assert not any(f.code is Code.AC028 for f in rows["flashmla"].findings)


FORWARD_MLA_MOVED = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


def is_mla_dcp_lse_base_on_e(attention_backend):
    return attention_backend in {{"flashmla"}}


class Mixin:
    def _merge(self, out, lse, group, is_lse_base_on_e):
        return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=is_lse_base_on_e)

    def forward_core(self, out, lse, group):
        on_e = is_mla_dcp_lse_base_on_e(self.current_attention_backend)
        return {call}
'''


@pytest.mark.parametrize(("call", "expected", "unread"), [
    ("self._merge(out, lse, group, on_e)", [], False),  # by position: the predicate, read
    ("self._merge(out, lse, group, is_lse_base_on_e=on_e)", [], False),  # by keyword
    ("self._merge(out, lse, group, not on_e)", [Code.AC016], False),  # read, and wrong
    ("self._merge(out, lse, group, *extra)", [], True),  # spread: not read, a warning
    # two calls that disagree: each is a way the combine is told, one wrong for flashmla
    ("self._merge(out, lse, group, on_e) or self._merge(out, lse, group, False)",
     [Code.AC016], False),
    # a call whose argument is not read (through another object, a partial): not read
    ("self._merge(out, lse, group, on_e) or other._merge(out, lse, group, False)", [], True),
    ("functools.partial(self._merge, out, lse)(group, on_e)", [], True),
])
def test_a_merge_moved_into_a_helper_reads_the_base_its_callers_pass(
        tmp_path: Path, call: str, expected: list[Code], unread: bool) -> None:
    """The call's base keyword is a parameter of the function that makes it: what each call
    of that function in the module binds to it, read there per registered name."""
    root = _tree(tmp_path, "", forward=FORWARD_MLA_MOVED.format(call=call))
    rows = {r.backend: r for r in sglang.report(root=root)}
    assert [c for c, _ in _errors(rows["flashmla"])] == expected
    assert any(f.code is Code.AC028 for f in rows["flashmla"].findings) == unread


def test_the_combine_before_the_keyword_is_fixed_base_2(tmp_path: Path) -> None:
    root = _tree(tmp_path, "", version="0.5.16", forward=FORWARD_MLA_OLD)
    (row,) = sglang.report("flashmla", root=root)
    (err,) = _errors(row)
    assert err[0] is Code.AC016 and "cp_lse_ag_out_rs_mla.fixed-2" in err[1]


def test_a_release_before_dcp_has_no_combine(tmp_path: Path) -> None:
    rows = sglang.report(root=_tree(tmp_path, '"flashmla"', version="0.5.10"))
    assert all(r.edges == [] and "no MLA DCP combine" in r.note for r in rows)
    assert not any(_errors(r) for r in rows)


def test_the_decode_is_read_under_dcp(tmp_path: Path) -> None:
    """A subclass that takes its parent's base-2 path only without DCP: its own call counts."""
    root = _tree(tmp_path, '"flashmla"')
    (root / "sglang" / _ATT / "flashmla_backend.py").write_text(FLASHMLA + '''

class Child(FlashMLABackend):
    def forward_decode(self, q, layer):
        if not get_parallel().dcp_enabled:
            return super().forward_decode(q, layer)
        o, lse = flash_mla_with_kvcache(q=q, k_cache=self.k, block_table=self.t)
        return o, lse * 1.4426950408889634
''')
    reg = root / "sglang" / _ATT / "attention_registry.py"
    reg.write_text(reg.read_text().replace("import FlashMLABackend\n    return FlashMLABackend",
                                           "import Child\n    return Child"))
    rows = {r.backend: r for r in sglang.report(root=root)}
    # Child under DCP returns the LSE converted to base 2, and flashmla is told e
    (err,) = _errors(rows["flashmla"])
    assert err[0] is Code.AC016 and "base-2" in err[1]


@pytest.mark.parametrize(("convert", "errors"), [
    ("        if q.shape[0] > 1:\n            lse = lse * 1.4426950408889634\n", 1),
    ("        lse = lse * 1.4426950408889634\n", 1),  # every path converts: base 2, told e
    ("        if q.shape[0] > 1:\n            pass\n", 0),  # none does: base e, told e
])
def test_a_conversion_on_one_path_leaves_the_other_paths_base(tmp_path: Path, convert: str,
                                                              errors: int) -> None:
    """A decode that converts its LSE on one path only returns the kernel's base on the
    other: each base a path gives is an edge of its own, and one the combine is not told is
    an error (two bases of one kernel are not read as "either", which nothing would judge)."""
    root = _tree(tmp_path, '"flashmla"')
    (root / "sglang" / _ATT / "flashmla_backend.py").write_text(FLASHMLA.replace(
        "        if get_parallel().dcp_enabled:\n",
        convert + "        if get_parallel().dcp_enabled:\n"))
    rows = {r.backend: r for r in sglang.report(root=root)}
    found = _errors(rows["flashmla"])
    assert len(found) == errors and all(c is Code.AC016 and "base-2" in m
                                        for c, m in found), found


def test_engine_sglang_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, '"homemade"')
    assert main(["engine", "sglang", "--root", str(root), "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert {r["backend"]: r["verdict"] for r in rows}["flashmla"] == "error"
    assert main(["engine", "sglang", "--root", str(tmp_path / "nowhere")]) == 2


@pytest.mark.parametrize("broken", [_FWD, f"{_ATT}/attention_registry.py"])
@pytest.mark.parametrize("text", [b"def combine(:\n", b"x = '\xff'\n"])
def test_a_source_that_does_not_parse_is_ac000_and_the_report_goes_on(
        broken: str, text: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, '"flashmla"')
    (root / "sglang" / broken).write_bytes(text)
    rows = sglang.report(root=root)
    found = [f for r in rows for f in r.findings if f.code is Code.AC000
             and f.location is not None and f.location.path == f"sglang/{broken}"]
    assert len(found) == 1
    if text.startswith(b"def"):
        assert found[0].location == Location(f"sglang/{broken}", 1, 13)  # where the parser stopped
    assert all(r.edges == [] for r in rows)
    assert main(["engine", "sglang", "--root", str(root)]) == 1  # an error, not a traceback
    assert " AC000 " in capsys.readouterr().out


RELEASES = Path(os.environ.get("ATTN_CONTRACTS_RELEASES", "/work/releases"))
SGLANG = sorted((p for p in RELEASES.glob("sglang-0.5.*") if (p / "sglang").is_dir()),
                key=lambda p: tuple(int(x) for x in p.name.split("-")[1].split(".")))

#: the errors every release gives (backend, code): the live base-e FlashMLA LSE combined as
#: base 2 before the keyword (0.5.15-0.5.16, fixed in 0.5.17 by _is_mla_dcp_lse_base_on_e);
#: from 0.5.19, TRTLLMMLABackend's DCP decode (``_forward_decode_dcp``) calls FlashInfer's MLA
#: decode without ``backend`` (its "trtllm-gen" is passed as no keyword: "auto") and without
#: ``return_lse_base``, so the autotuner may run the natural-log cute-dsl kernel, while the
#: table combines every trtllm_mla LSE as base 2. tokenspeed_mla's base-2 LSE (0.5.17-0.5.22)
#: is confirmed by its record.
EXPECTED = {"0.5.15": {("flashmla", Code.AC016)}, "0.5.16": {("flashmla", Code.AC016)},
            **{f"0.5.{m}": {("trtllm_mla", Code.AC016)} for m in range(19, 24)}}


@pytest.mark.skipif(not SGLANG, reason=f"no SGLang releases under {RELEASES}")
@pytest.mark.parametrize("tree", SGLANG, ids=lambda p: p.name)
def test_every_released_sglang(tree: Path) -> None:
    version = tree.name.split("-")[1]
    rows = {r.backend: r for r in sglang.report(root=tree)}
    assert len(rows) >= 13
    errors = {(r.backend, f.code) for r in rows.values() for f in r.findings
              if f.severity is Severity.ERROR}
    assert errors == EXPECTED.get(version, set())
    if "tokenspeed_mla" in rows and rows["tokenspeed_mla"].edges:
        assert rows["tokenspeed_mla"].records == ["tokenspeed_mla.decode"]
    if version == "0.5.23":  # the hand table of the last round, now derived
        assert {"flashinfer.mla.fa2", "flashinfer.mla.fa3"} <= set(rows["flashinfer"].records)
        assert "flashinfer.mla.cute_dsl" in rows["cutedsl_mla"].records
        assert rows["flashinfer"].declared["is_lse_base_on_e (cp_lse_ag_out_rs_mla)"] == "False"
        assert rows["cutedsl_mla"].declared["is_lse_base_on_e (cp_lse_ag_out_rs_mla)"] == "True"
        assert rows["flashmla"].edges and rows["cutedsl_mla"].edges


def test_lint_reads_the_combine_as_it_is_now(tmp_path: Path) -> None:
    """One process linting the combine's file twice, the name function edited between: the
    second lint judges the edit (no mapping kept from the first)."""
    from attn_contracts.integrations import lint_rules
    from attn_contracts.lint import lint_paths

    root = _tree(tmp_path, '"flashmla", "alias", "homemade"')
    combine = root / "sglang" / _FWD
    assert not [f for f in lint_paths([combine], engine_rules=lint_rules())
                if f.code is Code.AC016]
    combine.write_text(FORWARD_MLA.format(names='"other"'))
    assert [f for f in lint_paths([combine], engine_rules=lint_rules()) if f.code is Code.AC016]


def test_a_name_function_of_another_attribute_is_not_read_as_the_backends_name(
        tmp_path: Path) -> None:
    """``is_mla_dcp_lse_base_on_e(self.partial_backend)``: the function answers for the name
    it is given, and the layer's name attribute is not what it is given here (an attribute set
    on some batches only): not read, a warning, never the answer for the backend's own name."""
    forward = FORWARD_MLA.format(names='"homemade"').replace(
        "is_mla_dcp_lse_base_on_e(self.current_attention_backend)",
        "is_mla_dcp_lse_base_on_e(self.partial_backend)")
    rows = {r.backend: r for r in sglang.report(root=_tree(tmp_path, "", forward=forward))}
    assert _errors(rows["flashmla"]) == []
    assert any(f.code is Code.AC028 for f in rows["flashmla"].findings)
    told = {r.backend: r for r in sglang.report(root=_tree(tmp_path / "own", '"homemade"'))}
    assert [c for c, _ in _errors(told["flashmla"])] == [Code.AC016]  # its own name: read


FORWARD_MLA_HELPER = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


def is_mla_dcp_lse_base_on_e(attention_backend):
    return attention_backend in {{"homemade"}}


def _merge(attention_backend, out, lse, group):
    is_lse_base_on_e = is_mla_dcp_lse_base_on_e(attention_backend)
    return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=is_lse_base_on_e)


class Mixin:
    def forward_core(self, out, lse, group):
        return _merge({given}, out, lse, group)
'''


@pytest.mark.parametrize(("given", "read"), [("self.current_attention_backend", True),
                                             ("self.partial_backend", False)])
def test_a_helper_given_the_layers_name_attribute_answers_for_each_name(
        tmp_path: Path, given: str, read: bool) -> None:
    """A module-level helper that makes the combine and takes the backend's name: read as the
    name where every call of it passes the layer's name attribute; else not read."""
    forward = FORWARD_MLA_HELPER.format(given=given)
    rows = {r.backend: r for r in sglang.report(root=_tree(tmp_path, "", forward=forward))}
    if read:
        assert [c for c, _ in _errors(rows["flashmla"])] == [Code.AC016]
    else:
        assert _errors(rows["flashmla"]) == []
        assert any(f.code is Code.AC028 for f in rows["flashmla"].findings)


FORWARD_MLA_HELPER_TABLE = '''
from sglang.srt.layers.dcp import cp_lse_ag_out_rs_mla


def is_mla_dcp_lse_base_on_e(attention_backend):
    return attention_backend in {{"flashmla"}}


def _ag_rs(out, lse, group, **kwargs):
    return cp_lse_ag_out_rs_mla(out, lse, group, **kwargs)


MERGES = {{"ag_rs": _ag_rs}}


class Mixin:
    def forward_core(self, out, lse, group):
        merge = MERGES["ag_rs"]
        return merge(out, lse, group, is_lse_base_on_e={told})
'''


@pytest.mark.parametrize(("told", "expected"), [
    ("is_mla_dcp_lse_base_on_e(self.current_attention_backend)", []),
    ("False", [Code.AC016]),
])
def test_a_helper_a_table_holds_is_told_the_base_by_the_method_that_calls_it(
        tmp_path: Path, told: str, expected: list[Code]) -> None:
    """The combine is in a helper that hands ``**kwargs`` on, called through a module table:
    no call names the helper with the base. The method that names the table is run per
    registered name, and the interpreter follows it into the helper: the keyword the
    combine gets is read there (no warning), right or wrong."""
    root = _tree(tmp_path, "", forward=FORWARD_MLA_HELPER_TABLE.format(told=told))
    rows = {r.backend: r for r in sglang.report(root=root)}
    assert [c for c, _ in _errors(rows["flashmla"])] == expected
    assert not any(f.code is Code.AC028 for f in rows["flashmla"].findings)


def test_a_helper_a_class_body_names_is_not_read_from_its_users_alone(tmp_path: Path) -> None:
    """A class that keeps the helper as an attribute (``merge = staticmethod(_ag_rs)``) calls
    it through ``self.merge``, which names no helper: the users found are not all of them, so
    the base is not read (a warning), whatever the one user found passes."""
    forward = FORWARD_MLA_HELPER_TABLE.format(
        told="is_mla_dcp_lse_base_on_e(self.current_attention_backend)") + '''

class Other:
    merge = staticmethod(_ag_rs)

    def forward_core(self, out, lse, group):
        return self.merge(out, lse, group, is_lse_base_on_e=False)
'''
    root = _tree(tmp_path, "", forward=forward)
    rows = {r.backend: r for r in sglang.report(root=root)}
    assert any(f.code is Code.AC028 for f in rows["flashmla"].findings)


#: the merge moved into a helper of another file of the package, which also defines the
#: combine it calls; the helper decides the base from the name the forward hands it
COMM_HELPER = '''
NATURAL = ({names},)


def cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=False):
    return out


def reduce_partials(out, lse, group, backend):
    is_lse_base_on_e = backend in NATURAL
    return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=is_lse_base_on_e)
'''

FORWARD_MLA_COMM_HELPER = '''
from sglang.srt.layers.dcp.comm import reduce_partials


class Mixin:
    def forward_core(self, out, lse, group):
        return reduce_partials(out, lse, group, self.current_attention_backend)
'''


@pytest.mark.parametrize(("names", "wrong"), [('"homemade"', True),
                                               ('"flashmla", "alias"', False)])
def test_a_helper_in_a_file_the_forward_imports_is_read_per_backend(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], names: str, wrong: bool) -> None:
    """The forward imports the merge from another file of the package (one the engine data
    does not list), which defines the combine too: that file's helper is read as the
    forward's own code, run with each registered name, so a backend its set leaves out is an
    error at the combine in the helper; the combine's own definition there is no merge."""
    root = _tree(tmp_path, "", forward=FORWARD_MLA_COMM_HELPER)
    comm = root / "sglang" / "srt/layers/dcp/comm.py"
    comm.parent.mkdir(parents=True, exist_ok=True)
    comm.write_text(COMM_HELPER.format(names=names))
    main(["lint", str(root / "sglang"), "--format", "json"])
    found = [(Path(f["path"]).name, f["line"], f["message"].partition(":")[0])
             for f in json.loads(capsys.readouterr().out) if f["code"] == "AC016"]
    assert found == ([("comm.py", 11, "SGLang backends 'flashmla', 'alias'")] if wrong else [])
    rows = {r.backend: r for r in sglang.report(root=root)}  # the engine report reads it too
    assert bool(_errors(rows["flashmla"])) == wrong
