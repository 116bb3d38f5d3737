"""The lint's interpreter reads what Python computes (issue 37 item 1): getattr and dict.get,
custom ops, counted conversions, out buffers, merged dicts, in-place changes, known strings and
tables, builtins folded on constants. Bug/fix pairs (``fixtures/semantic_pairs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.semantic_pairs import FAMILY
from fixtures.semantic_pairs import HELD
from fixtures.semantic_pairs import IMPL_BASE
from fixtures.semantic_pairs import LN2
from fixtures.semantic_pairs import Pairs
from fixtures.semantic_pairs import lint_json
from fixtures.semantic_pairs import told_files

PAIRS = Pairs()

# --- getattr, dict.get, custom ops, conversions --------------------------------------------
PAIRS.case("getattr(module, constant)", {"layer.py": """
        import mylib
        from mylib import decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            return getattr(mylib, "merge")(out, lse)
        """}, {"layer.py": ("(out, lse)\n", f"(out, lse * {LN2})\n")})
PAIRS.case("getattr(self, table name)", {"layer.py": """
        from mylib import combine, decode
        NAMES = {"a2a": "reduce_e"}
        class Layer:
            def reduce_e(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=True)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return getattr(self, NAMES["a2a"])(out, lse)
        """}, {"layer.py": ("is_lse_base_on_e=True", "is_lse_base_on_e=False")})
PAIRS.case("dict.get with a default", {"layer.py": """
        from mylib import combine, decode
        BASES = {"fa3": False}
        def step(q, backend):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASES.get(backend, True))
        """}, {"layer.py": ("BASES.get(backend, True)", "BASES.get(backend, False)")})
PAIRS.case("a torch.ops custom-op wrapper", {"ops.py": """
        import torch
        from mylib import merge
        @torch.library.custom_op("eng::reduce", mutates_args=())
        def reduce(out: torch.Tensor, lse: torch.Tensor) -> torch.Tensor:
            return merge(out, lse)
        """, "layer.py": """
        import torch
        import ops
        from mylib import decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            return torch.ops.eng.reduce(out, lse)
        """}, {"layer.py": ("(out, lse)\n", f"(out, lse * {LN2})\n")})
PAIRS.case("a double conversion", {"layer.py": """
        from mylib import merge, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            lse = lse * 0.6931471805599453
            return merge(out, lse * 0.6931471805599453)
        """}, {"layer.py": ("merge(out, lse * 0.6931471805599453)", "merge(out, lse)")})

# a helper called from more places than the bound on call contexts is read with its parameters:
# its conversion still applies to each caller's LSE, counted (the last call converts twice);
# eight callers of the helper, more than the bound
_CALLERS = "".join(f"""        def s{i}(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, to_ln(lse[{i}]))
""" for i in range(8))
PAIRS.case("a double conversion through a tensor-typed helper past the bound on call contexts", {
    "layer.py": """
        import math
        import torch
        from mylib import merge, decode
        _LN_2 = math.log(2.0)
        def to_ln(lse: torch.Tensor) -> torch.Tensor:
            return lse * _LN_2
{callers}        def last(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, to_ln(to_ln(lse)))
        """.replace("{callers}", _CALLERS)}, {"layer.py": ("to_ln(to_ln(lse))", "to_ln(lse)")})

# --- an out buffer the kernel writes (lse_out), the argument bound as Python binds it ------------
PAIRS.case("an out buffer's slice carried in a **mapping built by setitem, read by a subclass", {
    "base_impl.py": """
        import torch
        from mylib import decode
        class Impl:
            def kernel(self, q, pieces):
                buf = None
                if pieces:
                    buf = torch.empty(4, 8)
                for lo, hi in pieces:
                    more = {}
                    if buf is not None:
                        more["lse"] = buf[lo:hi]
                    decode(q[lo:hi], return_lse=True, **more)
                return q, buf
        """,
    "child_impl.py": """
        from mylib import merge
        from base_impl import Impl
        class Child(Impl):
            def step(self, q):
                out, lse = self.kernel(q, [(0, 2)])
                return merge(out, lse)
        """}, {"child_impl.py": ("merge(out, lse)", f"merge(out, lse * {LN2})")})
PAIRS.case("an out buffer's view in a dict literal given as **mapping", {"layer.py": """
        import torch
        from mylib import decode, merge
        def step(q, out):
            buf = torch.empty(4, 8)
            extra = {"lse": buf.view(4, 8)}
            decode(q, return_lse=True, **extra)
            return merge(out, buf)
        """}, {"layer.py": ("merge(out, buf)", f"merge(out, buf * {LN2})")})
PAIRS.case("an out buffer in dict(...) given as **mapping", {"layer.py": """
        import torch
        from mylib import decode, merge
        def step(q, out):
            buf = torch.empty(4, 8)
            decode(q, return_lse=True, **dict(lse=buf))
            return merge(out, buf)
        """}, {"layer.py": ("merge(out, buf)", f"merge(out, buf * {LN2})")})
PAIRS.case("an out buffer's copy is not the buffer (the kernel writes the copy)", {"layer.py": """
        import torch
        from mylib import decode, merge
        def step(q, out):
            buf = torch.empty(4, 8)
            decode(q, return_lse=True, lse=buf.transpose(0, 1))
            return merge(out, buf)
        """}, {"layer.py": ("lse=buf.transpose(0, 1))", "lse=buf.clone())")})
PAIRS.case("an out buffer by position, the producer's signature in the program", {
    "mylib.py": """
        def merge(out, lse):
            return out
        def decode(q, return_lse=False, lse=None):
            return q, lse
        """,
    "layer.py": """
        import torch
        from mylib import decode, merge
        def step(q, out):
            buf = torch.empty(4, 8)
            decode(q, True, buf[:2])
            return merge(out, buf)
        """}, {"layer.py": ("merge(out, buf)", f"merge(out, buf * {LN2})")})

# --- dicts merged: a later key over an earlier one ------------------------------------------
MERGED = """
        from functools import partial
        from collections import ChainMap
        from mylib import combine, decode
        DEFAULTS = {"is_lse_base_on_e": True}
        def make(opts):
            return partial(combine, **opts)
        def step(q):
            out, lse = decode(q, return_lse=True)
            mine = {"is_lse_base_on_e": False}
            return make(MERGE)(out, lse)
        """
for form, bug, fix in [
        ("{**a, **b}", "{**mine, **DEFAULTS}", "{**DEFAULTS, **mine}"),
        ("a | b", "mine | DEFAULTS", "DEFAULTS | mine"),
        ("dict(a, **b)", "dict(mine, **DEFAULTS)", "dict(DEFAULTS, **mine)"),
        ("ChainMap(a, b)", "ChainMap(DEFAULTS, mine)", "ChainMap(mine, DEFAULTS)")]:
    PAIRS.case(f"dicts merged by {form}: the later key wins (ChainMap: the first map's)",
         {"layer.py": MERGED.replace("MERGE", bug)}, {"layer.py": (bug, fix)})
PAIRS.case("a partial bound with a ** it cannot read is not told the default", {"layer.py": """
        from functools import partial
        from mylib import decode, reduce_default_e
        def step(q, opts):
            out, lse = decode(q, return_lse=True)
            told = partial(reduce_default_e, **{"is_lse_base_on_e": True})
            unread = partial(reduce_default_e, **opts)
            return told(out, lse), unread(out, lse)
        """}, {"layer.py": ('{"is_lse_base_on_e": True}', '{"is_lse_base_on_e": False}')})

REPLACED = HELD + """
        def step(q):
            out, lse = decode(q, return_lse=True)
            p = Part(out, lse)
            p = p._replace(lse=p.lse * LN2)
            h = Held(out, lse)
            h = dataclasses.replace(h, lse=h.lse * LN2)
            return merge(p.out, p.lse), merge(h.out, h.lse)
        """.replace("LN2", LN2)
PAIRS.case("NamedTuple._replace: the field given is replaced",
     {"layer.py": REPLACED.replace(f"p._replace(lse=p.lse * {LN2})", "p._replace(out=p.out)")},
     {"layer.py": ("p._replace(out=p.out)", f"p._replace(lse=p.lse * {LN2})")})
PAIRS.case("dataclasses.replace: the field given is replaced",
     {"layer.py": REPLACED.replace(f"replace(h, lse=h.lse * {LN2})", "replace(h, out=h.out)")},
     {"layer.py": ("replace(h, out=h.out)", f"replace(h, lse=h.lse * {LN2})")})

# --- a callee changes its argument's tensor in place ---------------------------------------
PAIRS.case("a helper that converts its argument in place converts the caller's tensor", {
    "helpers.py": """
        import math
        def to_ln_(lse):
            return lse.mul_(math.log(2))
        def to_ln(lse):
            lse = lse * math.log(2)
            return lse
        """,
    "layer.py": """
        from helpers import to_ln, to_ln_
        from mylib import decode, merge
        def step(q):
            out, lse = decode(q, return_lse=True)
            to_ln(lse)
            return merge(out, lse)
        """}, {"layer.py": ("to_ln(lse)\n", "to_ln_(lse)\n")})
PAIRS.case("a method that converts its argument in place, on a contiguous copy or the tensor", {
    "layer.py": """
        import math
        from mylib import decode, merge
        class Conv:
            def to_ln_(self, lse):
                lse.mul_(math.log(2))
        def step(q, c: Conv):
            out, lse = decode(q, return_lse=True)
            c.to_ln_(lse.contiguous())
            return merge(out, lse)
        """}, {"layer.py": ("c.to_ln_(lse.contiguous())", "c.to_ln_(lse)")})

PAIRS.case("`if x is not None:` converts the tensor, and x is None on the other side", {"layer.py": """
        import math
        import torch
        from mylib import decode, merge
        def step(q, out, want):
            lse = None
            if want:
                lse = torch.empty(4, 8)
            decode(q, return_lse=True, lse=lse)
            if lse is not None:
                pass
            return merge(out, lse)
        """}, {"layer.py": ("                pass", "                lse.mul_(math.log(2))")})

# a tensor's arithmetic method is its operator: add_ shifts (same base), mul_ scales
PAIRS.case("lse.add_(ln 2) is no conversion; lse.mul_(ln 2) is", {"layer.py": f"""
        from mylib import decode, merge
        def step(q):
            out, lse = decode(q, return_lse=True)
            lse.add_({LN2})
            return merge(out, lse.sub(lse.amax()))
        """}, {"layer.py": ("lse.add_(", "lse.mul_(")})

# more subclasses of one base than the contexts one function gets
SUBCLASSES = "".join(f"""
        class {c}(ImplBase):
            lse_base_on_e = False
            def forward(self, q):
                return decode(q, return_lse=True)""" for c in "ABCDEFG")
PAIRS.case("__init_subclass__ runs with the class statement's keywords", {"base.py": """
        class ImplBase:
            can_return_lse_for_decode = True
            lse_base_on_e = True
            def __init_subclass__(cls, log_base=None, **kwargs):
                super().__init_subclass__(**kwargs)
                if log_base is not None:
                    cls.lse_base_on_e = log_base == "e"
        """, "impl.py": """
        from base import ImplBase
        from mylib import decode
""" + SUBCLASSES + """
        class Impl(ImplBase, log_base="e"):
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ('log_base="e"', 'log_base="2"')})

# a base's hook that stamps its base on subclasses, unless the subclass's own body names one
# (``cls.__dict__``: the names its body binds, not its bases'): the stamp over a subclass's
# own declaration is the bug, reported at that declaration in the subclass's file
STAMPING_BASE = {"base.py": """
        class ImplBase:
            can_return_lse_for_decode = True
            lse_base_on_e = True
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                cls.lse_base_on_e = False
        """, "impl.py": """
        import math
        from base import ImplBase
        from mylib import decode
        class Impl(ImplBase):
            lse_base_on_e = True
            def forward(self, q):
                out, lse = decode(q, return_lse=True)
                return out, lse * math.log(2)
        """}
PAIRS.case("__init_subclass__ stamps only a subclass whose own body lacks the name",
           STAMPING_BASE, {"base.py": ("                cls.lse_base_on_e = False",
                                       "                if 'lse_base_on_e' not in cls.__dict__:"
                                       "\n                    cls.lse_base_on_e = False")})


# a mixin's ``__init__`` declares the base on the instance: it holds only where that
# ``__init__`` runs (``super().__init__``), not past an explicit ``Base.__init__(self)``
PAIRS.case("a mixin's __init__ store holds only where the __init__ chain runs it", {
    "impl.py": """
        from mylib import decode
        class AttentionImpl:
            can_return_lse_for_decode = False
            lse_base_on_e = True
            def __init__(self, n):
                self.n = n
        class Log2Mixin:
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.lse_base_on_e = False
        class Impl(Log2Mixin, AttentionImpl):
            can_return_lse_for_decode = True
            def __init__(self, n):
                AttentionImpl.__init__(self, n)
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("AttentionImpl.__init__(self, n)", "super().__init__(n)")})


def test_a_base_hooks_stamp_is_reported_at_the_declaration_it_replaces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = [f for f in lint_json(tmp_path, capsys, "bug", STAMPING_BASE)
             if f["severity"] == "error"]
    assert [(f["code"], Path(f["path"]).name, f["line"]) for f in found] == \
        [("AC008", "impl.py", 6)], found  # ``lse_base_on_e = True``, replaced


# `not` of a backend's base flag, through a property that negates it: read per subclass an
# instance may be (the other base than each declares: an error), never "could not be read"
NEGATED = """
    from mylib import combine, decode
    class AttentionImpl:
        can_return_lse_for_decode = False
        lse_base_on_e = True
        @property
        def lse_is_log2(self):
            return not self.lse_base_on_e
        def forward(self, q):
            raise NotImplementedError
    class A(AttentionImpl):
        can_return_lse_for_decode = True
        lse_base_on_e = False
        def forward(self, q):
            return decode(q, return_lse=True)
    class B(AttentionImpl):
        can_return_lse_for_decode = True
        lse_base_on_e = True
        def forward(self, q):
            out, lse = decode(q, return_lse=True)
            return out, lse * 0.6931471805599453
    class Layer:
        def __init__(self, impl: AttentionImpl):
            self.impl = INSTANCE
        def run(self, q):
            out, lse = self.impl.forward(q)
            return combine(out, lse, is_lse_base_on_e=self.impl.lse_is_log2)
    """
for which, instance in (("any subclass an instance may be", "impl"), ("one subclass", "A()")):
    PAIRS.case(f"`not` of a backend's base flag through a property, on {which}",
               {"impl.py": NEGATED.replace("INSTANCE", instance)},
               {"impl.py": ("=self.impl.lse_is_log2", "=not self.impl.lse_is_log2")}, quiet=True)

# a name a module does not bind is its ``__getattr__``'s answer (PEP 562), imported or read
# as the module's attribute; ``globals()[name]`` is the module's own binding
MODULE_GETATTR = {"ops.py": """
        import functools
        from mylib import combine
        _SPELLINGS = {"combine_log2": "combine"}
        def __getattr__(name):
            if name in _SPELLINGS:
                return functools.partial(globals()[_SPELLINGS[name]],
                                         is_lse_base_on_e=name.endswith("_log2"))
            raise AttributeError(name)
        """, "layer.py": """
        import ops
        from mylib import decode
        from ops import combine_log2
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine_log2(out, lse)
        def step2(q):
            out, lse = decode(q, return_lse=True)
            return ops.combine_log2(out, lse)
        """}
PAIRS.case("a module's __getattr__ answers the names it does not bind", MODULE_GETATTR,
           {"ops.py": ("is_lse_base_on_e=name", "is_lse_base_on_e=not name")})

# what an instance of a subclass runs through a base's class-body alias (``legacy = run``)
# is the base's ``run``, not its own override: its LSE is judged against the subclass's
# declaration where the combine is told that subclass's flag
PAIRS.case("a class-body alias runs the function it named, not a subclass's override", {
    "impl.py": """
        import math
        from mylib import combine, decode
        class AttentionImpl:
            can_return_lse_for_decode = True
            lse_base_on_e = False
            def run(self, q):
                return decode(q, return_lse=True)
            legacy = run
        class Converted(AttentionImpl):
            lse_base_on_e = True
            def run(self, q):
                out, lse = decode(q, return_lse=True)
                return out, lse * math.log(2)
        class Layer:
            def __init__(self, impl: AttentionImpl):
                self.impl = impl
            def step(self, q):
                out, lse = self.impl.legacy(q)
                return combine(out, lse, is_lse_base_on_e=self.impl.lse_base_on_e)
        """}, {"impl.py": ("self.impl.legacy(q)", "self.impl.run(q)")})

PAIRS.case("a nested function rebinds the enclosing variable only where it says nonlocal", {
    "layer.py": """
        from mylib import combine, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            base_e = True
            def use_base_2():
                base_e = False
            use_base_2()
            return combine(out, lse, is_lse_base_on_e=base_e)
        """}, {"layer.py": ("                base_e = False",
                            "                nonlocal base_e\n                base_e = False")})

PAIRS.case("a NamedTuple is a tuple: unpacked and indexed", {"layer.py": """
        from typing import NamedTuple
        from mylib import decode, merge
        class Part(NamedTuple):
            out: object
            lse: object
        def run(q):
            out, lse = decode(q, return_lse=True)
            return Part(out, lse)
        def step(q):
            out, lse = run(q)
            p = run(q)
            return merge(out, lse), merge(p[0], p[1])
        """}, {"layer.py": ("return Part(out, lse)", f"return Part(out, lse * {LN2})")})

# --- known strings, tables and tuples read as Python computes them ---------------------------
NAMED = """
        from mylib import combine, decode
        NATURAL = "fa3,flashmla".split(",")
        TABLE = {"fa3": True, "trtllm_fi": False}
        def base_e(name):
            if name is None:
                return False
            if name.endswith("_fi") or "trtllm" in name:
                return False
            return name in NATURAL
        def by_table(name):
            return TABLE.get(name, True)
        def by_index(name):
            return (True, False)[name.startswith("trtllm")]
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=WHICH("NAME"))
        """
for which in ("base_e", "by_table", "by_index"):
    # str methods, a substring, a table, a tuple indexed by a bool, dead code after a return
    PAIRS.case(f"a base chosen from a known backend name by {which}",
         {"layer.py": NAMED.replace("WHICH", which).replace("NAME", "fa3")},
         {"layer.py": ('"fa3")', '"trtllm_fi")')})

PAIRS.case("a conversion factor computed by math (log with a base, a quotient): folded as Python does",
     {"layer.py": """
        import math
        from mylib import decode, merge
        def step(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, lse * math.log(math.e, 2))
        """}, {"layer.py": ("math.log(math.e, 2)", "(1 / math.log(math.e, 2))")})



def _impl(before: str, declaration: str) -> str:
    """A backend returning mylib.decode's base-2 LSE whose base is ``declaration`` (a line of
    its body), after the module-level code ``before``."""
    return f"""
        from base import AttentionImpl
        from mylib import decode
{before}
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            {declaration}
            def forward(self, q):
                return decode(q, return_lse=True)
        """


PAIRS.case("an Enum member's auto() value is Python's (from 1, one more than the last)", {
    "base.py": IMPL_BASE, "impl.py": _impl("""
        import enum
        class Unit(enum.Enum):
            LN = enum.auto()
            LOG2 = enum.auto()""", "lse_base_on_e = Unit.LOG2.value != 1  # counted from 0?")},
    {"impl.py": ("Unit.LOG2.value != 1", "Unit.LOG2.value != 2")})

PAIRS.case("a class body reads the names it assigned above (a scope run in order)", {
    "base.py": IMPL_BASE, "impl.py": _impl("", 'lse_unit = "log2"\n            '
                                               'lse_base_on_e = lse_unit != "log_2"')},
    {"impl.py": ('lse_unit != "log_2"', 'lse_unit != "log2"')})


PAIRS.case("a kernel that returns its output alone: the LSE is its buffer's, converted after", {
    "base.py": IMPL_BASE, "impl.py": """
        import math
        import torch
        from base import AttentionImpl
        from mylib import decode_into
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = True
            def forward(self, q):
                lse = torch.empty((4, 8), dtype=torch.float32)
                out = decode_into(q, lse=lse)
                return out, lse
        """}, {"impl.py": ("return out, lse", "return out, lse * math.log(2.0)")})

PAIRS.case("an __init__ store is read in __init__'s frame, its locals included", {"layer.py": """
        import functools
        from mylib import combine, decode
        class Layer:
            def __init__(self, version):
                by_version = {2: True, 3: True}
                self.combine = functools.partial(combine,
                                                 is_lse_base_on_e=by_version[version])
        class Layer3(Layer):
            def __init__(self):
                super().__init__(3)
            def run(self, q):
                out, lse = decode(q, return_lse=True)
                return self.combine(out, lse)
        """}, {"layer.py": ("by_version = {2: True, 3: True}",
                            "by_version = {2: False, 3: False}")})


# --- Python's builtins on constants, folded by Python (lint/folding.py) --------------------------
def _named(table: str, test: str) -> dict[str, str]:
    """A combine told its base by a module-level table of backend names (``table``: its
    lines; ``test``: the expression of ``name`` that says "base 2"), asked for the base-2
    backend ``"fi"``."""
    return {"layer.py": f"""
        from mylib import combine, decode
{table}
        def is_log2(name):
            return {test}
        def step(q, name="fi"):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=not is_log2("fi"))
        """}


PAIRS.case("set operators bind as Python binds them (- before |)", _named(
    '        ALL = frozenset({"fa", "fi", "mla"})\n'
    '        LOG2 = frozenset({"fi", "trt"})\n'
    '        LN = ALL | {"aiter"} - LOG2', 'name not in LN'),
    {"layer.py": ('ALL | {"aiter"} - LOG2', '(ALL | {"aiter"}) - LOG2')})

PAIRS.case("a tuple nested in a tuple is one element, not its items", _named(
    '        CUDA = ("fi", "trt")\n        LOG2 = (CUDA, "aiter2")', 'name in LOG2'),
    {"layer.py": ('LOG2 = (CUDA, "aiter2")', 'LOG2 = (*CUDA, "aiter2")')})

PAIRS.case("frozenset.union returns a new set: a result thrown away changes nothing", _named(
    '        LOG2 = frozenset({"trt"})\n        LOG2.union({"fi"})', 'name in LOG2'),
    {"layer.py": ('LOG2.union({"fi"})', 'LOG2 = LOG2.union({"fi"})')})

PAIRS.case("a descriptor's __get__ runs for the class the attribute is read on", {
    "base.py": """
        class _OnE:
            def __get__(self, obj, objtype=None):
                cls = type(obj) if obj is not None else objtype
                return cls.lse_log_base == "e"
        class AttentionImpl:
            can_return_lse_for_decode = False
            lse_log_base = "e"
            lse_base_on_e = _OnE()
        """, "impl.py": _impl("", 'lse_log_base = "e"')},
    {"impl.py": ('lse_log_base = "e"', 'lse_log_base = "2"')})

PAIRS.case("an Enum member whose value repeats an earlier one is an alias: not iterated", _named(
    '        import enum\n'
    '        class Base(enum.Enum):\n'
    '            fa = "e"\n'
    '            trt = "2"\n'
    '            fi = "2"\n'
    '        LOG2 = frozenset(m.name for m in Base if m.value == "2")', 'name in LOG2'),
    {"layer.py": ('frozenset(m.name for m in Base if m.value == "2")',
                  'frozenset(m.name for m in Base if m.value == "2") | {"fi"}')})

PAIRS.case("a Flag's zero member is in every value of the Flag", _named(
    '        import enum\n'
    '        class Lse(enum.Flag):\n'
    '            BASE_E = 0\n'
    '            BASE_2 = enum.auto()\n'
    '        TABLE = {"fa": Lse.BASE_E, "mla": Lse.BASE_E}',
    'Lse.BASE_E not in TABLE.get(name, Lse.BASE_2)'),
    {"layer.py": ('Lse.BASE_E not in TABLE.get(name, Lse.BASE_2)',
                  'TABLE.get(name, Lse.BASE_2) == Lse.BASE_2')})

PAIRS.case("a comprehension's condition drops an element, as Python runs it", _named(
    '        BASES = {"fa": True, "fi": False, "trt": False}\n'
    '        LOG2 = [n for n, on_e in BASES.items() if on_e]', 'name in LOG2'),
    {"layer.py": ('if on_e]', 'if not on_e]')})

PAIRS.case("a loop's else runs unless the loop breaks", {"layer.py": """
        from mylib import combine, decode
        def is_log2(name):
            for log2_name in ("fi", "trt"):
                if name == log2_name:
                    found = True
            else:
                found = False
            return found
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=not is_log2("fi"))
        """}, {"layer.py": ("found = True\n", "found = True\n                    break\n")})

PAIRS.case("bool() of a non-empty set is True, whatever it holds", {"layer.py": """
        from mylib import combine, decode
        BASES_E = {False}
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=bool(BASES_E))
        """}, {"layer.py": ("bool(BASES_E)", "all(BASES_E)")})

PAIRS.case("a class is never equal to its name", {"layer.py": """
        from mylib import combine, decode
        class FiImpl:
            pass
        LOG2_IMPLS = frozenset({"FiImpl"})
        def step(impl: FiImpl, q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=type(impl) not in LOG2_IMPLS)
        """}, {"layer.py": ("type(impl) not in", "type(impl).__name__ not in")})


PAIRS.case("an or whose other operand is known false narrows as its first", {"layer.py": f"""
        from mylib import combine, decode
        class Parent:
            converts = True
        class Impl(Parent):
            converts = False
            def run(self, q, wanted):
                out, lse = decode(q, return_lse=True)
                lse = lse if wanted else None
                if lse is None or super().converts:
                    return out, lse
                return out, lse * {LN2}
        def step(q):
            out, lse = Impl().run(q, q.wanted)
            return combine(out, lse, is_lse_base_on_e=True)
        """}, {"layer.py": ("    converts = True", "    converts = False")})


# --- scalars, strings, dict methods and generators, as Python computes them ------------------
NL = "\n            "  # a line break inside ``step``
PAIRS.told([
    ("a chained comparison is each link, and-ed", "lo, hi = 1, 3", "lo < 2 < hi",
     ("lo < 2 < hi", "lo < 2 > hi")),
    ("operators on known scalars (an augmented |=)", f"natural = False{NL}natural |= 'fa' == 'fa'",
     "natural", ("'fa' == 'fa'", "'fa' == 'fi'")),
    ("an f-string of known parts", "name = f'{\"fa\"}{3:d}'", "name == 'fa3'",
     ("== 'fa3'", "== 'fa2'")),
    ("str % and str.format of known parts", "a, b = '%s3' % 'fa', '{}3'.format('fa')", "a == b",
     ("'{}3'.format", "'{}2'.format")),
    ("dict.setdefault stores only where the key is absent",
     f"d = {{'fi': True}}{NL}d.setdefault('fi', False)", "d['fi']", ("{'fi': True}", "{}")),
    ("dict.pop removes its key; the default is what a missing key gives",
     f"d = {{'fi': True}}{NL}d.pop('fi')", "d.pop('fi', True)",
     ("d.pop('fi', True)", "d.pop('fi', False)")),
    ("a dict's views in its order", "d = {'fa': True, 'fi': False}", "list(d.values())[0]",
     ("list(d.values())[0]", "list(d.items())[1][1]")),
    # an element of a container whose positions are not known (``insert`` is not followed
    # position by position; ``append`` is) is one of its elements, not every one of them on
    # some path: differing flags there are not read, never an error
    ("an element at a position not known is not told on every path",
     f"flags = []{NL}flags.append(True)", "flags[0]",
     ("flags.append(True)", f"flags.append(True){NL}flags.insert(0, False)")),
])
# functions of the standard library called as Python calls them: a key function, a folding
# function, a table for str.translate (keyed by code points, so a string key changes nothing)
PAIRS.told([
    ("itertools.groupby yields a key once per run: unsorted rows repeat it",
     f"import itertools{NL}rows = (('fi', False), ('fa', True), ('fi', True))",
     "len([k for k, _ in itertools.groupby(rows, key=lambda r: r[0])]) == 3",
     ("rows, key=", "sorted(rows), key=")),
    ("operator.itemgetter as a sort key and a groupby key",
     f"import itertools, operator{NL}rows = (('fa', 'ln'), ('fi', 'ln'), ('fm', 'log2'))",
     "[u for u, _ in itertools.groupby(sorted(rows, key=operator.itemgetter(1)), "
     "key=operator.itemgetter(1))][0] == 'ln'", ("('fi', 'ln')", "('fi', 'aa')")),
    ("functools.reduce calls its function on the running value",
     "import functools, operator", "functools.reduce(operator.eq, (False, False))",
     ("operator.eq, (False", "operator.and_, (False")),
    ("a builtin as the key function is called as Python calls it",
     "", "sorted(('bb', 'a'), key=len)[0] == 'a'", ("== 'a'", "== 'bb'")),
    ("min and max with a key pick the element, not the key",
     "rows = (('fa', 2), ('fi', 1))", "max(rows, key=lambda r: r[1])[0] == 'fa'",
     ("== 'fa'", "== 'fi'")),
    ("str.translate maps code points: a string-keyed table changes nothing",
     "name = 'cute-dsl'.translate({'-': '_'})", "name == 'cute-dsl'",
     ("{'-': '_'}", "{ord('-'): '_'}")),
    ("itertools.compress keeps the elements whose selector is true: any non-empty string is",
     f"import itertools{NL}names = ('fa', 'fi'){NL}units = ('e', '2')",
     "'fi' in frozenset(itertools.compress(names, units))",
     ("names, units))", "names, (u == 'e' for u in units)))")),
    ("itertools.filterfalse keeps the elements its predicate refuses",
     f"import itertools{NL}names = ('fa', 'fi')",
     "'fi' in frozenset(itertools.filterfalse(lambda n: n not in {'fi'}, names))",
     ("lambda n: n not in", "lambda n: n in")),
    ("a set's bound __contains__ is its membership test",
     f"import itertools{NL}names = ('fa', 'fi'){NL}natural = frozenset({{'fa'}})",
     "'fi' in frozenset(itertools.filterfalse(natural.__contains__, names))",
     ("'fi' in frozenset", "'fa' in frozenset")),
    ("a dict's bound __getitem__ reads its entry",
     "flags = {'fa': False, 'fi': True}", "list(map(flags.__getitem__, ('fi', 'fa')))[0]",
     ("('fi', 'fa')", "('fa', 'fi')")),
    ("itertools.pairwise pairs each element with the next",
     "import itertools", "list(itertools.pairwise((False, True, False)))[0][1]",
     (")[0][1]", ")[1][1]")),
    ("operator.methodcaller calls the method it names with its arguments",
     "import operator", "operator.methodcaller('startswith', 'fl')('flash')",
     ("'fl')", "'fi')")),
    ("an itemgetter class attribute read through self is no method: it is not bound",
     f"import operator{NL}class K:{NL}    get = operator.itemgetter(0){NL}"
     f"    def first(self, t):{NL}        return self.get(t)",
     "K().first((True, False))", ("itemgetter(0)", "itemgetter(1)")),
])
# an object's subscript and membership test run its class's own methods
_TABLE = """class Table:
            _NATURAL = frozenset({"fa", "fm"})
            def __getitem__(self, name):
                return name in self._NATURAL
            def __contains__(self, name):
                return name in self._NATURAL
        TABLE = Table()"""
PAIRS.told([("obj[k] runs its class's __getitem__", "", "TABLE['fa']",
             ("TABLE['fa']", "TABLE['fi']")),
            ("k in obj runs its class's __contains__", "", "'fi' not in TABLE",
             ("'fi' not in", "'fi' in"))], module=_TABLE)
PAIRS.told([("a generator's yields, each run once, are in the order written", "",
             "list(bases())[0]", ("list(bases())[0]", "list(bases())[1]"))],
           module="def bases():\n            yield True\n            yield False")

# an expression of a backend's flag the flow does not fold (an IntEnum built of it, a default
# that swallows its falsy member) is read where the flag reads True and where it reads False
_LSE_BASE = FAMILY + """
    from enum import IntEnum
    class LseBase(IntEnum):
        TWO = 0
        E = 1
    class Manager:
        def __init__(self, lse_base=None):
            lse_base = lse_base or LseBase.E
            self.on_e = lse_base is LseBase.E
        def merge(self, out, lse):
            return combine(out, lse, is_lse_base_on_e=self.on_e)
    class Layer:
        def __init__(self, impl: AttentionImpl):
            self.impl = impl
            self.m = Manager(lse_base=LseBase(self.impl.lse_base_on_e))
        def forward(self, q):
            out, lse = self.impl.forward(q)
            return self.m.merge(out, lse)
    """
PAIRS.case("an IntEnum of a backend's flag whose falsy member a default swallows",
           {"layer.py": _LSE_BASE},
           {"layer.py": ("lse_base = lse_base or LseBase.E",
                         "lse_base = LseBase.E if lse_base is None else lse_base")}, quiet=True)
# a lambda reads a comprehension's variable when it runs: its last value (a default is
# evaluated where the lambda is made); at module level too, where the rest are globals
_LATE = """
    from mylib import combine, decode
    REDUCERS = {name: lambda out, lse: combine(out, lse, is_lse_base_on_e=on_e)
                for name, on_e in (("fi", False), ("fa", True))}
    def step(q):
        out, lse = decode(q, return_lse=True)
        return REDUCERS["fi"](out, lse)
    """
PAIRS.case("a lambda made in a comprehension reads the variable's last value",
           {"layer.py": _LATE}, {"layer.py": ("lambda out, lse:", "lambda out, lse, on_e=on_e:")})
PAIRS.case("a lambda made in a function's comprehension reads the variable's last value",
           {"layer.py": _LATE.replace("    REDUCERS = {", "    def table():\n        return {")
            .replace("REDUCERS[", "table()[")},
           {"layer.py": ("lambda out, lse:", "lambda out, lse, on_e=on_e:")})

# a dataclass's fields copied out (``asdict``, ``astuple``) or into a new object
# (``replace``) of an object built with no arguments: the defaults it holds
_CONF = """import dataclasses
        @dataclasses.dataclass
        class Conf:
            on_e: bool = True
            chunk: int = 0"""
PAIRS.told([("dataclasses.asdict of a defaulted object", "", "dataclasses.asdict(Conf())['on_e']",
             ("Conf())['on_e']", "Conf(on_e=False))['on_e']")),
            ("dataclasses.astuple of a defaulted object", "", "dataclasses.astuple(Conf())[0]",
             ("astuple(Conf())", "astuple(Conf(False))")),
            ("dataclasses.replace keeps the fields it is not given", "",
             "dataclasses.replace(Conf(), chunk=4).on_e", ("Conf(), chunk", "Conf(False), chunk"))],
           module=_CONF)

# an LSE reduced in one base (``torch.logaddexp2`` base 2), called by name or through
# ``functools.reduce`` over a tensor's rows; cut into pieces and stacked back, its base kept
_FOLD = """
    import functools
    import torch
    from mylib import combine, decode_e
    def merged(qs):
        lses = torch.stack([decode_e(q)[1] for q in qs])
        return functools.reduce(torch.logaddexp2, lses.unbind(0))
    def pair(q1, q2):
        return torch.logaddexp2(decode_e(q1)[1], decode_e(q2)[1])
    """
PAIRS.case("functools.reduce of torch.logaddexp2 over a natural-log LSE's rows",
           {"layer.py": _FOLD.partition("    def pair")[0]},
           {"layer.py": ("reduce(torch.logaddexp2", "reduce(torch.logaddexp")})
PAIRS.case("torch.logaddexp2 of two natural-log LSEs",
           {"layer.py": _FOLD.replace("reduce(torch.logaddexp2", "reduce(torch.logaddexp")},
           {"layer.py": ("return torch.logaddexp2", "return torch.logaddexp")})
PAIRS.case("an LSE cut into pieces and concatenated keeps its base", {"layer.py": """
    import torch
    from mylib import combine, decode
    def step(q):
        out, lse = decode(q, return_lse=True)
        head, tail = lse.split(2)
        return combine(out, torch.cat([tail, head]), is_lse_base_on_e=True)
    """}, {"layer.py": ("is_lse_base_on_e=True", "is_lse_base_on_e=False")})

# an expression of an object that may be of any class of a small family (an annotated
# backend), not folded: read once per class; ``not isinstance(impl, TwoImpl)`` is each class's
# declared flag, so it is judged as the flag is
_BY_CLASS = FAMILY + """
    class Layer:
        def __init__(self, impl: AttentionImpl):
            self.impl = impl
            self.on_e = isinstance(self.impl, TwoImpl)
        def forward(self, q):
            out, lse = self.impl.forward(q)
            return combine(out, lse, is_lse_base_on_e=self.on_e)
    """
PAIRS.case("isinstance of an object of any class of a family, read per class",
           {"layer.py": _BY_CLASS},
           {"layer.py": ("= isinstance(self.impl", "= not isinstance(self.impl")}, quiet=True)

# a dataclass whose ``__post_init__`` derives the base, and a subclass's that chains to it
# (``super().__post_init__()``) or replaces it (the field keeps its default)
PAIRS.case("a subclass's __post_init__ chains to its base's, which derives the base", {
    "layer.py": """
    import dataclasses
    from mylib import combine, decode
    def on_e(kind):
        return kind in ("fa", "mla")
    @dataclasses.dataclass
    class Spec:
        kind: str
        on_e: bool = True
        def __post_init__(self):
            self.on_e = on_e(self.kind)
    @dataclasses.dataclass
    class A2aSpec(Spec):
        transport: str = "a2a"
        def __post_init__(self):
            if self.transport not in ("a2a", "fi_a2a"):
                raise ValueError(self.transport)
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=A2aSpec("fi").on_e)
    """}, {"layer.py": ("def __post_init__(self):\n            if",
                        "def __post_init__(self):\n            super().__post_init__()\n"
                        "            if")}, quiet=True)

PAIRS.case("a constructor's defaulted base every construction site states", {"layer.py": """
    from mylib import combine, decode
    class Reducer:
        def __init__(self, group, is_lse_base_on_e: bool = True):
            self.group = group
            self.on_e = is_lse_base_on_e
        def __call__(self, out, lse):
            return combine(out, lse, is_lse_base_on_e=self.on_e)
    class TwoImpl:
        lse_base_on_e = False
        def forward(self, q):
            return decode(q, return_lse=True)
    def step(q, group):
        impl = TwoImpl()
        out, lse = impl.forward(q)
        reduce: Reducer = Reducer(group, not impl.lse_base_on_e)
        if not isinstance(reduce, Reducer):
            raise TypeError(reduce)
        return reduce(out, lse)
    """}, {"layer.py": ("Reducer(group, not impl", "Reducer(group, impl")}, quiet=True)

# a helper that reads the base with ``getattr``'s default, called only by the program's own
# calls: as a staticmethod on the backend (the default never taken), or as a method that binds
# the layer as ``impl`` and the backend as the default (an object: true)
PAIRS.case("getattr's default taken by a helper bound as a method", {"layer.py": """
    from mylib import combine, decode
    class TwoImpl:
        lse_base_on_e = False
        def forward(self, q):
            return decode(q, return_lse=True)
    class Layer:
        def __init__(self):
            self.impl = TwoImpl()
        def _on_e(impl, default: bool = True) -> bool:
            return bool(getattr(impl, "lse_base_on_e", default))
        def forward(self, q):
            out, lse = self.impl.forward(q)
            return combine(out, lse, is_lse_base_on_e=self._on_e(self.impl))
    """}, {"layer.py": ("        def _on_e(impl", "        @staticmethod\n        def _on_e(impl")},
    quiet=True)

# ``NotImplemented`` as a hook's "no answer": one object, true (``or`` never passes it by);
# ``is NotImplemented`` tells it apart
PAIRS.case("a hook's NotImplemented is true and is itself", {"layer.py": FAMILY + """
    class Base(AttentionImpl):
        def dcp_on_e(self):
            return NotImplemented
    class Two(Base):
        can_return_lse_for_decode = True
        lse_base_on_e = False
        def forward(self, q):
            return decode(q, return_lse=True)
    def step(impl: Base, q):
        out, lse = impl.forward(q)
        return combine(out, lse, is_lse_base_on_e=bool(impl.dcp_on_e() or impl.lse_base_on_e))
    """}, {"layer.py": ("bool(impl.dcp_on_e() or impl.lse_base_on_e)",
                        "impl.lse_base_on_e if impl.dcp_on_e() is NotImplemented else "
                        "bool(impl.dcp_on_e())")}, quiet=True)

PAIRS.told([("itertools.chain.from_iterable of a table's values", "", '"fa" in NATURAL',
             ('"fa" in NATURAL', '"fi" in NATURAL'))],
           'import itertools; BY = {"a": ("fa", "fm"), "b": ("ai",)}; '
           'NATURAL = frozenset(itertools.chain.from_iterable(BY.values()))')
PAIRS.told([("itertools.chain(*table.values())", "", '"ai" in NATURAL',
             ('"ai" in NATURAL', '"fi" in NATURAL'))],
           'from itertools import chain; BY = {"a": ("fa",), "b": ("ai",)}; '
           'NATURAL = set(chain(*BY.values()))')

PAIRS.case("a base passed by position from a function of the backend's name", {"layer.py": """
        from mylib import combine, decode
        NATURAL = ("fa", "fm")
        def on_e(name) -> bool:
            return name in NATURAL
        def merge(out, lse, is_lse_base_on_e=False):
            return combine(out, lse, is_lse_base_on_e=is_lse_base_on_e)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, lse, on_e("fa"))
        """}, {"layer.py": ('on_e("fa"))', 'on_e("fi"))')}, quiet=True)

PAIRS.case("an object built by a helper method that passes a base keyword on", {"layer.py": """
        from mylib import combine, decode
        class Manager:
            def __init__(self, is_lse_base_on_e):
                self.on_e = is_lse_base_on_e
            def merge(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=self.on_e)
        class Layer:
            def __init__(self):
                self.manager = self._build()
            def _build(self, is_lse_base_on_e=True):
                return Manager(is_lse_base_on_e=is_lse_base_on_e)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return self.manager.merge(out, lse)
        """}, {"layer.py": ("self._build()", "self._build(is_lse_base_on_e=False)")})

# --- a module's container as its import leaves it --------------------------------------------
_REGISTRY = """
    NATURAL = set()
    BACKENDS = {}
    def register(name, *, natural=False):
        def add(cls):
            BACKENDS[name] = cls
            if natural:
                NATURAL.add(name)
            return cls
        return add
    @register("fi", natural=True)
    class FlashInfer:
        pass
    @register("fa", natural=True)
    class FlashAttn:
        pass
    """
_READS_REGISTRY = """
    from mylib import combine, decode
    from registry import NATURAL
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e="fi" in NATURAL)
    """
PAIRS.case("a set a registry's decorator factory fills as classes are defined",
           {"registry.py": _REGISTRY, "layer.py": _READS_REGISTRY},
           {"registry.py": ('@register("fi", natural=True)', '@register("fi")')}, quiet=True)
PAIRS.case("a set filled by registration calls at the top level, one under an if", {
    "registry.py": """
    import os
    NATURAL = set()
    def mark(name, natural):
        if natural:
            NATURAL.add(name)
    mark("fi", True)
    if os.environ.get("EXTRA"):
        mark("xx", True)
    """, "layer.py": _READS_REGISTRY},
           {"registry.py": ('mark("fi", True)', 'mark("fi", False)')}, quiet=True)

# --- learnt from held-out set 29 (each a semantics of Python, not of the case) -------------
#: an Enum whose members' __init__ takes their tuple value apart; the table maps each label
#: to ``{held}`` of its member
_KERNELS = """
    from enum import Enum
    from mylib import combine, decode
    class Kernel(Enum):
        FA = ("fa", True)
        FI = ("fi", {fi})
        def __init__(self, label, natural):
            self.label = label
            self.natural = natural
    TABLE = {{k.label: k.{held} for k in Kernel}}
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=bool(TABLE.get("fi")))
    """
PAIRS.case("an Enum member holds what its __init__ stores from its tuple value",
           {"layer.py": _KERNELS.format(fi=True, held="natural")},
           {"layer.py": ('FI = ("fi", True)', 'FI = ("fi", False)')}, quiet=True)
PAIRS.case("an Enum member's whole tuple value is true, whatever it holds",
           {"layer.py": _KERNELS.format(fi=False, held="value")},
           {"layer.py": ("k.label: k.value for", "k.label: k.natural for")}, quiet=True)
PAIRS.case("a function a parameter's default names is what a call that leaves it out calls", {
    "layer.py": """
    import functools
    from mylib import decode, reduce_default_e
    class Impl:
        def _merge(self, out, lse, combine=reduce_default_e, **kw):
            return combine(out, lse, **kw)
        def step(self, q):
            out, lse = decode(q, return_lse=True)
            return self._merge(out, lse)
    """}, {"layer.py": ("combine=reduce_default_e,",
                        "combine=functools.partial(reduce_default_e, is_lse_base_on_e=False),")})
PAIRS.case("dataclasses.asdict turns a nested dataclass into a dict, which has no attribute", {
    "layer.py": """
    from dataclasses import asdict, dataclass
    from mylib import combine, decode
    @dataclass(frozen=True)
    class Convention:
        natural: bool = True
    @dataclass(frozen=True)
    class Layout:
        heads: int
        lse: Convention
    def told(layout):
        kwargs = asdict(layout)
        return getattr(kwargs.pop("lse"), "natural", True)
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=told(Layout(8, Convention(False))))
    """}, {"layer.py": ('getattr(kwargs.pop("lse"), "natural", True)', 'layout.lse.natural')},
    quiet=True)
PAIRS.case("__post_init__ converts a field, and dataclasses.replace runs it again", {
    "layer.py": """
    import math
    from dataclasses import dataclass, replace
    from mylib import decode, merge
    @dataclass
    class Partial:
        out: object
        lse: object
        log2: bool = False
        def __post_init__(self):
            if self.log2 and self.lse is not None:
                self.lse = self.lse * math.log(2.0)
    def step(q):
        part = Partial(*decode(q, return_lse=True), log2=True)
        part = replace(part, out=part.out.contiguous())
        return merge(part.out, part.lse)
    """}, {"layer.py": ("self.lse * math.log(2.0)\n",
                        "self.lse * math.log(2.0)\n            self.log2 = False\n")}, quiet=True)
#: a NamedTuple whose subclass's ``__new__`` converts the LSE field (``{more}``: classes below)
_NATURAL_OUT = """
    import math
    from typing import NamedTuple
    from mylib import decode, merge
    class Out(NamedTuple):
        o: object
        lse: object
    class NaturalOut(Out):
        __slots__ = ()
        def __new__(cls, o, lse):
            return super().__new__(cls, o, lse * math.log(2.0))
    {more}
    def step(q):
        o, lse = {made}
        return merge(o, lse)
    """
PAIRS.case("a NamedTuple's __new__ converts, and _make does not run it", {
    "layer.py": _NATURAL_OUT.format(more="", made="NaturalOut._make(decode(q, return_lse=True))")},
    {"layer.py": ("NaturalOut._make(decode(q, return_lse=True))",
                  "NaturalOut(*decode(q, return_lse=True))")}, quiet=True)
PAIRS.case("a class pattern's positional sub-patterns bind the fields __match_args__ names", {
    "layer.py": """
    from dataclasses import dataclass
    from mylib import combine, decode
    @dataclass(frozen=True)
    class Route:
        comm: str
        use_pcp: bool
        natural: bool
    def step(q):
        out, lse = decode(q, return_lse=True)
        match Route("a2a", True, False):
            case Route("a2a", base):
                flag = base
            case Route(_, natural=base):
                flag = base
        return combine(out, lse, is_lse_base_on_e=flag)
    """}, {"layer.py": ('case Route("a2a", base):', 'case Route("a2a", natural=base):')},
    quiet=True)
PAIRS.case("a Flag's members combined by | hold both bits; in tests one, == the whole", {
    "layer.py": """
    from enum import Flag
    from mylib import combine, decode
    class Traits(Flag):
        NONE = 0
        RETURNS_LSE = 1
        NATURAL = 2
    class Impl:
        traits = Traits.RETURNS_LSE | Traits.NATURAL
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=Traits.NATURAL in Impl.traits)
    """}, {"layer.py": ("Traits.NATURAL in Impl.traits", "Impl.traits == Traits.NATURAL")},
    quiet=True)
PAIRS.case("a frozenset subclass's own __contains__ runs; its | is a plain frozenset's", {
    "layer.py": """
    from mylib import combine, decode
    class Names(frozenset):
        def __contains__(self, name):
            return isinstance(name, str) and (frozenset.__contains__(self, name) or
                                              frozenset.__contains__(self, name.removesuffix("_x")))
    CUDA = Names({"fa"})
    ROCM = Names({"aiter"})
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e="fa_x" in Names(CUDA | ROCM))
    """}, {"layer.py": ('"fa_x" in Names(CUDA | ROCM)', '"fa_x" in (CUDA | ROCM)')}, quiet=True)
PAIRS.case("a module-level match binds the name its matching case assigns", {"layer.py": """
    from mylib import combine, decode
    KERNEL = "fi"
    match KERNEL:
        case "fa" | "flashmla":
            NATURAL = True
        case str(name) if name.startswith("f"):
            NATURAL = True
        case _:
            NATURAL = False
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=NATURAL)
    """}, {"layer.py": ('if name.startswith("f")', 'if name.startswith("x")')}, quiet=True)
PAIRS.case("a constant matches no sequence pattern, and a bool is an int", {"layer.py": """
    from mylib import combine, decode
    def told(kernel):
        match kernel:
            case [first, *_]:
                return False
            case int():
                return True
            case _:
                return False
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=told(True))
    """}, {"layer.py": ("told(True)", "told(2.5)")}, quiet=True)
PAIRS.case("a __new__ that returns super().__new__(cls) hands __init__ the object built", {
    "layer.py": """
    from mylib import combine, decode
    class Impl:
        def __new__(cls, *args, **kwargs):
            return super().__new__(cls)
        def __init__(self, natural):
            self.natural = natural
    def step(q):
        impl = Impl(True)
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=impl.natural)
    """}, {"layer.py": ("Impl(True)", "Impl(False)")}, quiet=True)
PAIRS.case("__init__ runs after a __new__ that stores on the object it makes", {"layer.py": """
    from mylib import combine, decode
    class Cfg:
        def __new__(cls, natural):
            obj = super().__new__(cls)
            obj.natural = not natural
            return obj
        def __init__(self, natural):
            self.natural = natural
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=Cfg(True).natural)
    """}, {"layer.py": ("Cfg(True)", "Cfg(False)")})
PAIRS.case("a NamedTuple subclass's __new__ reaches its base's own __new__, which converts", {
    "layer.py": _NATURAL_OUT.format(more="""class Tagged(NaturalOut):
        __slots__ = ()
        def __new__(cls, o, lse):
            return super().__new__(cls, o, lse)""",
                                    made="Tagged._make(decode(q, return_lse=True))")},
    {"layer.py": ("Tagged._make(decode(q, return_lse=True))",
                  "Tagged(*decode(q, return_lse=True))")}, quiet=True)
PAIRS.case("a field __post_init__ converts may be set again after the object is built", {
    "layer.py": """
    import math
    from dataclasses import dataclass
    from mylib import decode, merge
    @dataclass
    class Partial:
        out: object
        lse: object
        def __post_init__(self):
            self.lse = self.lse * math.log(2.0)
    def reset(p, lse):
        p.lse = lse
    def step(q):
        out, lse = decode(q, return_lse=True)
        part = Partial(out, lse)
        reset(part, lse)
        return merge(part.out, part.lse)
    """}, {"layer.py": ("        reset(part, lse)\n", "")})
PAIRS.case("a sequence pattern matches a tuple, never a dict", {"layer.py": """
    from mylib import combine, decode
    def step(q):
        out, lse = decode(q, return_lse=True)
        told = False
        match (True, 1):
            case [flag, _]:
                told = flag
        return combine(out, lse, is_lse_base_on_e=told)
    """}, {"layer.py": ("match (True, 1):", "match {0: True, 1: 1}:")})
PAIRS.case("a dict's view matches no sequence pattern", {"layer.py": """
    from mylib import combine, decode
    def step(q):
        out, lse = decode(q, return_lse=True)
        told = True
        match {"a": 1, "b": 2}.keys():
            case [a, b]:
                told = False
        return combine(out, lse, is_lse_base_on_e=told)
    """}, {"layer.py": ("told = True", "told = False")}, quiet=True)
PAIRS.case("an Enum member whose value is a list gets the list as one argument", {"layer.py": """
    from enum import Enum
    from mylib import combine, decode
    class Kernel(Enum):
        FI = [False, True]
        def __init__(self, parts, natural=True):
            self.natural = natural
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=Kernel.FI.natural)
    """}, {"layer.py": ("natural=True):", "natural=False):")}, quiet=True)
PAIRS.case("sequence and mapping patterns bind the items they match", {"layer.py": """
    from mylib import combine, decode
    def step(q):
        out, lse = decode(q, return_lse=True)
        match ("fi", {"natural": True}):
            case (name, {"natural": flag}):
                told = flag
            case [_, *rest]:
                told = False
        return combine(out, lse, is_lse_base_on_e=told)
    """}, {"layer.py": ('{"natural": True}', '{"natural": False}')}, quiet=True)


# --- a combine's own arithmetic, read in the units of its LSEs ----------------------------------
#: ``ops.told_reduce`` (a record: base e where ``is_lse_base_on_e``, else 2, default 2) is called
#: by ``step`` with mylib.decode's base-2 LSE; its body is read once per base its record selects
TOLD_REDUCE_CALL = """
        from mylib import decode
        from ops import told_reduce
        def step(q):
            out, lse = decode(q, return_lse=True)
            return told_reduce(out, lse, is_lse_base_on_e=False)
        """
PAIRS.case("torch.where's masked LSE keeps its base into a hand-written weight", {
    "layer.py": TOLD_REDUCE_CALL, "ops.py": """
        import torch
        def told_reduce(out, lse, is_lse_base_on_e=False):
            lse = torch.where(torch.isinf(lse) & (lse > 0), torch.full_like(lse, float("-inf")), lse)
            m = torch.maximum(lse, lse.flip(0))
            w = torch.exp2(lse - m) if is_lse_base_on_e else torch.exp2(lse - m)
            return out * w
        """}, {"ops.py": ("torch.exp2(lse - m) if", "torch.exp(lse - m) if")})
PAIRS.case("a Triton kernel's where, maximum and exp2 read its LSE in the launch's base", {
    "layer.py": TOLD_REDUCE_CALL, "ops.py": """
        import triton
        import triton.language as tl
        @triton.jit
        def _reduce_kernel(out_ptr, lse_ptr, N: tl.constexpr, IS_E: tl.constexpr):
            lse = tl.load(lse_ptr + tl.arange(0, N))
            lse = tl.where(lse != lse, float("-inf"), lse)
            m = tl.max(lse, axis=0)
            m = tl.maximum(m, -1e30)
            w = tl.exp2(lse - m)
            tl.store(out_ptr + tl.arange(0, N), w)
        def told_reduce(out, lse, is_lse_base_on_e=False):
            _reduce_kernel[(1,)](out, lse, N=8, IS_E=is_lse_base_on_e)
            return out
        """}, {"ops.py": ("    w = tl.exp2(lse - m)\n",
                          "    w = tl.exp(lse - m) if IS_E else tl.exp2(lse - m)\n")})
PAIRS.case("a difference of a converted LSE and one reloaded unconverted is in neither base", {
    "layer.py": TOLD_REDUCE_CALL, "ops.py": """
        import triton
        import triton.language as tl
        LOG2E = tl.constexpr(1.4426950408889634)
        @triton.jit
        def _reduce_kernel(out_ptr, lse_ptr, r, N: tl.constexpr, IS_E: tl.constexpr):
            lse = tl.load(lse_ptr + tl.arange(0, N))
            if IS_E:
                lse = lse * LOG2E
            final = tl.log2(tl.sum(tl.exp2(lse - tl.max(lse, axis=0)), axis=0)) + tl.max(lse, axis=0)
            local = tl.load(lse_ptr + r)
            tl.store(out_ptr, tl.exp2(local - final))
        def told_reduce(out, lse, is_lse_base_on_e=False):
            _reduce_kernel[(1,)](out, lse, 0, N=8, IS_E=is_lse_base_on_e)
            return out
        """}, {"ops.py": ("local = tl.load(lse_ptr + r)\n",
                          "local = tl.load(lse_ptr + r)\n            if IS_E:\n"
                          "                local = local * LOG2E\n")})
PAIRS.case("vLLM's re-export of Triton reads a kernel's loads, stores and LOGE2", {
    "vllm/__init__.py": "", "vllm/layer.py": """
        from mylib import decode, merge
        from vllm.ops import to_natural
        def step(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, to_natural(lse))
        """, "vllm/ops.py": """
        import torch
        from vllm.triton_utils import LOGE2, tl, triton
        @triton.jit
        def _scale_kernel(src_ptr, dst_ptr, N: tl.constexpr):
            x = tl.load(src_ptr + tl.arange(0, N))
            tl.store(dst_ptr + tl.arange(0, N), x)
        def to_natural(lse):
            out = torch.empty_like(lse)
            _scale_kernel[(1,)](lse, out, N=8)
            return out
        """}, {"vllm/ops.py": ("tl.arange(0, N), x)", "tl.arange(0, N), x * LOGE2)")})
PAIRS.case("a producer's body computes its LSE in the base its record says", {"ops.py": """
        import torch
        def hand_decode(q, k, out, lse):
            s = q @ k.T
            m = s.amax(-1)
            w = torch.exp2(s - m[:, None])
            out.copy_(w @ k)
            lse.copy_(m + torch.log2(w.sum(-1)))
        """}, {"ops.py": ("lse.copy_(m + torch.log2(w.sum(-1)))",
                          "lse.copy_((m + torch.log2(w.sum(-1))) * 0.6931471805599453)")})
PAIRS.case("a sum of a log2 and a natural log is in neither base", {"ops.py": """
        import torch
        def hand_decode(q, k, out, lse):
            part = torch.log2(q.sum(-1))
            rest = torch.log(k.sum(-1))
            lse.copy_(part + rest)
        """}, {"ops.py": ("lse.copy_(part + rest)",
                          "lse.copy_(part * 0.6931471805599453 + rest)")})
PAIRS.case("a NewType is no conversion: calling it returns its argument", {"layer.py": """
        from typing import NewType
        import torch
        from mylib import decode, merge
        NaturalLse = NewType("NaturalLse", torch.Tensor)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, NaturalLse(lse))
        """}, {"layer.py": ("NaturalLse(lse)", f"NaturalLse(lse * {LN2})")})


@pytest.mark.parametrize("name", PAIRS.names())
def test_bug_is_an_error_and_fix_is_clean(name: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    PAIRS.check(name, tmp_path, capsys)


def test_an_init_store_is_not_read_again_at_class_level(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """What ``__init__`` stores on ``self`` is read in ``__init__``'s frame, where its locals
    are known; read a second time as if the class body had said it (no locals there), it was
    an unread base beside the right one: a warning on a correct program."""
    fixed = PAIRS.fixed("an __init__ store is read in __init__'s frame, its locals included")
    found = lint_json(tmp_path, capsys, "fix", fixed)
    assert [f for f in found if f["severity"] != "note"] == []


def test_a_key_function_not_read_leaves_the_order_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``sorted(t, key=f)`` with a key function the lint does not see is an order not known:
    never the order of the elements themselves (``'aa'`` before ``'b'``), which would tell
    the combine True here where Python (with ``f=len``) tells it False."""
    found = lint_json(tmp_path, capsys, "key", told_files(
        "", "sorted(('b', 'aa'), key=rank)[0] == 'aa'", "from elsewhere import rank"))
    assert [f["code"] for f in found if f["severity"] == "error"] == []
    assert any(f["code"] == "AC035" for f in found)


def test_logs_chosen_by_a_test_the_lint_cannot_decide_are_of_no_base(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``lse = tl.log(s) if IS_E else tl.log2(s)`` then ``tl.exp(x) if IS_E else tl.exp2(x)``
    of it, the flag unknown (``ops.hand_decode``, a producer record's function, read on its own
    with its flag a parameter): each side reads its own base, so no error; the same kernel with
    the flag's sides swapped in the weights is one once a caller decides the flag
    (``is_lse_base_on_e=True`` through the record of ``told_reduce``)."""
    kernel = """
        import triton
        import triton.language as tl
        @triton.jit
        def _merge_kernel(out_ptr, s_ptr, lse_ptr, IS_E: tl.constexpr):
            s = tl.load(s_ptr)
            if IS_E:
                lse = tl.log(s)
            else:
                lse = tl.log2(s)
            m = tl.load(lse_ptr)
            x = lse - m
            w = tl.exp(x) if IS_E else tl.exp2(x)
            tl.store(out_ptr, w)
            tl.store(lse_ptr, lse)
        """
    alone = kernel + """
        def hand_decode(q, k, out, lse, is_e):
            _merge_kernel[(1,)](out, q, lse, IS_E=is_e)
        """
    found = lint_json(tmp_path, capsys, "alone", {"ops.py": alone})
    assert not [f for f in found if f["severity"] == "error"], found
    swapped = kernel.replace("tl.exp(x) if IS_E else tl.exp2(x)", "tl.exp2(x) if IS_E else tl.exp(x)")
    called = swapped + """
        def told_reduce(out, lse, is_lse_base_on_e=False):
            _merge_kernel[(1,)](out, out, lse, IS_E=is_lse_base_on_e)
            return out
        """
    found = lint_json(tmp_path, capsys, "called", {"ops.py": called, "layer.py": TOLD_REDUCE_CALL})
    assert [f for f in found if f["severity"] == "error" and f["code"] == "AC023"], found


def test_groupby_pairs_taken_at_once_hold_spent_groups(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pairs kept past their step (a list of them) hold groups the shared iterator has moved
    past: each is empty by the time it is read. A group's elements are not read at all (never the run it began
    with, which would tell the combine True here, where Python tells it False)."""
    found = lint_json(tmp_path, capsys, "spent", told_files(
        "gs = [(k, g) for k, g in itertools.groupby((1, 1, 2))]", "len(list(gs[0][1])) == 2",
        "import itertools"))
    assert [f["code"] for f in found if f["severity"] == "error"] == []


def test_an_omitted_base_every_lse_confirms_is_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A combine call that leaves its base keyword to the default, where every LSE the flow
    follows to it is of that base (converted first here): the producers confirm the default,
    so ``AC022`` is a note there; where one LSE of the other base reaches it, a warning (and
    the edge an error)."""
    found = lint_json(tmp_path, capsys, "omitted", {"layer.py": f"""
        from mylib import decode, reduce_default_e
        def converted(q):
            out, lse = decode(q, return_lse=True)
            return reduce_default_e(out, lse * {LN2})
        def raw(q):
            out, lse = decode(q, return_lse=True)
            return reduce_default_e(out, lse)
        """})
    omitted = {(f["line"], f["severity"]) for f in found if f["code"] == "AC022"}
    assert omitted == {(5, "note"), (8, "warning")}, found
    assert [f["line"] for f in found if f["code"] == "AC023"] == [8]


@pytest.mark.parametrize(("cls", "member", "truth"), [
    ("IntEnum", "TWO", False), ("IntEnum", "E", True), ("Enum", "TWO", True),
    ("IntFlag", "TWO", False)])
def test_an_enum_members_truth_is_pythons(cls: str, member: str, truth: bool, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A member of an Enum that mixes in a data type (or a Flag) is as true as its value; a
    plain Enum's member is always true: ``bool(M)`` tells the combine that bool."""
    module = f"import enum\n        class B(enum.{cls}):\n            TWO = 0\n            E = 1"
    found = lint_json(tmp_path, capsys, "truth", told_files("", f"bool(B.{member})", module))
    errors = [f["code"] for f in found if f["severity"] == "error"]
    assert errors == ([] if truth is False else ["AC023"]), found


def test_a_partials_keyword_every_call_replaces_is_no_literal_site(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A base a ``partial`` binds that every call of it gives itself never reaches the
    combine (the call's keyword replaces the partial's): no ``AC003`` for the bound literal,
    whose LSE is never there to confirm it. A partial called without the keyword, or handed
    to code the lint does not follow, keeps it."""
    wrapper = """
        from functools import partial
        from mylib import combine, decode, decode_e
        class Wrapper:
            def __init__(self):
                self._combine = partial(combine, is_lse_base_on_e=False)
            def run(self, q, natural):
                out, lse = decode_e(q) if natural else decode(q, return_lse=True)
                return self._combine(out, lse, is_lse_base_on_e=natural)
        """
    found = lint_json(tmp_path, capsys, "replaced", {"layer.py": wrapper})
    assert [f for f in found if f["severity"] != "note"] == [], found
    kept = lint_json(tmp_path, capsys, "kept", {"layer.py": wrapper.replace(
        "return self._combine(out, lse, is_lse_base_on_e=natural)",
        "return self._combine(out, lse)")})
    assert any(f["code"] == "AC023" and f["line"] == 6 for f in kept), kept
    # handed to code the lint does not follow, the partial may be called there without it
    handed = lint_json(tmp_path, capsys, "handed", {"layer.py": wrapper.replace(
        "from functools import partial", "from functools import partial\n        import somelib")
        + "    def run_ext(self, q):\n                out, lse = decode_e(q)\n"
        "                return somelib.apply(self._combine, out, lse)\n"})
    assert any(f["code"] == "AC003" and f["severity"] == "warning" for f in handed), handed


_FI_PLAIN = _REGISTRY.replace('@register("fi", natural=True)', '@register("fi")')


@pytest.mark.parametrize(("why", "registry", "more"), [
    ("a call in a function, run whenever it is", _FI_PLAIN + """
    def late(cls):
        register("fi", natural=True)(cls)
    """, {}),
    ("another module's decorator: whether it is imported is not known", _FI_PLAIN, {
        "plugin.py": """
        from registry import register
        @register("fi", natural=True)
        class Mine:
            pass
        """}),
    ("the decorator kept, to apply later", _FI_PLAIN + """
    LATER = register("fi", natural=True)
    """, {}),
    ("a bare decorator's wrapper, run whenever the function is called", """
    NATURAL = set()
    def natural(fn):
        def wrapper(*args):
            NATURAL.add("fi")
            return fn(*args)
        return wrapper
    @natural
    def warm():
        pass
    """, {}),
    ("a method that changes it", _FI_PLAIN + """
    class Late:
        def add(self):
            NATURAL.add("fi")
    """, {}),
    # (found by review: each would read the import's end state where Python differs)
    ("a helper handed the set", _FI_PLAIN + """
    def _add(s, n):
        s.add(n)
    def late():
        _add(NATURAL, "fi")
    """, {}),
    ("an alias changed", _FI_PLAIN + """
    def late():
        s = NATURAL
        s.add("fi")
    """, {}),
    ("a set method the index did not know", _FI_PLAIN + """
    def late():
        NATURAL.symmetric_difference_update({"fi"})
    """, {}),
    ("a registration in a loop, which reads what the last pass added", """
    NATURAL = set()
    def mark():
        if "a" in NATURAL:
            NATURAL.add("fi")
        NATURAL.add("a")
    for _ in range(2):
        mark()
    """, {}),
    ("a registration that raises, caught at the top level", """
    NATURAL = set()
    def mark(n):
        NATURAL.add(n)
        raise ValueError(n)
    try:
        mark("fi")
    except ValueError:
        pass
    """, {}),
    ("a change in a finally, after the return", """
    NATURAL = set()
    def mark(n):
        try:
            return n
        finally:
            NATURAL.add(n)
    mark("fi")
    """, {}),
    ("a flag the registration reads, bound again after it", """
    NATURAL = set()
    FLAG = True
    def mark(n):
        if not FLAG:
            NATURAL.add(n)
    mark("fi")
    FLAG = False
    """, {}),
    ("a global looked up by text", _FI_PLAIN + """
    def late():
        globals()["NATURAL"].add("fi")
    """, {}),
    ("a class body that registers before its decorator applies", """
    NATURAL = set()
    def mark(n):
        if "x" in NATURAL:
            NATURAL.add(n)
    def register(name):
        def add(cls):
            mark(name)
            return cls
        return add
    @register("fi")
    class FI:
        mark("x")
    """, {}),
    ("a generator, whose body the call does not run", """
    NATURAL = {"fi"}
    def unmark(n):
        NATURAL.discard(n)
        yield n
    unmark("fi")
    """, {}),
])


def test_a_container_changed_outside_import_time_is_not_read(
        why: str, registry: str, more: dict[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The registry's set says base 2 for "fi" as the module's own imports leave it, but a
    function may add "fi" at another time (or in a module that may be imported or not): what
    it holds when the combine runs is not known, so the base is not read (a warning), never
    taken as the import left it."""
    found = lint_json(tmp_path, capsys, "late", {"registry.py": registry,
                                                 "layer.py": _READS_REGISTRY, **more})
    assert any(f["code"] == "AC035" for f in found), (why, found)


def test_a_module_level_read_between_registrations_is_not_the_imports_end(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Python runs the top level in order: a name bound between two registrations holds the
    set as the first left it, never as the whole import does."""
    found = lint_json(tmp_path, capsys, "between", {"registry.py": """
        NATURAL = set()
        def mark(name):
            NATURAL.add(name)
        mark("fa")
        FI_ON_E = "fi" in NATURAL
        mark("fi")
        """, "layer.py": """
        from mylib import combine, decode
        from registry import FI_ON_E
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=not FI_ON_E)
        """})
    assert any(f["code"] == "AC035" for f in found), found


def test_a_set_grown_past_the_union_bound_is_not_the_empty_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``Seq(None, complete=True)`` is the empty set; a join too large to keep must not read
    as one (``"b0" in`` a set of 30 strings is True, never False)."""
    found = lint_json(tmp_path, capsys, "big", told_files(
        'names = set()\n            names.update(["b%d" % i for i in range(30)])',
        '"b0" in names'))
    assert any(f["code"] == "AC035" for f in found), found
