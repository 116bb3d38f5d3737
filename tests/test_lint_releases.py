"""Knowledge that follows released code (issue 20): versioned identities, producer calls, bases
chosen by the call, AC002 judged by the kernels a class calls, and the flow cases engines write.
Every fixture is a few lines written here that reproduce one pattern (never engine code)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Severity
from attn_contracts.lint import LintConfig
from attn_contracts.lint import lint_paths
from attn_contracts.versions import tree_versions
from fixtures.records import consumer_toml

BASE = """
class AttentionImpl:
    can_return_lse_for_decode = False
    lse_base_on_e = True
"""


def run(tmp_path: Path, files: dict[str, str], **cfg: object) -> list[Finding]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return lint_paths([tmp_path], LintConfig(**cfg) if cfg else None)


def found(findings: list[Finding]) -> set[tuple[str, int, str, str]]:
    return {(Path(f.location.path).name, f.location.line or 0, f.code.value, f.severity.value)
            for f in findings if f.location is not None}


# --- item 4: AC002 by the kernels a class calls ----------------------------------------------------
@pytest.mark.parametrize(("kernel", "severity"), [
    # FlashInfer's decode wrapper returns base 2: the inherited base e is a contradiction
    ("from flashinfer import BatchDecodeWithPagedKVCacheWrapper\n"
     "class Impl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
     "    def forward(self, w: BatchDecodeWithPagedKVCacheWrapper, q, kv):\n"
     "        return w.run(q, kv, return_lse=True)\n", "error"),
    # FlashMLA returns natural log: the inherited base e agrees (a note says so)
    ("from vllm.v1.attention.ops.flashmla import flash_mla_with_kvcache\n"
     "class Impl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
     "    def forward(self, q, kv):\n        return flash_mla_with_kvcache(q, kv)\n", "note"),
    # return_softmax_lse read from a flag: the class returns the LSE only then, in base e
    ("from vllm.v1.attention.backends.fa_utils import flash_attn_varlen_func\n"
     "class Impl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
     "    def forward(self, q, k, v):\n"
     "        return flash_attn_varlen_func(q, k, v, return_softmax_lse=self.need_lse)\n", "note"),
    # a kernel no record knows: the inherited default is confirmed by nothing, an error (the
    # gate fails closed: this is the seed's bug shape)
    ("class Impl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
     "    def forward(self, q, kv):\n        return my_kernel(q, kv)\n", "error"),
    # a run() of a class the module never imports is not FlashInfer's: nothing confirms either
    ("class Impl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
     "    def forward(self, w, q, kv):\n        return w.run(q, kv, return_lse=True)\n",
     "error"),
])
def test_ac002_severity_follows_the_kernel(kernel: str, severity: str | None,
                                          tmp_path: Path) -> None:
    out = [f for f in run(tmp_path, {"base.py": BASE, "impl.py": "from base import AttentionImpl\n"
                                     + kernel}) if f.code == Code.AC002]
    assert [f.severity.value for f in out] == ([severity] if severity else []), out


def test_a_layer_that_only_claims_dcp_is_no_ac002(tmp_path: Path) -> None:
    # a layer base (abc.ABC) that says supports_dcp, returns no LSE itself
    assert run(tmp_path, {"layer.py": "import abc\nclass LayerBase(abc.ABC):\n"
                                      "    supports_dcp: bool = True\n"}) == []


# --- item 5: flow cases ---------------------------------------------------------------------------
DCP = "from vllm.v1.attention.ops.dcp import cp_lse_ag_out_rs\n"


def test_dispatch_on_the_backends_flag_is_no_finding(tmp_path: Path) -> None:
    assert run(tmp_path, {"layer.py": DCP + textwrap.dedent("""
    class Layer:
        def forward(self, out, lse, group):
            if self.impl.lse_base_on_e:
                return cp_lse_ag_out_rs(out, lse, group, is_lse_base_on_e=True)
            else:
                return cp_lse_ag_out_rs(out, lse, group, is_lse_base_on_e=False)
    """)}, versions={"vllm": "0.33.0"}) == []


@pytest.mark.parametrize("how", [
    "local", "module constant", "class constant", "self attribute", "getattr of a module",
    "getattr default"])
def test_a_literal_base_is_followed_through(how: str, tmp_path: Path) -> None:
    body = {
        "local": "        is_e = False\n        return cp_lse_ag_out_rs(o, l, g, is_lse_base_on_e=is_e)",
        "module constant": "        return cp_lse_ag_out_rs(o, l, g, is_lse_base_on_e=IS_E)",
        "class constant": "        return cp_lse_ag_out_rs(o, l, g, is_lse_base_on_e=self.USE_E)",
        "self attribute": "        return cp_lse_ag_out_rs(o, l, g, is_lse_base_on_e=self.base_e)",
        "getattr of a module": "        fn = getattr(ops, 'cp_lse_ag_out_rs')\n"
                               "        return fn(o, l, g, is_lse_base_on_e=False)",
        "getattr default": "        return cp_lse_ag_out_rs(\n            o, l, g, is_lse_base_on_e=not "
                           "getattr(self, '_use_fi_prefill', False))",
    }[how]
    text = (DCP + "import vllm.v1.attention.ops.dcp as ops\nIS_E = True\n\n\nclass Layer:\n"
            "    USE_E = False\n\n    def __init__(self):\n        self.base_e = True\n\n"
            "    def forward(self, o, l, g):\n" + body + "\n")
    out = run(tmp_path, {"layer.py": text}, versions={"vllm": "0.33.0"})
    assert [(f.code, f.severity) for f in out] == [(Code.AC003, Severity.WARNING)], out
    at = out[0].location
    assert at is not None and (at.line or 0) >= 13  # at the call, not the constant
    # the same code, with the base read from the backend: clean
    clean = text.replace(body.splitlines()[-1].split("is_lse_base_on_e=")[1],
                         "self.impl.lse_base_on_e)")
    assert run(tmp_path / "c", {"layer.py": clean}, versions={"vllm": "0.33.0"}) == []


def test_a_getattr_default_that_always_holds_reaches_a_base_2_lse(tmp_path: Path) -> None:
    # vLLM PR #42555 as a pattern: the flag is never set, so the base is always e
    out = run(tmp_path, {"layer.py": DCP + textwrap.dedent("""
    from flashinfer import BatchPrefillWithPagedKVCacheWrapper


    class Layer:
        def forward(self, q, kv, g):
            w = BatchPrefillWithPagedKVCacheWrapper(None, "NHD")
            o, lse = w.run(q, kv, return_lse=True)
            return cp_lse_ag_out_rs(o, lse, g,
                                    is_lse_base_on_e=not getattr(self, "_use_fi_prefill", False))
    """)}, versions={"vllm": "0.33.0"})
    # the literal the getattr default always gives contradicts the base-2 LSE: one error there
    # (the literal's AC003 warning is subsumed by it)
    assert {(f.code, f.severity) for f in out} == {(Code.AC023, Severity.ERROR)}
    # once the attribute is set somewhere in the file (from a value the lint cannot read), the
    # expression is no error; a warning names it (issue 37's precision policy)
    out = run(tmp_path / "set", {"layer.py": (tmp_path / "layer.py").read_text().replace(
        "    def forward", "    def __init__(self, fi):\n        self._use_fi_prefill = fi\n\n"
        "    def forward")}, versions={"vllm": "0.33.0"})
    assert [(f.code, f.severity) for f in out] == [(Code.AC035, Severity.WARNING)], out
    assert "_use_fi_prefill" in out[0].message and "base 2" in out[0].message


# --- item 1: identities per release ---------------------------------------------------------------
def _tree(root: Path, version: str | None, how: str, ops: str) -> Path:
    pkg = root / "vllm"
    (pkg / "v1" / "attention" / "ops").mkdir(parents=True)
    for d in (pkg, pkg / "v1", pkg / "v1" / "attention", pkg / "v1" / "attention" / "ops"):
        (d / "__init__.py").write_text("")
    if version and how == "version.py":
        (pkg / "version.py").write_text(f'__version__ = "{version}"\n')
    if version and how == "dist-info":
        (root / f"vllm-{version}.dist-info").mkdir()
        (root / f"vllm-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    (pkg / "v1" / "attention" / "ops" / f"{ops}.py").write_text(
        "def cp_lse_ag_out_rs(cp_attn_out, cp_attn_lse, cp_group, is_lse_base_on_e=True):\n"
        "    return cp_attn_out\n")
    (pkg / "layer.py").write_text(
        f"from functools import partial\nfrom vllm.v1.attention.ops.{ops} import cp_lse_ag_out_rs\n"
        "combine = partial(cp_lse_ag_out_rs, is_lse_base_on_e=False)\n")
    return pkg


@pytest.mark.parametrize(("version", "how", "ops"), [
    ("0.33.0", "version.py", "dcp"), ("0.25.0", "dist-info", "common"), (None, "", "dcp"),
    (None, "", "common")])
def test_a_moved_function_is_found_at_its_releases_path(version: str | None, how: str, ops: str,
                                                        tmp_path: Path) -> None:
    pkg = _tree(tmp_path, version, how, ops)
    assert tree_versions([pkg]) == ({"vllm": version} if version else {})
    out = found(lint_paths([pkg]))
    # the defaulted base of the definition and the literal through functools.partial
    assert ("layer.py", 3, "AC003", "warning") in out
    assert (f"{ops}.py", 1, "AC021", "warning") in out


def test_a_path_outside_the_trees_release_is_not_that_function(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, "0.25.0", "version.py", "dcp")  # dcp.py does not exist in 0.25
    out = {c for _, _, c, _ in found(lint_paths([pkg]))}
    assert "AC021" not in out  # not the record's function at 0.25
    assert tree_versions([pkg], {"vllm": "0.33.0"}) == {"vllm": "0.33.0"}  # the setting wins
    cfg = LintConfig(versions={"vllm": "0.33.0"})
    assert "AC021" in {c for _, _, c, _ in found(lint_paths([pkg], cfg))}


#: two consumer records of one function (a keyword with default e, a fixed e), as one engine's
#: old and new releases would have it, both holding where the tree's release is unknown
TWO_CONSUMERS = consumer_toml(
    "eng.combine", "eng.ops.combine", '{ kind = "keyword", keyword = "is_lse_base_on_e", '
    'values = { "True" = "e", "False" = "2" }, default = "True" }', lse_args='["lse", "1"]',
    states="separate", nan_safe=True,
    source="eng/ops.py: combine(out, lse, group, is_lse_base_on_e=True)") + consumer_toml(
    "eng.combine.fixed-e", "eng.ops.combine", '{ kind = "fixed", base = "e" }',
    lse_args='["lse", "1"]', states="separate", nan_safe=True,
    source="eng/ops.py at an older release: combine(out, lse, group), natural log only")


def test_records_that_disagree_use_what_they_agree_on_and_say_so(tmp_path: Path) -> None:
    # with no version, True means e for both (counted), False is not agreed (no base)
    (tmp_path / "records.toml").write_text(TWO_CONSUMERS)
    code = """
    from eng.ops import combine
    from flashinfer import BatchDecodeWithPagedKVCacheWrapper


    def f(q, kv, g):
        w = BatchDecodeWithPagedKVCacheWrapper(None, "NHD")
        o, lse = w.run(q, kv, return_lse=True)
        return combine(o, lse, g, is_lse_base_on_e=impl.base)
    """
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "old.py").write_text(textwrap.dedent(code))
    out = lint_paths([tmp_path / "src"], records=[tmp_path / "records.toml"])
    codes = {(f.code, f.severity) for f in out}
    assert (Code.AC029, Severity.NOTE) in codes and not any(
        f.severity is Severity.ERROR for f in out)
    (tmp_path / "src" / "old.py").write_text(textwrap.dedent(code).replace(
        ", is_lse_base_on_e=impl.base", ""))
    out = lint_paths([tmp_path / "src"], records=[tmp_path / "records.toml"])
    # omitted: both records give e (a default, a fixed base): the base-2 LSE is a contradiction
    assert (Code.AC023, Severity.ERROR) in {(f.code, f.severity) for f in out}


# --- items 2, 3: producer calls, a base left to dispatch ------------------------------------------
MLA = "from flashinfer.decode import trtllm_batch_decode_with_kv_cache_mla as decode\n"


@pytest.mark.parametrize(("args", "codes"), [
    ("return_lse=True", {("AC028", "warning")}),  # backend="auto", base unset: dispatch
    ("return_lse=True, backend='auto', return_lse_base=None", {("AC028", "warning")}),
    ("return_lse=True, **kw", {("AC028", "warning")}),  # a local dict that never names it
    ("return_lse=True, return_lse_base='basee'", set()),
    ("return_lse=True, backend='cute-dsl'", set()),  # cute-dsl: natural log by default
    ("return_lse=True, return_lse_base=self.base", set()),  # read from the backend: trusted
    ("return_lse=False", set()),
    # a sparse call under "auto": only base-2 kernels run it (the record's picked_by)
    ("return_lse=True, sparse_mla_top_k=self.top_k", set()),
    ("return_lse=True, sparse_mla_top_k=2048, backend='auto'", set()),
    ("return_lse=True, sparse_mla_top_k=0", {("AC028", "warning")}),  # the parameter's "off"
])
def test_a_call_that_leaves_its_base_to_dispatch(args: str, codes: set[tuple[str, str]],
                                                 tmp_path: Path) -> None:
    out = run(tmp_path, {"mla.py": MLA + textwrap.dedent(f"""
    class Impl:
        def forward(self, q, kv, ws):
            kw = {{}}
            kw["enable_pdl"] = True
            out = decode(q, kv, ws, 512, 512, 64, None, None, 128, {args})
            return out
    """)}, versions={"flashinfer": "0.7.2.post1"})  # the release of return_lse_base
    assert {(c, s) for _, _, c, s in found(out)} == codes


@pytest.mark.parametrize(("args", "codes"), [
    ("return_lse=True", {("AC028", "warning")}),  # "auto": autotuned trtllm-gen or cute-dsl
    ("return_lse=True, backend='trtllm-gen'", set()),
    ("return_lse=True, backend='cute-dsl'", set()),
    # no return_lse_base before 0.7.2: the backend is still "auto"
    ("return_lse=True, return_lse_base='basee'", {("AC028", "warning")}),
])
def test_before_return_lse_base_the_backend_alone_picks_the_base(
        args: str, codes: set[tuple[str, str]], tmp_path: Path) -> None:
    out = run(tmp_path, {"mla.py": MLA + textwrap.dedent(f"""
    def forward(q, kv, ws):
        return decode(q, kv, ws, 512, 512, 64, None, None, 128, {args})
    """)}, versions={"flashinfer": "0.6.13"})  # what vLLM 0.25 pins
    assert {(c, s) for _, _, c, s in found(out)} == codes


@pytest.mark.parametrize(("args", "error"), [
    ("return_lse=True, backend='trtllm-gen'", True),  # base 2 into a natural-log merge
    ("return_lse=True, return_lse_base='basee'", False),
    ("return_lse=True, backend='trtllm-gen', return_lse_base='basee'", False),
])
def test_the_chosen_base_flows_into_the_consumer(args: str, error: bool, tmp_path: Path) -> None:
    out = run(tmp_path, {"mla.py": MLA + textwrap.dedent(f"""
    from vllm.v1.attention.ops.merge_attn_states import merge_attn_states


    def step(q, kv, ws, out, o2, l2):
        o, lse = decode(q, kv, ws, 512, 512, 64, None, None, 128, {args})
        merge_attn_states(out, o, lse, o2, l2)
    """)}, versions={"flashinfer": "0.7.2.post1"})
    assert (("mla.py", 8, "AC023", "error") in found(out)) is error, out


def test_a_wrapper_run_feeding_a_natural_log_merge_is_an_error(tmp_path: Path) -> None:
    # the README's producer call: BatchDecodeWithPagedKVCacheWrapper.run(return_lse=True), base 2
    out = run(tmp_path, {"eng.py": """
    from flashinfer import BatchDecodeWithPagedKVCacheWrapper
    from vllm.v1.attention.ops.merge_attn_states import merge_attn_states


    def step(q, kv, out, o2, l2):
        w = BatchDecodeWithPagedKVCacheWrapper(None, "NHD")
        o, lse = w.run(q, kv, return_lse=True)
        merge_attn_states(out, o, lse, o2, l2)
        o, lse = w.run(q, kv, return_lse=True)
        merge_attn_states(out, o, lse * math.log(2), o2, l2)  # converted: correct
    """})
    assert found(out) == {("eng.py", 9, "AC023", "error")}


# --- item 3: startup resolves a base chosen by the call ------------------------------------------
@pytest.mark.parametrize(("call", "base", "codes"), [
    ({"backend": "trtllm-gen"}, "2", []),
    ({"backend": "cute-dsl"}, "e", []),
    ({"backend": "auto", "return_lse_base": "basee"}, "e", []),
    ({"backend": "sparse", "return_lse_base": "base2"}, "2", []),
    ({"backend": "auto"}, None, ["AC028"]),
    ({}, None, ["AC028"]),  # backend defaults to "auto"
    ({"backend": "auto", "return_lse_base": None}, None, ["AC028"]),
])
def test_startup_resolves_the_base_the_call_chooses(call: dict[str, object], base: str | None,
                                                    codes: list[str]) -> None:
    from attn_contracts import ContractError
    from attn_contracts import validate_startup
    from attn_contracts.startup import check_startup

    chosen, _, findings = check_startup(backend="flashinfer.mla.trtllm_gen", world_size=2,
                                        producer_call=call)
    assert [f.code for f in findings] == codes
    if base is not None:
        assert chosen is not None and chosen.lse_base == base
        rec = validate_startup(backend="flashinfer.mla.cute_dsl", world_size=2,
                               producer_call=call)
        assert rec is not None and rec.lse_base == base  # every record of the call agrees
    else:
        with pytest.raises(ContractError) as err:
            validate_startup(backend="flashinfer.mla.trtllm_gen", world_size=2,
                             producer_call=call)
        assert "return_lse_base='base2' or return_lse_base='basee'" in str(err.value)


@pytest.mark.parametrize("name", ["flashinfer.mla.trtllm_gen", "flashinfer.mla.cute_dsl"])
def test_without_the_call_a_call_chosen_base_is_an_error_at_startup(name: str) -> None:
    """Issue 26 item 2: the record names a variant, but its base is the call's; an engine that
    does not say which call it makes does not pass as "ok"."""
    from attn_contracts import ContractError
    from attn_contracts import validate_startup

    with pytest.raises(ContractError) as err:
        validate_startup(backend=name)
    assert err.value.codes == [Code.AC028]
    assert err.value.findings[0].severity is Severity.ERROR
    with pytest.raises(ContractError) as err:
        validate_startup(backend=name, world_size=2)
    assert err.value.codes == [Code.AC028]


def test_validate_takes_the_call(capsys: pytest.CaptureFixture[str]) -> None:
    from attn_contracts.cli import main

    assert main(["validate", "--backend", "flashinfer.mla.trtllm_gen", "--world-size", "2"]) == 1
    assert "AC028" in capsys.readouterr().out
    for call in (["backend=cute-dsl"], ["backend=trtllm-gen"], ["backend='auto'",
                                                                "return_lse_base=basee"]):
        argv = [a for c in call for a in ("--call", c)]
        assert main(["validate", "--backend", "flashinfer.mla.trtllm_gen", "--world-size", "2",
                     *argv]) == 0, call
    # a call left to dispatch: the existing AC028; the edge sees the base the call chose
    assert main(["validate", "--backend", "flashinfer.mla.trtllm_gen", "--call", "backend=auto",
                 "--call", "return_lse_base=None"]) == 1
    assert "AC028" in capsys.readouterr().out
    assert main(["validate", "--backend", "flashinfer.mla.trtllm_gen", "--world-size", "2",
                 "--call", "return_lse_base=basee", "--consumer", "flashinfer.merge_state"]) == 1
    assert "AC016" in capsys.readouterr().out
    # usage: KEY=VALUE with an identifier, and a backend to call
    assert main(["validate", "--backend", "flashinfer.mla.trtllm_gen", "--call", "x"]) == 2
    assert main(["validate", "--call", "backend=auto"]) == 2


def test_a_chosen_base_reaches_the_edge_check() -> None:
    from attn_contracts.startup import check_startup

    # base e chosen by the call, fed to FlashInfer's base-2 merge: AC016
    _, _, findings = check_startup(backend="flashinfer.mla.trtllm_gen", world_size=2,
                                   producer_call={"return_lse_base": "basee"},
                                   consumers=["flashinfer.merge_state"])
    assert Code.AC016 in {f.code for f in findings}


def test_a_dependency_the_tree_pins_picks_its_records(tmp_path: Path) -> None:
    # vLLM 0.25 pins flashinfer-python==0.6.13, which has no return_lse_base: the call below
    # pins base 2 in 0.7.2.post1 and is left to the autotuner ("auto") in 0.6.13
    pkg = _tree(tmp_path, "0.25.0", "dist-info", "common")
    meta = tmp_path / "vllm-0.25.0.dist-info" / "METADATA"
    meta.write_text(meta.read_text() + "Requires-Dist: flashinfer-python==0.6.13\n"
                    "Requires-Dist: numpy>=1.2\n")
    assert tree_versions([pkg]) == {"vllm": "0.25.0", "flashinfer": "0.6.13"}
    (pkg / "mla.py").write_text(MLA + "def f(q, kv, ws):\n    return decode(q, kv, ws, 1, 2, 3, "
                                "None, None, 4, return_lse=True, return_lse_base='base2')\n")
    assert "AC028" in {c for _, _, c, _ in found(lint_paths([pkg]))}
    meta.write_text(meta.read_text().replace("0.6.13", "0.7.2.post1"))
    assert "AC028" not in {c for _, _, c, _ in found(lint_paths([pkg]))}


def test_a_combine_that_returns_its_merged_lse_is_a_producer(tmp_path: Path) -> None:
    # FlashInfer's merge_state returns (v, s) with s base 2 (its consumer record's output)
    out = run(tmp_path, {"eng.py": """
    from flashinfer.cascade import merge_state
    from vllm.v1.attention.ops.merge_attn_states import merge_attn_states


    def step(out, va, sa, vb, sb, o2, l2):
        v, s = merge_state(va, sa, vb, sb)
        merge_attn_states(out, v, s, o2, l2)
    """})
    assert ("eng.py", 8, "AC023", "error") in found(out)
    # "input": the merged LSE keeps the base the call selected (a base read from the backend:
    # unknown, so nothing to say)
    out = run(tmp_path / "in", {"eng.py": """
    from vllm.v1.attention.ops.dcp import cp_lse_ag_out_rs
    from vllm.v1.attention.ops.merge_attn_states import merge_attn_states


    def step(out, o, lse, g, o2, l2, impl):
        o, lse = cp_lse_ag_out_rs(o, lse, g, return_lse=True, is_lse_base_on_e=impl.base_e)
        merge_attn_states(out, o, lse, o2, l2)
    """}, versions={"vllm": "0.33.0"})
    assert out == []


def test_lint_keeps_working_on_the_real_release_trees_in_both_orders() -> None:
    roots = [Path("/work/releases/vllm-0.25.0/vllm/v1/attention/ops"),
             Path("/work/releases/vllm-0.33.0/vllm/v1/attention/ops")]
    if not all(r.is_dir() for r in roots):
        pytest.skip("needs the unpacked vLLM 0.25.0 and 0.33.0 sources")
    both = lint_paths(roots)
    assert both == lint_paths(roots[::-1])
    assert set(both) == {*lint_paths(roots[:1]), *lint_paths(roots[1:])}


@pytest.mark.parametrize(("module", "version", "error"), [
    ("sglang.kernels.ops.attention.flash_attention", "0.5.23", True),
    ("sglang.jit_kernel.flash_attention", "0.5.15", True),
    ("sglang.jit_kernel.flash_attention", "0.5.23", True),  # a moved path: the package's record
    ("sglang.kernels.ops.attention.flash_attention", "0.5.10", False),  # before the record's range
    ("sgl_kernel.flash_attn", None, True),
])
def test_sglangs_flashattention_entry_points_return_natural_log(
        module: str, version: str | None, error: bool, tmp_path: Path) -> None:
    """SGLang's FA3/FA4 entry points (ver=3|4) return natural-log softmax_lse: into FlashInfer's
    base-2 merge_state it is an error (the records sglang.flash_attention, flash_attn.fa3)."""
    out = run(tmp_path, {"fa.py": f"""
    from flashinfer.cascade import merge_state
    from {module} import flash_attn_with_kvcache


    def step(q, k, v, o2, l2):
        o, lse, *_ = flash_attn_with_kvcache(q, k, v, return_softmax_lse=True, ver=4)
        return merge_state(o, lse.T.contiguous(), o2, l2)
    """}, **({"versions": {"sglang": version}} if version else {}))
    assert (("fa.py", 8, "AC023", "error") in found(out)) is error, out


@pytest.mark.parametrize(("weigh", "error"), [
    ("torch.exp2(prefix - final)", True),  # natural-log LSEs weighed in base 2
    ("(prefix - final).exp2()", True),
    ("torch.exp(prefix - final)", False),
    ("torch.exp2((prefix - final) * 1.4426950408889634)", False),  # converted first: base 2
    ("torch.exp2(scale)", False),  # not an LSE
])
def test_a_hand_written_merge_weighs_in_the_lses_base(weigh: str, error: bool,
                                                      tmp_path: Path) -> None:
    """SGLang's Triton DCP extend merges by hand: exp(lse - logaddexp(...)); the same with exp2
    reads the natural-log LSEs as base 2."""
    out = run(tmp_path, {"merge.py": f"""
    import torch
    from sglang.kernels.ops.attention.decode_attention import decode_attention_fwd


    def merge(q, k, v, o, indptr, idx, logits, buf, o2, lse2, scale):
        decode_attention_fwd(q, k, v, o, indptr, idx, logits, buf, 8, 8, 1.0, 1.0, 1.0)
        prefix = torch.logsumexp(buf, dim=-1)
        final = torch.logaddexp(prefix, lse2)
        w = {weigh}
        return o * w
    """}, versions={"sglang": "0.5.23"})
    assert (("merge.py", 10, "AC023", "error") in found(out)) is error, out


@pytest.mark.parametrize(("kernel", "weigh", "error"), [
    # a ragged prefill's LSE, asked in natural log or left at its default base 2, then weighed
    # against a prior by a softmax over the states (DASH attention's merge shape)
    ("lse_base='ln'", "logits.softmax(1)", False),
    ("", "logits.softmax(1)", True),
    ("", "torch.softmax(logits, 1)", True),
    ("", "F.softmax(logits, dim=1)", True),
    ("", "F.log_softmax(logits, -1).exp()", True),
    ("", "torch.sigmoid(logits[:, 0] - logits[:, 1])", True),
    ("lse_base='ln'", "torch.special.expit(logits[:, 0] - logits[:, 1])", False),
    ("", "torch.special.expit(logits[:, 0] - logits[:, 1])", True),
    ("", "(logits * 0.6931471805599453).softmax(1)", False),  # converted first: base e
    ("", "torch.exp2(logits)", False),  # base 2 read as base 2
    ("lse_base='ln'", "torch.exp2(logits)", True),
    ("", "prior.softmax(1)", False),  # not an LSE
])
def test_a_softmax_over_lses_weighs_them_in_base_e(kernel: str, weigh: str, error: bool,
                                                   tmp_path: Path) -> None:
    """A softmax (or sigmoid) over LSEs weighs each by e**lse: a hand-written merge in base e.
    A base-2 LSE in it is weighed wrong (AC023), as with torch.exp."""
    sep = ", " if kernel else ""
    out = run(tmp_path, {"dash.py": f"""
    import torch
    import torch.nn.functional as F
    from flashinfer.prefill import BatchPrefillWithRaggedKVCacheWrapper


    def merge(wrapper: BatchPrefillWithRaggedKVCacheWrapper, q, k, v, prior, live):
        out, lse = wrapper.run(q, k, v, return_lse=True{sep}{kernel})
        logits = lse.float()[:, :, None] + prior
        logits = logits.masked_fill(~live, -torch.inf)
        weights = {weigh}
        return (out[:, None] * weights).sum(1)
    """}, versions={"flashinfer": "0.7.2.post1"})
    assert (("dash.py", 11, "AC023", "error") in found(out)) is error, out


@pytest.mark.parametrize(("told", "expected"), [
    # an expression the lint cannot read: no error by itself, but a warning naming it
    ("is_lse_base_on_e=os.environ.get('LSE_ON_E') == '1'", {"AC035": "warning"}),
    ("is_lse_base_on_e=decide()", {"AC035": "warning"}),
    ("is_lse_base_on_e=True", {"AC023": "error", "AC003": "warning"}),
    ("is_lse_base_on_e=False", {"AC003": "note"}),  # a literal the producer confirms
    ("is_lse_base_on_e=self.lse_base_on_e", {}),  # the backend's declaration, base 2
])
def test_a_base_the_lint_cannot_read_is_a_warning_naming_it(
        told: str, expected: dict[str, str], tmp_path: Path) -> None:
    """Issue 37's precision policy: a consumer told its base by an expression the lint cannot
    read, while a base-2 LSE reaches it, gets a warning (AC035) that names the expression; it is
    never an error by itself, and never silence."""
    out = run(tmp_path, {"impl.py": f"""
    import os

    from flashinfer import BatchDecodeWithPagedKVCacheWrapper
    from vllm.v1.attention.ops.dcp import cp_lse_ag_out_rs

    from elsewhere import decide


    class Impl:
        returns_lse = True
        lse_base_on_e = False

        def forward(self, w: BatchDecodeWithPagedKVCacheWrapper, q, kv, group):
            out, lse = w.run(q, kv, return_lse=True)
            return cp_lse_ag_out_rs(out, lse, group, {told})
    """}, versions={"vllm": "0.34.0", "flashinfer": "0.7.2.post1"})
    got = {code: severity for _, line, code, severity in found(out) if line == 16}
    assert got == expected, out
    if "AC035" in expected:
        (f,) = [f for f in out if f.code.value == "AC035"]
        assert told.split("=", 1)[1] in f.message and "base 2" in f.message, f.message


def test_a_compiler_disabled_kernel_is_the_kernel(tmp_path: Path) -> None:
    """``self.f = torch.compiler.disable(f)`` (SGLang's Triton backend) is still ``f``: its
    natural-log LSE, reduced over the splits, into a combine told base 2 is an error."""
    out = run(tmp_path, {"tb.py": """
    import torch
    from sglang.kernels.ops.attention.decode_attention import decode_attention_fwd
    from sglang.srt.layers.dcp.comm import dcp_a2a_lse_reduce


    class Backend:
        def __init__(self):
            self.decode = torch.compiler.disable(decode_attention_fwd)

        def forward(self, q, k, v, o, indptr, idx, logits, group):
            self.decode(q, k, v, o, indptr, idx, logits, self.buf, 8, 8, 1.0, 1.0, 1.0)
            lse = torch.logsumexp(self.buf[:, :, :], dim=-1)
            return dcp_a2a_lse_reduce(o, lse, group, is_lse_base_on_e=False)
    """}, versions={"sglang": "0.5.23"})
    assert ("tb.py", 14, "AC023", "error") in found(out), out
