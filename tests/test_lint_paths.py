"""Paths kept apart (issue 37 item 1): a flag set beside the kernel that produced an LSE stays
with that kernel's LSE (``lint.partition``), a helper method's LSE is read through the method
that calls it, after what that caller does to it, and a tag stored on a function is read where
Python reads it (not through a ``functools.partial`` that wraps it). Each pair: the bug is an error, the
fix (the same program with the flag or conversion right) has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from attn_contracts.lint import partition
from fixtures.semantic_pairs import IMPL_BASE
from fixtures.semantic_pairs import LN2
from fixtures.semantic_pairs import Pairs
from fixtures.semantic_pairs import lint_json

PAIRS = Pairs()

PAIRS.case("a flag set beside the kernel decides the conversion", {"layer.py": """
        from mylib import decode, decode_e, merge
        def step(q, fast):
            log2 = False
            if fast:
                out, lse = decode(q, return_lse=True)
                log2 = True
            else:
                out, lse = decode_e(q)
            out = out + 0
            if log2:
                pass
            return merge(out, lse)
        """}, {"layer.py": ("                pass", f"                lse = lse * {LN2}")})

PAIRS.case("an elif chain's flag: one side per kernel", {"layer.py": f"""
        from mylib import decode, decode_e, merge
        def step(q, mode):
            if mode == "a":
                out, lse = decode(q, return_lse=True)
                natural = True
            elif mode == "b":
                out, lse = decode_e(q)
                natural = True
            else:
                out, lse = decode_e(q)
                natural = True
            if not natural:
                lse = lse * {LN2}
            return merge(out, lse)
        """}, {"layer.py": ("                natural = True\n            elif",
                            "                natural = False\n            elif")})

PAIRS.case("a backend name chosen beside the kernel decides the conversion", {"layer.py": f"""
        from mylib import decode, decode_e, merge
        def step(q, single):
            backend = "auto"
            if single:
                backend = "trtllm"
                out, lse = decode(q, return_lse=True)
            else:
                out, lse = decode_e(q)
            lse = lse.view(-1)
            lse = lse * {LN2}
            return merge(out, lse)
        """}, {"layer.py": (f"            lse = lse * {LN2}",
                            f"            if backend == 'trtllm':\n                lse = lse * {LN2}")})

PAIRS.case("a helper method's LSE is read after its caller converts it", {"impl.py": IMPL_BASE + """
    from mylib import decode, decode_e
    class Impl(AttentionImpl):
        can_return_lse_for_decode = True
        lse_base_on_e = True
        def _fast(self, q):
            return decode(q, return_lse=True)
        def forward(self, q, fast):
            if fast:
                out, lse = self._fast(q)
                lse = lse.float()
            else:
                out, lse = decode_e(q)
            return out, lse
        """}, {"impl.py": ("lse = lse.float()", f"lse = lse.float() * {LN2}")})


# a function's attribute is what its module stores on it; a partial holds its function in .func
PAIRS.case("a tag on a function, read through the partial that wraps it", {"layer.py": f"""
        import functools
        from mylib import decode, merge
        def _decode(q, **kw):
            return decode(q, **kw)
        _decode.log2 = True
        RUN = functools.partial(_decode, return_lse=True)
        def step(q):
            out, lse = RUN(q)
            if getattr(RUN, "log2", False):
                lse = lse * {LN2}
            return merge(out, lse)
        """}, {"layer.py": ('getattr(RUN, "log2", False)', 'getattr(RUN.func, "log2", False)')})

# a base a method stores on the instance, or on its class as the program runs, under a
# condition: an instance may hold it or the class body's value (an error needs every value wrong)
for _store in ("self", "type(self)"):
    PAIRS.case(f"{_store}.lse_base_on_e stored under a condition is one value of two", {
        "impl.py": IMPL_BASE + f"""
    from mylib import decode, decode_e
    class Impl(AttentionImpl):
        can_return_lse_for_decode = True
        lse_base_on_e = True
        def __init__(self, fast):
            self.fast = fast
            if fast:
                {_store}.lse_base_on_e = True
        def forward(self, q):
            if self.fast:
                return decode(q, return_lse=True)
            return decode_e(q)
        """}, {"impl.py": (f"{_store}.lse_base_on_e = True", f"{_store}.lse_base_on_e = False")})

# a boolean computed from a condition is what a later test of that condition decided, while
# the names it read hold what the test read (the fix computes it after the override)
PAIRS.case("a flag derived from a condition the path has tested", {"layer.py": f"""
        from mylib import decode, decode_e, merge
        def step(q, is_decode: bool, invariant):
            log2 = not is_decode
            if invariant:
                is_decode = False
            if not is_decode:
                out, lse = decode(q, return_lse=True)
                if log2:
                    lse = lse * {LN2}
                return merge(out, lse)
            out, lse = decode_e(q)
            return merge(out, lse)
        """}, {"layer.py": ("""            log2 = not is_decode
            if invariant:
                is_decode = False
""", """            if invariant:
                is_decode = False
            log2 = not is_decode
""")})

# ``a and b`` false where b holds: a did not (``lse is not None`` false: lse is None there)
PAIRS.case("the false side of `lse is not None and flag` where the flag holds", {"layer.py": f"""
        from mylib import decode, merge
        def kernel(q, want):
            out, lse = decode(q, return_lse=True)
            return out, (lse if want else None)
        def step(q, want):
            convert = False
            out, lse = kernel(q, want)
            if lse is not None and convert:
                lse = lse * {LN2}
            return merge(out, lse)
        """}, {"layer.py": ("convert = False", "convert = True")})

@pytest.mark.parametrize("name", PAIRS.names())
def test_bug_is_an_error_and_fix_is_clean(name: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    PAIRS.check(name, tmp_path, capsys)


def test_the_names_read_from_the_syntax() -> None:
    """Plain names only: an attribute may change behind the frame's back (a method, an alias),
    so a path's own value of one never decides a later test."""
    import ast
    tree = ast.parse("if c:\n    x, self.f = 1, 2\nelse:\n    y = 3\n"
                     "z = 1\nwhile self.f:\n    pass\nw = [a for a in b if x]\n")
    st, z, loop, comp = tree.body
    assert partition.bound_names(st) == {"x", "y"}
    assert partition.tested_names(loop) == {"self"}
    assert partition.tested_names(comp) == {"x"}
    assert partition.tested_after([st, z, loop, comp]) == [{"self", "x"}, {"self", "x"}, {"x"},
                                                          set()]


def test_past_the_bound_the_sides_join_and_a_contradiction_stays(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """More flags than paths kept apart: the later ones join, as before, and the base-2 LSE
    left unconverted on one side is still an error (a bound never removes a finding)."""
    flags = "".join(f"""
            if c{i}:
                f{i} = True
            else:
                f{i} = False
            if f{i}:
                out = out + 1""" for i in range(partition.PATHS.bit_length() + 2))
    files = {"layer.py": f"""
        from mylib import decode, merge
        def step(q, {", ".join(f"c{i}" for i in range(partition.PATHS.bit_length() + 2))}, fast):
            out, lse = decode(q, return_lse=True)
            {flags}
            if fast:
                lse = lse * {LN2}
            return merge(out, lse)
        """}
    found = [f for f in lint_json(tmp_path, capsys, "bound", files) if f["severity"] == "error"]
    assert found


#: programs where a base-2 LSE reaches the base-e merge unconverted on one path Python can take:
#: keeping paths apart must keep that path (each lost its error in a first version: a review)
FEASIBLE = {
    # a name one path lacks is not the other path's value when the paths join
    "an attribute set on one side, past the bound on paths": """
        class K:
            natural = True
            def step(self, q, c, c1, c2, c3):
                out, lse = decode(q, return_lse=True)
                if c:
                    self.natural = False
                if c1: f1 = True
                else: f1 = False
                if c2: f2 = True
                else: f2 = False
                if c3: f3 = True
                else: f3 = False
                if f1: q = q + 1
                if f2: q = q + 1
                if f3: q = q + 1
                if not self.natural:
                    lse = lse * LN2
                return merge(out, lse)
        """,
    # a method changes the attribute: the path's own value of it is stale
    "an attribute a method flips after the sides": """
        class K:
            natural = True
            def flip(self):
                self.natural = not self.natural
            def step(self, q, c):
                if c:
                    out, lse = decode(q, return_lse=True)
                    self.natural = False
                else:
                    out, lse = decode_e(q)
                    self.natural = True
                self.flip()
                if not self.natural:
                    lse = lse * LN2
                return merge(out, lse)
        """,
    # a dict a callee changes: its value on a path is stale too
    "a dict a callee changes after the sides": """
        def flip(d):
            d["two"] = not d["two"]
        def step(q, c):
            cfg = {}
            if c:
                out, lse = decode(q, return_lse=True)
                cfg["two"] = True
            else:
                out, lse = decode_e(q)
                cfg["two"] = False
            flip(cfg)
            if cfg["two"]:
                lse = lse * LN2
            return merge(out, lse)
        """,
    # a loop left by break on one path, the attribute set on the other
    "an attribute set after a break in a loop": """
        class K:
            natural = True
            def step(self, q, c):
                out, lse = decode(q, return_lse=True)
                for name in ("a", "b"):
                    if c:
                        break
                    self.natural = False
                if not self.natural:
                    lse = lse * LN2
                return merge(out, lse)
        """,
}



def _derived(before: str, inner: str = "", params: str = "q, x: bool, c, g, items, m") -> str:
    """``flag = not x`` then ``if x: ... if flag: merge(base-2 LSE)``: reachable in Python only
    where ``before``/``inner`` rebind ``x`` or ``flag`` (each case does)."""
    return f"""
        def step({params}):
            out, lse = decode(q, return_lse=True)
            flag = not x
{before}
            if x:
{inner}
                if flag:
                    return merge(out, lse)
            return merge(out, lse * LN2)
        """


#: a fact, an alias, a function's attribute or a class's value decided where Python may hold
#: another (each was silence in a first version: a second review)
DECIDED_WRONG = {
    "x rebound by except ... as x": _derived(
        "            try:\n                g()\n            except Exception as x:\n                pass"),
    "x rebound by a match capture": _derived(
        "            match m:\n                case [x]:\n                    pass"),
    "x rebound by an import": _derived("            if c:\n                from os import sep as x"),
    "x a global a callee rebinds": """
        x = False
        def toggle():
            global x
            x = True
""" + _derived("            toggle()", params="q, c, g, items, m"),
    "a list changed in place": """
        def step(q, items):
            out, lse = decode(q, return_lse=True)
            flag = not items
            items.append(q)
            if items:
                if flag:
                    return merge(out, lse)
            return merge(out, lse * LN2)
        """,
    "flag rebound by an import": _derived(
        "", "                from os import sep as flag"),
    "flag rebound by except ... as flag": _derived(
        "", "                try:\n                    g()\n                except Exception as flag:\n"
        "                    pass"),
    "a function's attribute a decorator sets": """
        def tag(fn):
            fn.natural = True
            return fn
        @tag
        def _decode(q):
            return decode(q, return_lse=True)
        def step(q):
            out, lse = _decode(q)
            if getattr(_decode, "natural", False):
                return merge(out, lse)
            return merge(out, lse * LN2)
        """,
    "a partial's own attribute": """
        import functools
        P = functools.partial(decode, return_lse=True)
        P.natural = True
        def step(q):
            out, lse = P(q)
            if getattr(P, "natural", False):
                return merge(out, lse)
            return merge(out, lse * LN2)
        """,
    "a function's attribute stored under a condition": """
        import os
        def _decode(q):
            return decode(q, return_lse=True)
        if os.environ.get("X"):
            _decode.natural = True
        else:
            _decode.natural = 0
        def step(q):
            out, lse = _decode(q)
            if _decode.natural:
                return merge(out, lse)
            return merge(out, lse * LN2)
        """,
    "a public helper called from outside the class": """
        class AttentionImpl:
            can_return_lse_for_decode = False
            lse_base_on_e = True
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = True
            def forward_decode(self, q):
                return decode(q, return_lse=True)
            def forward(self, q):
                out, lse = self.forward_decode(q)
                return out, lse * LN2
        def run(q):
            return Impl().forward_decode(q)
        """,
    "a class store beside a conditional instance store": """
        class AttentionImpl:
            can_return_lse_for_decode = False
            lse_base_on_e = True
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = False
            def __init__(self, fast):
                self.fast = fast
                if fast:
                    self.lse_base_on_e = True
            def forward(self, q):
                if self.fast:
                    return decode(q, return_lse=True)
                return decode_e(q)
        Impl.lse_base_on_e = True
        """,
}


@pytest.mark.parametrize("name", sorted({**FEASIBLE, **DECIDED_WRONG}))
def test_a_feasible_path_keeps_its_error(name: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Each program of FEASIBLE and DECIDED_WRONG: the base-2 LSE that reaches the base-e merge
    on a path Python can take is an error."""
    files = {"layer.py": f"""
        from mylib import decode, decode_e, merge
        LN2 = {LN2}
""" + {**FEASIBLE, **DECIDED_WRONG}[name]}
    assert [f for f in lint_json(tmp_path, capsys, "case", files) if f["severity"] == "error"]
