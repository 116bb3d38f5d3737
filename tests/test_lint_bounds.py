"""The lint's abstract interpreter is deterministic and bounded (issue 37, items 4 and 5).

Deterministic: the same bytes under any ``PYTHONHASHSEED``, with one or two processes, in any
order of the paths. Bounded: each pathological shape of ``bench/lint_pathological.py`` (call
cliques, nested loops, branch chains, growing tuples) costs interpreter steps that grow linearly
with its size, and a bound never hides the base-2 LSE that reaches the base-e combine. Work is
counted in steps, never in seconds. Every engine here is written for the tests.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.lint import LintConfig
from attn_contracts.lint import ProgramModel
from attn_contracts.lint import bounds
from attn_contracts.lint import lint_model
from attn_contracts.lint import scope
from attn_contracts.lint.modules import _changes_import
from attn_contracts.lint.modules import _may_change
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import Source
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import join
from attn_contracts.lint.values import lse_of
from attn_contracts.lint.values import source_order
from attn_contracts.lint.values import stable_key
from fixtures.bench import load
from fixtures.records import consumer_toml
from fixtures.records import producer_toml

lp = load("lint_pathological")

# six combines of one kind (base by keyword, default e): which one a message names depends on
# the order a set of them is read in, unless that order is fixed
NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
RECORDS = producer_toml("mylib.decode", "mylib.decode", "2", call="lse_index = 1") + "".join(
    consumer_toml(f"mylib.{n}", f"mylib.{n}", '{ kind = "keyword", keyword = "is_lse_base_on_e", '
                  'values = { "True" = "e", "False" = "2" }, default = "True" }')
    for n in NAMES)

PICK = f"""
from mylib import decode, {", ".join(NAMES)}


def pick(i):
{"".join(f"    if i == {k}:{chr(10)}        return {n}{chr(10)}" for k, n in enumerate(NAMES))}
    return alpha


def run(q, i):
    o, lse = decode(q)
    merge = pick(i)
    return merge(o, lse)
"""

LOOP = f"""
from mylib import decode, {", ".join(NAMES)}


def run(q, chunks, flags):
    o, lse = decode(q)
    merges = ({", ".join(NAMES)})
    merge = merges[0]
    for c in chunks:
        for f in flags:
            if f:
                merge = {" if c else ".join(NAMES)}
                lse = lse * 0.6931471805599453
    return merge(o, lse, is_lse_base_on_e=True)
"""


def _tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    (tmp_path / "engine").mkdir()
    a, b = tmp_path / "engine" / "pick.py", tmp_path / "engine" / "loop.py"
    a.write_text(PICK)
    b.write_text(LOOP)
    records = tmp_path / "records.toml"
    records.write_text(RECORDS)
    return a, b, records


def _run(args: list[str], seed: int) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run([sys.executable, "-c", "import sys; from attn_contracts.lint import main;"
                           " sys.exit(main(sys.argv[1:]))", *args],
                          capture_output=True, env=env, check=False, timeout=120)
    assert done.returncode == 1, done.stderr.decode()
    return done.stdout


def test_the_output_is_the_same_bytes_under_three_seeds_two_job_counts_and_both_path_orders(
        tmp_path: Path) -> None:
    a, b, records = _tree(tmp_path)
    common = ["--records", str(records), "--format", "json"]
    first = _run([str(a), str(b), *common], 0)
    assert b'"AC022"' in first and b'"AC023"' in first
    assert _run([str(a), str(b), *common], 1) == first
    assert _run([str(b), str(a), *common, "--jobs", "2"], 2) == first
    assert _run([str(b), str(a), *common], 3) == first


def test_sources_sharing_a_key_are_read_in_one_order_whatever_the_sets_order() -> None:
    """One call's LSE may be two sources of one key (its base pinned on one path, left to
    dispatch on another): ordered by key alone, a set's iteration picked between them, and the
    vLLM mapping's producer list changed with ``PYTHONHASHSEED``."""
    pinned = Source("producer:f.py:3:1:r", "e", "the LSE of k()", record="lib.k")
    unknown = Source("producer:f.py:3:1:r", None, "the LSE of k()", record="lib.k")
    assert sorted([pinned, unknown], key=source_order) == \
        sorted([unknown, pinned], key=source_order)


def test_union_options_are_read_in_one_order_whatever_the_sets_order() -> None:
    sources = [Source(f"producer:f.py:{i}:1:r", "2", f"the LSE of k{i}()") for i in range(30)]
    values = [Lse(frozenset({s})) for s in sources] + [Tup((None, Lse(frozenset({s}))))
                                                       for s in sources[:5]]
    forward, backward = join(values), join(list(reversed(values)))
    assert isinstance(forward, Union_) and isinstance(backward, Union_)
    assert forward.ordered() == backward.ordered()
    assert [stable_key(v) for v in forward.ordered()] == sorted(map(stable_key, forward.options))


def test_a_memo_of_a_functions_names_never_reads_a_freed_trees_node() -> None:
    """A long process (the benchmark lints many trees in turn) frees one tree's nodes and
    parses the next into the same addresses: a memo keyed by ``id(node)`` read the freed
    function's names for the new one, so a closure's capture, and a finding, changed from one
    run to the next with memory layout, while ``PYTHONHASHSEED`` stayed fixed."""
    for i in range(300):
        tree = ast.parse(f"def f():\n    g = lambda: c{i}\n    b{i} = 2\n")
        fn = tree.body[0]
        assert isinstance(fn, ast.FunctionDef) and isinstance(fn.body[0], ast.Assign)
        lam = fn.body[0].value
        assert scope._loaded_names(lam) == {f"c{i}"}
        assert scope._rebound_after(fn, lam) == {f"b{i}"}
        del tree, fn, lam


def _steps(shape: str, n: int, tmp_path: Path) -> tuple[int, bool, int]:
    make, _, _ = lp.SHAPES[shape]
    _, steps, found, notes = lp.lint_one(tmp_path / f"{shape}{n}", make(n))
    return steps, found, notes


@pytest.mark.parametrize(("shape", "small", "large"), [
    ("clique", 6, 12), ("loops", 10, 30), ("branches", 13, 40), ("conversions", 13, 40),
    ("tuples", 12, 24)])
def test_each_pathological_shape_costs_steps_linear_in_its_size_and_keeps_the_error(
        shape: str, small: int, large: int, tmp_path: Path) -> None:
    size = lp.SHAPES[shape][2]  # n, or a clique's n² calls
    s_small, found_small, _ = _steps(shape, small, tmp_path)
    s_large, found_large, _ = _steps(shape, large, tmp_path)
    assert found_small and found_large  # a bound never hides the base-2 LSE
    # steps per unit of size do not grow (25 % slack for the fixed cost of the module)
    assert s_large / size(large) <= 1.25 * s_small / size(small), (s_small, s_large)
    assert s_large < 40_000


def test_the_issues_sizes_are_cheap(tmp_path: Path) -> None:
    """Six functions in a cycle, 20 nested loops, 26 branches, x = (x, x) 24 times: each took
    a minute or more; each is now a few thousand steps."""
    for shape, n in (("clique", 6), ("loops", 20), ("branches", 26), ("conversions", 26),
                     ("tuples", 24)):
        steps, found, _ = _steps(shape, n, tmp_path)
        assert found and steps < 5_000, (shape, steps)


def test_a_widened_value_still_holds_every_lse_and_its_parts_too() -> None:
    two = Lse(frozenset({Source("producer:f.py:1:1:r", "2", "the LSE of k()")}))
    e = Lse(frozenset({Source("producer:f.py:2:1:r", "e", "the LSE of j()")}))
    value: object = Tup((two, e))
    for _ in range(12):  # 2**12 parts: past the bound
        value = Tup((value, value))
    widened, was = bounds.bounded(value)  # type: ignore[arg-type]
    assert was and isinstance(widened, Union_) and widened.widened
    lse = lse_of(widened)
    assert lse is not None and {s.base for s in lse.sources} == {"2", "e"}
    # joined with anything, it stays unknown-with-those-LSEs
    again = join([widened, Tup((None,))])
    assert isinstance(again, Union_) and again.widened and lse_of(again) == lse


def test_a_budget_hit_is_a_note_naming_the_function(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("attn_contracts.lint.scope.FUNCTION_BUDGET", 3)
    body = "".join(f"    x{i} = o\n" for i in range(10))
    text = textwrap.dedent("""\
        from mylib import combine, decode


        def long_one(q):
            o, lse = decode(q)
        """) + body + "    return combine(o, lse, is_lse_base_on_e=True)\n"
    findings, _ = _lint(tmp_path, text)
    notes = [f for f in findings if f.code == Code.AC033]
    assert notes and "long_one" in notes[0].message and "function budget" in notes[0].message
    assert notes[0].severity == "note"


def test_a_loop_that_changes_nothing_is_interpreted_once(tmp_path: Path) -> None:
    text = lp.HEAD + textwrap.dedent("""\
        def run(q, chunks):
            o, lse = decode(q)
            for c in chunks:
                y = o
            return combine(o, lse, is_lse_base_on_e=True)
        """)
    findings, model = _lint(tmp_path, text)
    assert any(f.code == Code.AC023 for f in findings)
    # 5 statements, each once, with their expressions: no second pass over the loop's body
    once = model.steps
    findings, model = _lint(tmp_path / "twice", text.replace("y = o", "y = o\n        z = o"))
    assert model.steps - once <= 3  # the one more statement and its two expressions


def _lint(tmp_path: Path, text: str) -> tuple[list[Finding], ProgramModel]:
    folder = tmp_path / "engine"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "engine.py").write_text(text)
    records = tmp_path / "records.toml"
    records.write_text(lp.RECORDS)
    return lint_model([folder], LintConfig(), records=[records])


def test_a_recursive_call_is_summarised_to_a_fixpoint_so_a_double_conversion_is_seen(
        tmp_path: Path) -> None:
    """g converts its LSE once per level: at the second level it is no LSE of either base. A
    cycle whose recursive call returned nothing saw one conversion only (and called the literal
    base that agrees with it fine)."""
    text = lp.HEAD + textwrap.dedent("""\
        def g(o, lse, n):
            if n:
                return g(o, lse, n - 1) * 0.6931471805599453
            return lse * 0.6931471805599453


        def run(q):
            o, lse = decode(q)
            x = g(o, lse, q.n)
            return combine(o, x, is_lse_base_on_e=True)
        """)
    findings, _ = _lint(tmp_path, text)
    errors = [f for f in findings if f.code == Code.AC023]
    assert errors and "no LSE of either base" in errors[0].message
    assert not any(f.code == Code.AC033 for f in findings)  # it converged within the passes


@pytest.mark.parametrize("enabled", [True, False])
def test_the_cycle_collector_is_off_for_a_run_and_as_it_was_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: bool) -> None:
    """Each collection walks every syntax tree and value the run holds: off while it runs, then
    back as the caller had it (a host that turned it off keeps it off)."""
    import gc

    import attn_contracts.lint.driver as driver

    seen: list[bool] = []
    build = driver.build_model

    def watched(*args: object, **kwargs: object) -> ProgramModel:
        seen.append(gc.isenabled())
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "build_model", watched)
    a, b, records = _tree(tmp_path)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        findings, _ = lint_model([a, b], records=[records])
        after = gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [False]
    assert after is enabled
    assert any(f.code == Code.AC023 for f in findings)


@pytest.mark.parametrize("text", [
    "T[k] = v", "T.append(x)", "T.a[k] = 1", "T[k].append(1)", "T += [1]", "del T[k]",
    "T.a.b.update(x)", "def f():\n    T.setdefault(k, [])", "T[\n    k\n] = v", "(T)[k] = v",
    "(T).append(1)", "(T) += [1]", "del (T)[k]", "T \\\n[k] = v", "(T  # note\n .update(x))"])
def test_a_module_that_changes_an_imported_name_is_read(text: str) -> None:
    """The text filter read before an importer's tree (a name many modules import, a
    registry used as a decorator, is changed by none) passes every statement the tree's own
    reading counts as a change: it may skip work, never a change."""
    assert _changes_import(ast.parse(text), "T")
    assert _may_change(text, "T")


@pytest.mark.parametrize("text", ["@T.register(x)\nclass A: ...", "x = T.get(1)",
                                  "if T == 1: pass", "f(T)", "TT[k] = v"])
def test_a_module_that_only_reads_an_imported_name_is_not_parsed_for_it(text: str) -> None:
    assert not _changes_import(ast.parse(text), "T")
    assert not _may_change(text, "T")
