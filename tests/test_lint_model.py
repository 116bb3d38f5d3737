"""The lint's model of the program (issue 27): the LSE followed across files, ``self``, partials,
managers, out buffers, choices and subclasses, and the rules over it failing closed.

Every case is a small engine written here (not any engine's code), linted with its own records
(``--records``): ``mylib.decode`` returns a base-2 LSE (second of its results, or written into its
``lse=`` buffer), ``mylib.decode_e`` a base-e one, ``mylib.merge`` reads base e, and
``mylib.combine`` is told the base by ``is_lse_base_on_e``. Each shape is checked on the bug and on
its fix, so a rule that fires everywhere (or nowhere) fails here.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from attn_contracts.lint import main
from fixtures.records import MYLIB_RECORDS

RECORDS = MYLIB_RECORDS

BASE = """
class AttentionImpl:
    can_return_lse_for_decode = False
    lse_base_on_e = True
"""


def _lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str]
          ) -> tuple[int, list[dict[str, object]]]:
    """Exit code and the findings (JSON) of ``lint`` over ``files`` with the records above."""
    root = tmp_path / "engine"
    for name, text in {"base.py": BASE, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    records = tmp_path / "records.toml"
    records.write_text(RECORDS)
    code = main([str(root), "--records", str(records), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    return code, found


def _errors(found: list[dict[str, object]]) -> set[tuple[str, str, int]]:
    return {(str(f["code"]), Path(str(f["path"])).name, int(str(f["line"]))) for f in found
            if f["severity"] == "error"}


def _codes(found: list[dict[str, object]]) -> set[str]:
    return {str(f["code"]) for f in found if f["severity"] in ("error", "warning")}


def test_the_seed_bug_in_two_files_fails_the_gate(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """An impl inheriting base e that calls a base-2 kernel; its layer combines with a literal."""
    impl = """
        from base import AttentionImpl
        from mylib import decode

        class Impl(AttentionImpl):
            can_return_lse_for_decode = True

            def forward(self, q):
                out, lse = decode(q, return_lse=True)
                return out, lse
        """
    layer = """
        from mylib import combine
        from impl import Impl

        class Layer:
            def __init__(self):
                self.impl = Impl()

            def run(self, q):
                out, lse = self.impl.forward(q)
                return combine(out, lse, is_lse_base_on_e=True)
        """
    code, found = _lint(tmp_path, capsys, {"impl.py": impl, "layer.py": layer})
    assert code == 1
    assert ("AC002", "impl.py", 6) in _errors(found)  # contradicted by decode's base 2
    assert ("AC023", "layer.py", 11) in _errors(found)  # the literal True against base 2
    fixed = impl.replace("can_return_lse_for_decode = True",
                         "can_return_lse_for_decode = True\n            lse_base_on_e = False")
    code, found = _lint(tmp_path, capsys, {"impl.py": fixed, "layer.py": layer.replace(
        "is_lse_base_on_e=True", "is_lse_base_on_e=self.impl.lse_base_on_e")})
    assert code == 0, found


def test_an_inherited_default_nothing_confirms_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impl = """
        from base import AttentionImpl

        class Impl(AttentionImpl):
            can_return_lse_for_decode = True

            def forward(self, q):
                return self.kernel(q)
        """
    code, found = _lint(tmp_path, capsys, {"impl.py": impl})
    assert code == 1 and ("AC002", "impl.py", 5) in _errors(found)
    hint = next(f["hint"] for f in found if f["code"] == "AC002")
    assert "lse_base_on_e" in str(hint)  # names the attribute to set


def test_an_own_declaration_is_compared_with_the_kernels_it_calls(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impl = """
        from base import AttentionImpl
        from mylib import decode

        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = True

            def forward(self, q):
                return decode(q, return_lse=True)
        """
    code, found = _lint(tmp_path, capsys, {"impl.py": impl})
    assert code == 1 and ("AC008", "impl.py", 7) in _errors(found)
    code, found = _lint(tmp_path, capsys, {"impl.py": impl.replace("lse_base_on_e = True",
                                                                   "lse_base_on_e = False")})
    assert code == 0, found


def test_a_manager_built_with_a_base_carries_it_to_the_combine_in_another_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager = """
        from mylib import combine

        class Manager:
            def __init__(self, is_lse_base_on_e):
                self.is_lse_base_on_e = is_lse_base_on_e

            def reduce(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=self.is_lse_base_on_e)
        """
    layer = """
        from mylib import decode
        from manager import Manager

        class Layer:
            def __init__(self):
                self.manager = Manager(is_lse_base_on_e=True)

            def run(self, q):
                out, lse = decode(q, return_lse=True)
                return self.manager.reduce(out, lse)
        """
    code, found = _lint(tmp_path, capsys, {"manager.py": manager, "layer.py": layer})
    assert code == 1 and any(c == "AC023" for c, _, _ in _errors(found)), found
    code, found = _lint(tmp_path, capsys, {"manager.py": manager, "layer.py": layer.replace(
        "Manager(is_lse_base_on_e=True)", "Manager(is_lse_base_on_e=False)")})
    assert not _errors(found), found


def test_a_partial_kept_on_self_and_a_combine_chosen_by_a_conditional(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impl = """
        from functools import partial
        from mylib import combine, decode, merge

        class Impl:
            def __init__(self, a2a):
                self.dcp_combine = partial(combine, is_lse_base_on_e=True) if a2a else merge

            def forward(self, q):
                out, lse = decode(q, return_lse=True)
                return self.dcp_combine(out, lse)
        """
    code, found = _lint(tmp_path, capsys, {"impl.py": impl})
    errors = _errors(found)
    assert code == 1 and {c for c, _, _ in errors} == {"AC023"}, found
    assert len(errors) == 2  # both choices read base e: the partial's literal and merge
    good = impl.replace("partial(combine, is_lse_base_on_e=True) if a2a else merge",
                        "partial(combine, is_lse_base_on_e=False)")
    code, found = _lint(tmp_path, capsys, {"impl.py": good})
    assert not _errors(found), found


def test_an_lse_written_into_an_out_buffer_is_followed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = """
        import torch
        from mylib import decode, merge

        def step(q, out):
            lse = torch.empty(4, 8)
            decode(q, return_lse=True, lse=lse)
            return merge(out, lse)
        """
    code, found = _lint(tmp_path, capsys, {"step.py": bad})
    assert code == 1 and ("AC023", "step.py", 8) in _errors(found), found
    converted = bad.replace("return merge(out, lse)", "return merge(out, lse * math.log(2))")
    code, found = _lint(tmp_path, capsys, {"step.py": "import math\n" + textwrap.dedent(converted)})
    assert not _errors(found), found


def test_a_base_chosen_by_the_engines_own_dispatch_reaches_a_fixed_base_merge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The engine picks the backend at run time (``self.backend`` is any subclass): one of them
    returns base 2 into a base-e merge."""
    files = {
        "backends.py": """
            from mylib import decode, decode_e

            class Backend:
                def attend(self, q):
                    raise NotImplementedError

            class Base2Backend(Backend):
                def attend(self, q):
                    return decode(q, return_lse=True)

            class BaseEBackend(Backend):
                def attend(self, q):
                    return decode_e(q)
            """,
        "prefill.py": """
            from mylib import merge
            from backends import Backend

            class Prefill:
                def __init__(self, backend: Backend):
                    self.backend = backend

                def chunk(self, q, out):
                    o, lse = self.backend.attend(q)
                    return merge(out, lse)
            """}
    code, found = _lint(tmp_path, capsys, files)
    assert code == 1 and ("AC023", "prefill.py", 11) in _errors(found), found
    message = next(str(f["message"]) for f in found if f["code"] == "AC023")
    assert "base 2" in message
    only_e = dict(files, **{"backends.py": files["backends.py"].replace(
        "return decode(q, return_lse=True)", "return decode_e(q)")})
    code, found = _lint(tmp_path, capsys, only_e)
    assert not _errors(found), found


def test_a_converted_lse_for_another_merge_does_not_judge_the_declaration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The impl declares base 2 (its decode's); its prefill converts its base-2 LSE to e for a
    natural-log merge. The converted one is that merge's edge, not the impl's declaration."""
    impl = """
        import math
        from base import AttentionImpl
        from mylib import combine, decode, merge

        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = False

            def prefill(self, q, out):
                o, lse = decode(q, return_lse=True)
                return merge(out, lse * math.log(2))

            def forward(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.lse_base_on_e)
        """
    code, found = _lint(tmp_path, capsys, {"impl.py": impl})
    assert code == 0, found
    unconverted = impl.replace("merge(out, lse * math.log(2))", "merge(out, lse)")
    code, found = _lint(tmp_path, capsys, {"impl.py": unconverted})
    assert ("AC023", "impl.py", 12) in _errors(found), found


def test_a_table_of_bases_that_agree_is_no_finding_and_one_wrong_entry_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    step = """
        from mylib import combine, decode

        BASE_ON_E = {2: False, 3: False}

        def step(q, version):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASE_ON_E[version])
        """
    code, found = _lint(tmp_path, capsys, {"step.py": step})
    assert code == 0 and not _codes(found), found
    code, found = _lint(tmp_path, capsys, {"step.py": step.replace("3: False", "3: True")})
    # at the place the wrong base is written: the table's entry
    assert code == 1 and _errors(found) == {("AC023", "step.py", 4)}, found


def test_a_tree_without_any_base_attribute_gets_no_ac001(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM 0.24.0 has no ``lse_base_on_e`` anywhere: a backend that returns an LSE (its kernel
    known) has nothing to declare; its combines are judged at the edges."""
    impl = """
        from mylib import decode_e

        class AttentionImpl:
            can_return_lse_for_decode = False

        class Impl(AttentionImpl):
            can_return_lse_for_decode = True

            def forward(self, q):
                return decode_e(q)
        """
    root = tmp_path / "engine"
    root.mkdir()
    (root / "impl.py").write_text(textwrap.dedent(impl))
    records = tmp_path / "records.toml"
    records.write_text(RECORDS)
    assert main([str(root), "--records", str(records), "--format", "json"]) == 0
    assert "AC001" not in {f["code"] for f in json.loads(capsys.readouterr().out)}


@pytest.mark.parametrize(("layer", "answer"), [
    ("class Layer(Mixin):\n    def on_e(self):\n        return False\n", False),
    ("class Layer(Mixin):\n    pass\n", None),  # no class below provides it: the stub runs
])
def test_a_mixin_method_asked_on_its_own_reads_what_the_class_below_provides(
        tmp_path: Path, layer: str, answer: object) -> None:
    """A question asked of a mixin's method (the SGLang mapping's base per backend) runs it on
    an object of the mixin's class: ``self.on_e()`` of an ``@abstractmethod`` there is what the
    class below that mixes it in provides (its stub, returning None, where none does)."""
    import ast

    from attn_contracts.lint import LintConfig
    from attn_contracts.lint import lint_model
    src = textwrap.dedent('''
        import abc
        from mylib import combine, decode
        class Mixin:
            @abc.abstractmethod
            def on_e(self):
                "provided by the layer"
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.on_e())
        ''') + layer
    root = tmp_path / "engine"
    root.mkdir()
    path = root / "layer.py"
    path.write_text(src)
    records = tmp_path / "records.toml"
    records.write_text(RECORDS)
    _, model = lint_model([root], LintConfig(), records=[records])
    keyword = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.keyword) and
                   n.arg == "is_lse_base_on_e")
    assert model.answer_at(str(path), "Mixin.step", keyword.value, {}) == (True, answer)
