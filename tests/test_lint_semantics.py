"""The lint's interpreter follows Python's data flow in general (issue 37 item 1): argument
binding, instances and classes, closures. Each case is a bug/fix pair (``fixtures/semantic_pairs``);
the containers and the values Python computes have files of their own."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from attn_contracts.lint.folding import compiled
from attn_contracts.lint.folding import fold_regex
from attn_contracts.lint.values import Lit
from fixtures.semantic_pairs import IMPL_BASE
from fixtures.semantic_pairs import LN2
from fixtures.semantic_pairs import Pairs
from fixtures.semantic_pairs import lint_json

PAIRS = Pairs()

# --- argument binding by signature --------------------------------------------------------
PAIRS.case("positional base to a combine of the program", {
    "mylib.py": """
        def combine(out, lse, group=None, ctx=None, return_lse=False, is_lse_base_on_e=True):
            return out
        def decode(q, return_lse=False, lse=None):
            return q, q
        """,
    "layer.py": """
        from mylib import combine, decode
        def step(q, g):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, g, None, False, True)
        """}, {"layer.py": ("None, False, True)", "None, False, False)")})
PAIRS.case("positional base to a combine whose signature is not linted", {"layer.py": """
        from mylib import decode, reduce_default_e
        def step(q, g):
            out, lse = decode(q, return_lse=True)
            return reduce_default_e(out, lse, g)
        """}, {"layer.py": ("lse, g)", "lse, g, None, False, False)")})
PAIRS.case("a conversion held as a methodcaller class attribute, read through self", {
    "layer.py": """
        import math
        import operator
        from mylib import combine, decode
        class Impl:
            _to_ln = operator.methodcaller("div", math.log(2.0))
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, self._to_ln(lse), is_lse_base_on_e=True)
        """}, {"layer.py": ('methodcaller("div"', 'methodcaller("mul"')})
PAIRS.case("getattr of a flag an object never has is its default (a manager built from its layer)",
    {"layer.py": """
        import torch
        from mylib import combine, decode
        class Mgr:
            def __init__(self, flag):
                self.flag = flag
            @classmethod
            def for_layer(cls, layer):
                return cls(getattr(layer, "lse_base_on_e", True))
            def merge(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=self.flag)
        class Layer(torch.nn.Module):
            def __init__(self):
                self.mgr = Mgr.for_layer(self)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return self.mgr.merge(out, lse)
        """}, {"layer.py": ("class Layer(torch.nn.Module):\n",
                            "class Layer(torch.nn.Module):\n            lse_base_on_e = False\n")})
PAIRS.case("base forwarded through **kwargs", {"layer.py": """
        from mylib import combine, decode
        def reduce(out, lse, **kwargs):
            return combine(out, lse, **kwargs)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse, is_lse_base_on_e=True)
        """}, {"layer.py": ("is_lse_base_on_e=True)", "is_lse_base_on_e=False)")})
PAIRS.case("LSE forwarded through *args", {"layer.py": """
        from mylib import merge, decode
        def reduce(*args):
            return merge(*args)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse)
        """}, {"layer.py": ("reduce(out, lse)", f"reduce(out, lse * {LN2})")})
PAIRS.case("base as a default of a helper", {"layer.py": """
        from mylib import combine, decode
        def reduce(out, lse, base_e=True):
            return combine(out, lse, is_lse_base_on_e=base_e)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse)
        """}, {"layer.py": ("reduce(out, lse)", "reduce(out, lse, False)")})
PAIRS.case("base returned by a module-level function", {"layer.py": """
        from mylib import combine, decode
        def natural():
            return True
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=natural())
        """}, {"layer.py": ("return True", "return False")})
PAIRS.case("base returned by a method, through a local name", {"layer.py": """
        from mylib import combine, decode
        class Settings:
            def log_base_is_e(self):
                return True
        def step(q, s: Settings):
            out, lse = decode(q, return_lse=True)
            is_lse_base_on_e = s.log_base_is_e()
            return combine(out, lse, is_lse_base_on_e=is_lse_base_on_e)
        """}, {"layer.py": ("return True", "return False")})
PAIRS.case("base returned through a chain of helpers in another module", {"cfg.py": """
        def _pick(kind):
            return kind != "log2"
        def base_for(kind="log2"):
            return _pick(kind)
        """, "layer.py": """
        from cfg import base_for
        from mylib import combine, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=not base_for())
        """}, {"layer.py": ("=not base_for()", "=base_for()")})
PAIRS.case("base as a membership test of a literal set", {"layer.py": """
        from mylib import combine, decode
        NATURAL = ("fa3", "triton")
        def natural(kind):
            return kind in NATURAL
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=natural("triton"))
        """}, {"layer.py": ('natural("triton")', 'natural("flashinfer")')})
PAIRS.case("base keyword dropped by a comprehension filtering **kwargs", {"layer.py": """
        from mylib import reduce_default_e, decode
        ALLOWED = ("group",)
        def reduce(out, lse, **options):
            passed = {name: val for name, val in options.items() if name in ALLOWED}
            return reduce_default_e(out, lse, **passed)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse, group=None, is_lse_base_on_e=False)
        """}, {"layer.py": ('ALLOWED = ("group",)', 'ALLOWED = ("group", "is_lse_base_on_e")')})
PAIRS.case("a table keyed by classes, read with the class of an object and a default", {
    "layer.py": """
        from mylib import combine, decode
        class Paged: pass
        class Ragged: pass
        NATURAL_BY_KIND = {Ragged: False}
        def step(q, ragged):
            runner = Ragged() if ragged else Paged()
            out, lse = decode(q, return_lse=True)
            natural = NATURAL_BY_KIND.get(type(runner), True)
            return combine(out, lse, is_lse_base_on_e=natural)
        """}, {"layer.py": ("NATURAL_BY_KIND = {Ragged: False}",
                            "NATURAL_BY_KIND = {Ragged: False, Paged: False}")})
PAIRS.case("a table keyed by classes, subscripted with the class of an object", {"layer.py": """
        from mylib import combine, decode
        class Paged: pass
        NATURAL_BY_KIND = {Paged: True}
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=NATURAL_BY_KIND[type(Paged())])
        """}, {"layer.py": ("{Paged: True}", "{Paged: False}")})
PAIRS.case("partialmethod", {"layer.py": """
        from functools import partialmethod
        from mylib import combine, decode
        class Layer:
            def _reduce(self, out, lse, base_e):
                return combine(out, lse, is_lse_base_on_e=base_e)
            reduce = partialmethod(_reduce, base_e=True)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return self.reduce(out, lse)
        """}, {"layer.py": ("base_e=True)", "base_e=False)")})

# --- instances and classes -----------------------------------------------------------------
PAIRS.case("instance attribute set in __init__ over the class attribute", {"layer.py": """
        from mylib import combine, decode
        class Layer:
            base_e = False
            def __init__(self):
                self.base_e = True
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.base_e)
        """}, {"layer.py": ("self.base_e = True", "self.base_e = False")})
PAIRS.case("a property", {"layer.py": """
        from mylib import combine, decode
        class Layer:
            @property
            def base_e(self):
                return True
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.base_e)
        """}, {"layer.py": ("return True", "return False")})
PAIRS.case("dataclass field given by the constructor over its default", {"layer.py": """
        from dataclasses import dataclass
        from mylib import combine, decode
        @dataclass
        class Cfg:
            base_e: bool = False
        def step(q):
            cfg = Cfg(base_e=True)
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=cfg.base_e)
        """}, {"layer.py": ("Cfg(base_e=True)", "Cfg(base_e=False)")})
PAIRS.case("dataclass field given by position", {"layer.py": """
        from dataclasses import dataclass
        from mylib import combine, decode
        @dataclass
        class Cfg:
            name: str
            base_e: bool = True
        def step(q):
            cfg = Cfg("fi")
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=cfg.base_e)
        """}, {"layer.py": ('Cfg("fi")', 'Cfg("fi", False)')})
PAIRS.case("NamedTuple field", {"layer.py": """
        from typing import NamedTuple
        from mylib import combine, decode
        class Cfg(NamedTuple):
            base_e: bool = False
        def step(q):
            cfg = Cfg(True)
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=cfg.base_e)
        """}, {"layer.py": ("Cfg(True)", "Cfg(False)")})
PAIRS.case("Enum value", {"layer.py": """
        import enum
        from mylib import combine, decode
        class Base(enum.Enum):
            E = True
            TWO = False
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=Base.E.value)
        """}, {"layer.py": ("Base.E.value", "Base.TWO.value")})

PAIRS.case("NamedTuple built in __init__, read in a subclass with its own __init__", {"layer.py": """
        from typing import Any, NamedTuple
        from mylib import combine, decode
        class _Combine(NamedTuple):
            fn: Any
            base_e: bool = True
        class Layer:
            def __init__(self):
                self.comb = _Combine(combine)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return self.comb.fn(out, lse, is_lse_base_on_e=self.comb.base_e)
        class Wide(Layer):
            def __init__(self):
                super().__init__()
                self.wide = True
            def step(self, q):
                return super().step(q)
        """}, {"layer.py": ("_Combine(combine)", "_Combine(combine, False)")})
PAIRS.case("dataclass built at module level with the base by keyword over its default", {
    "layer.py": """
        from dataclasses import dataclass
        from mylib import combine, decode
        @dataclass(frozen=True)
        class Spec:
            name: str
            base_e: bool = False
        SPEC = Spec("fa", base_e=True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=SPEC.base_e)
        """}, {"layer.py": ("base_e=True)", "base_e=False)")})
PAIRS.case("a backend's base declared by a property", {"base.py": IMPL_BASE, "impl.py": """
        from base import AttentionImpl
        from mylib import decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            @property
            def lse_base_on_e(self):
                return True
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("return True", "return False")})
PAIRS.case("a property of several statements is run on the object it is read on", {
    "base.py": IMPL_BASE, "impl.py": """
        from base import AttentionImpl
        from mylib import decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            @property
            def lse_base_on_e(self):
                from sub import Natural
                return issubclass(Natural, type(self))
            def forward(self, q):
                return decode(q, return_lse=True)
        """, "sub.py": """
        from impl import Impl
        from mylib import decode_e
        class Natural(Impl):
            def forward(self, q):
                return decode_e(q)
        """}, {"impl.py": ("issubclass(Natural, type(self))", "issubclass(type(self), Natural)")})
PAIRS.case("super(type(self), self) looks past the class of the object, not the method's", {
    "base.py": IMPL_BASE, "impl.py": f"""
        from base import AttentionImpl
        from mylib import decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = False
            def forward(self, q):
                out, lse = decode(q, return_lse=True)
                if self.lse_base_on_e != super(type(self), self).lse_base_on_e:
                    lse = lse * {LN2}
                return out, lse
        """, "sub.py": """
        from impl import Impl
        class Natural(Impl):
            lse_base_on_e = True
        """}, {"impl.py": ("super(type(self), self).lse_base_on_e", "Impl.lse_base_on_e")})
#: a backend that converts its helper's base-2 LSE, and a subclass whose own decode is base e
#: and whose ``forward`` is ``{forward}`` (the pair below, and the computed-name test)
TWO_DECODES = f"""
        from base import AttentionImpl
        from mylib import decode, decode_e
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = True
            def forward(self, q):
                return self._decode_dcp(q)
            def _decode_dcp(self, q):
                out, lse = self._kernel(q)
                return out, lse * {LN2}
            def _kernel(self, q):
                return decode(q, return_lse=True)
        class Natural(Impl):
            {{forward}}
            def _kernel(self, q):
                return decode_e(q)
        """
PAIRS.case("a method runs on the classes that inherit it, a private one on its callers", {
    "base.py": IMPL_BASE, "impl.py": TWO_DECODES.format(
        forward="def forward(self, q):\n                return self._decode_dcp(q)")},
    {"impl.py": ("return self._decode_dcp(q)\n            def _kernel(self, q):\n"
                 "                return decode_e",
                 "return self._kernel(q)\n            def _kernel(self, q):\n"
                 "                return decode_e")})
PAIRS.case("a function object is equal to no literal and keys no entry of a literal table", {
    "layer.py": """
        from mylib import combine, decode
        class Backend:
            @staticmethod
            def get_name():
                return "FLASHINFER"
        BASE_ON_E = {"FLASHINFER": True}
        def step(q):
            out, lse = decode(q, return_lse=True)
            on_e = BASE_ON_E.get(Backend.get_name(), False)
            return combine(out, lse, is_lse_base_on_e=on_e or Backend.get_name == "FLASHINFER")
        """}, {"layer.py": ("get(Backend.get_name(), False)", "get(Backend.get_name, False)")})
PAIRS.case("a set of a table's items holds pairs, which equal no name", {"layer.py": """
        from mylib import combine, decode
        BASE_ON_E = {"flashinfer": False, "flash_attn": True}
        BASE_2 = frozenset(entry for entry in BASE_ON_E.items() if not entry[1])
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e="flashinfer" not in BASE_2)
        """}, {"layer.py": ("frozenset(entry for entry in BASE_ON_E.items() if not entry[1])",
                            "frozenset(name for name, on_e in BASE_ON_E.items() if not on_e)")})
PAIRS.case("a combine whose record's base keyword its definition no longer takes is read", {
    "mylib.py": """
        from ops import told_reduce
        def decode(q, return_lse=False):
            return q, q
        def combine(out, lse, lse_base="e"):
            return told_reduce(out, lse, is_lse_base_on_e=lse_base == "e")
        """, "layer.py": """
        from mylib import combine, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, lse_base="e")
        """, "ops.py": """
        def told_reduce(out, lse, is_lse_base_on_e=False):
            return out
        """}, {"layer.py": ('lse_base="e")\n', 'lse_base="2")\n')})
PAIRS.case("dataclasses.field() outside a dataclass is a Field object, which is true", {
    "base.py": IMPL_BASE, "impl.py": """
        from dataclasses import field
        from base import AttentionImpl
        from mylib import decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e: bool = field(default=False)
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("field(default=False)", "False")})
PAIRS.case("a dataclass replaces a field() on the class with its default", {
    "base.py": IMPL_BASE, "impl.py": """
        from dataclasses import dataclass, field
        from base import AttentionImpl
        from mylib import decode
        @dataclass
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e: bool = field(default=True)
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("field(default=True)", "field(default=False)")})
PAIRS.case("@dataclass replaces field() on the class whatever __init__ it writes", {
    "base.py": IMPL_BASE.replace("lse_base_on_e = True", "lse_base_on_e = True\n"
                                 "        def __init__(self):\n"
                                 "            pass"), "impl.py": """
        from dataclasses import dataclass, field
        from base import AttentionImpl
        from mylib import decode
        @dataclass(init=False)
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e: bool = field(default=True)
            def __init__(self):
                pass
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("field(default=True)", "field(default=False)")})
PAIRS.told([("a dataclass's field() read through the class is its default", "",
             "bool(Settings.natural)", ("field(default=True)", "field(default=False)"))],
           module="from dataclasses import dataclass, field\n        @dataclass\n"
                  "        class Settings:\n            natural: bool = field(default=True)")
PAIRS.case("a backend's base declared by an Enum member's value", {"base.py": IMPL_BASE, "impl.py": """
        import enum
        from base import AttentionImpl
        from mylib import decode
        class Unit(enum.Enum):
            NATURAL = True
            LOG2 = False
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = Unit.NATURAL.value
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("Unit.NATURAL.value", "Unit.LOG2.value")})
# a backend whose base its __init__ sets on self
IMPL_INIT = """
        from base import AttentionImpl
        from mylib import combine, decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            def __init__(self):
                self.lse_base_on_e = True
            def forward(self, q):
                return decode(q, return_lse=True)
"""
PAIRS.case("a backend's base set on self in __init__", {"base.py": IMPL_BASE, "impl.py": IMPL_INIT},
     {"impl.py": ("self.lse_base_on_e = True", "self.lse_base_on_e = False")})
PAIRS.case("a backend's base set in __init__ is read at the combine", {"base.py": IMPL_BASE,
                                                                "impl.py": IMPL_INIT + """
        class Layer:
            def __init__(self):
                self.impl = Impl()
            def run(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.impl.lse_base_on_e)
        """}, {"impl.py": ("self.lse_base_on_e = True", "self.lse_base_on_e = False")})

PAIRS.case("a metadata dataclass's default never overrides the backend's own value",
     {"base.py": IMPL_BASE, "impl.py": """
        from dataclasses import dataclass
        from base import AttentionImpl
        from mylib import combine, decode
        @dataclass
        class Metadata:
            lse_base_on_e: bool = True
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = False
            def forward(self, q):
                return decode(q, return_lse=True)
        def step(impl: Impl, q):
            meta = Metadata(lse_base_on_e=True)
            out, lse = impl.forward(q)
            return combine(out, lse, is_lse_base_on_e=meta.lse_base_on_e)
        """}, {"impl.py": ("Metadata(lse_base_on_e=True)",
                           "Metadata(lse_base_on_e=impl.lse_base_on_e)")})

# --- closures, lambdas, generators --------------------------------------------------------
PAIRS.case("closure", {"layer.py": """
        from mylib import combine, decode
        def make(base_e):
            def reduce(out, lse):
                return combine(out, lse, is_lse_base_on_e=base_e)
            return reduce
        def step(q):
            out, lse = decode(q, return_lse=True)
            return make(True)(out, lse)
        """}, {"layer.py": ("make(True)", "make(False)")})
# a @contextmanager generator: ``as`` binds what it yields; on exit it runs on from the yield,
# and what it does there in place to the object it yielded, the caller's name holds too
PAIRS.case("a context manager yields the base its with binds", {"layer.py": """
        from contextlib import contextmanager
        from mylib import combine, decode
        @contextmanager
        def merge_region(backend):
            on_e = backend in ("fa3", "flashinfer")
            yield on_e
        def step(q):
            out, lse = decode(q, return_lse=True)
            with merge_region("flashinfer") as on_e:
                return combine(out, lse, is_lse_base_on_e=on_e)
        """}, {"layer.py": ('("fa3", "flashinfer")', '("fa3",)')})
PAIRS.case("a context manager converts the LSE it yielded on exit", {"layer.py": f"""
        from contextlib import contextmanager
        import torch
        from mylib import decode_into, merge
        LN2 = {LN2}
        @contextmanager
        def natural_lse(shape):
            lse = torch.empty(shape)
            yield lse
            lse = lse * LN2
        def step(q):
            with natural_lse(q.shape) as lse:
                out = decode_into(q, lse=lse)
            return merge(out, lse)
        """}, {"layer.py": ("lse = lse * LN2", "lse.mul_(LN2)")})
# an object's __init__ read first where no base is wanted (``spec.comm``) is read again where
# one is (``spec.on_e``): its calls then followed (``self.__post_init__()`` storing the base)
PAIRS.case("a written __init__ calls __post_init__, the object read before the base", {
    "layer.py": """
        import dataclasses
        from mylib import combine, decode
        def natural(backend):
            return backend in ("fa3", "flashinfer")
        @dataclasses.dataclass
        class Spec:
            backend: str = ""
            comm: str = "ag"
            on_e: bool = False
            def __init__(self, backend):
                self.backend = backend
                self.comm = "a2a"
                self.__post_init__()
            def __post_init__(self):
                self.on_e = natural(self.backend)
        def step(q):
            out, lse = decode(q, return_lse=True)
            spec = Spec("flashinfer")
            if spec.comm == "a2a":
                return combine(out, lse, is_lse_base_on_e=spec.on_e)
            return out
        """}, {"layer.py": ('("fa3", "flashinfer")', '("fa3",)')})
PAIRS.case("lambda", {"layer.py": """
        from mylib import merge, decode
        reduce = lambda o, l: merge(o, l)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse)
        """}, {"layer.py": ("reduce(out, lse)", f"reduce(out, lse * {LN2})")})
PAIRS.case("generator", {"layer.py": """
        from mylib import merge, decode
        def partials(qs):
            for q in qs:
                out, lse = decode(q, return_lse=True)
                yield out, lse
        def step(qs):
            for out, lse in partials(qs):
                merge(out, lse)
        """}, {"layer.py": ("yield out, lse", f"yield out, lse * {LN2}")})
PAIRS.case("star-unpacked result", {"layer.py": """
        from mylib import merge, decode
        def step(q):
            out, *rest = decode(q, return_lse=True)
            return merge(out, rest[0])
        """}, {"layer.py": ("rest[0])", f"rest[0] * {LN2})")})


# isinstance by the MRO of each class an object may be; a classmethod read from its class
CLASSES = """
        from mylib import combine, decode
        class Base:
            NATURAL = True
            @classmethod
            def natural(cls):
                return cls.NATURAL
        class FlashInfer(Base):
            NATURAL = False
        class Other:
            pass
        def step(q):
            impl = FlashInfer()
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=TOLD)
        """
PAIRS.case("isinstance of an object is read from its class's MRO",
           {"layer.py": CLASSES.replace("TOLD", "isinstance(impl, Base)")},
           {"layer.py": ("isinstance(impl, Base)", "isinstance(impl, Other)")})
PAIRS.case("a classmethod read from a class is bound to that class",
           {"layer.py": CLASSES.replace("TOLD", "Base.natural()")},
           {"layer.py": ("Base.natural()", "FlashInfer.natural()")})
PAIRS.case("a local of any name that reaches the base keyword has its call read", {
    "layer.py": """
        from mylib import combine, decode
        def natural(name):
            return name in {"fa", "fa3"}
        def step(q):
            out, lse = decode(q, return_lse=True)
            use_e = natural("fa")
            flag = not not use_e
            return combine(out, lse, is_lse_base_on_e=flag)
        """}, {"layer.py": ('natural("fa")', 'natural("fi")')}, quiet=True)
PAIRS.case("an attribute of any name one method stores and another passes on has its call read", {
    "layer.py": """
        from mylib import combine, decode
        def natural(name):
            return name in {"fa", "fa3"}
        class Base:
            def __init__(self):
                self._e = natural("fa")
        class Layer(Base):
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self._e)
        """}, {"layer.py": ('natural("fa")', 'natural("fi")')}, quiet=True)
PAIRS.case("a class body's base computed by a call of a module function is read", {
    "impl.py": IMPL_BASE + """
    from mylib import decode_e
    KERNEL = "cute-dsl"
    def natural(kernel):
        return bool(kernel.find("cute"))
    class Impl(AttentionImpl):
        can_return_lse_for_decode = True
        lse_base_on_e = natural(KERNEL)
        def forward(self, q):
            return decode_e(q)
    """}, {"impl.py": ('bool(kernel.find("cute"))', 'kernel.find("cute") == 0')})
PAIRS.case("getattr with a name a helper is given reads that attribute", {"layer.py": """
        from mylib import combine, decode
        class Impl:
            lse_base_on_e = True
        class Layer:
            def __init__(self):
                self.impl = Impl()
            def _impl_flag(self, name, default):
                return getattr(self.impl, name, default)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self._impl_flag("lse_base_on_e",
                                                                           default=True))
        """}, {"layer.py": ("    lse_base_on_e = True", "    lse_base_on_e = False")}, quiet=True)
PAIRS.case("a partial with a ** that may not bind a keyword, called with that keyword", {
    "layer.py": """
        import functools
        from mylib import combine, decode
        def run(out, lse, is_lse_base_on_e=False):
            return combine(out, lse, is_lse_base_on_e=is_lse_base_on_e)
        def step(q, flag):
            opts = {}
            if flag:
                opts["is_lse_base_on_e"] = False
            told = functools.partial(run, **opts)
            out, lse = decode(q, return_lse=True)
            return told(out, lse, is_lse_base_on_e=True)
        """}, {"layer.py": ("lse, is_lse_base_on_e=True)", "lse, is_lse_base_on_e=False)")})

# --- a combine's own body, read as its consumer record says it is called ------------------------
#: ``ops.told_reduce`` is a combine a consumer record describes (``eng.told_reduce``: base 2 unless
#: ``is_lse_base_on_e=True``); its callers are judged by the record, its body by what it does
#: with an LSE of the base the record says it is given
PAIRS.case("a combine's body converts the LSE of the base its record says it is not", {
    "ops.py": f"""
        from mylib import combine
        LN2 = {LN2}
        def told_reduce(out, lse, is_lse_base_on_e=False):
            if is_lse_base_on_e:
                lse = lse * LN2
            return combine(out, lse, is_lse_base_on_e=True)
        """}, {"ops.py": ("if is_lse_base_on_e:", "if not is_lse_base_on_e:")})
PAIRS.case("a combine's body drops its base keyword on the way to the next combine", {
    "ops.py": """
        from mylib import reduce_default_e
        def told_reduce(out, lse, is_lse_base_on_e=False):
            return reduce_default_e(out, lse)
        """}, {"ops.py": ("(out, lse)\n", "(out, lse, is_lse_base_on_e=is_lse_base_on_e)\n")})

# the call the record describes passes the LSE (and its base keyword): a base parameter the
# record does not know takes its default (``mylib.merge`` reads base e; a flag added to it that
# converts a base-2 LSE by default converts the base-e LSE its callers pass)
PAIRS.case("a fixed-base combine grows a base flag whose default converts", {
    "mylib.py": f"""
        LN2 = {LN2}
        def merge(out, lse, is_lse_base_on_e=False):
            if not is_lse_base_on_e:
                lse = lse * LN2
            return out
        def decode(q, return_lse=False, lse=None):
            return q, q
        """}, {"mylib.py": ("is_lse_base_on_e=False)", "is_lse_base_on_e=True)")})


PAIRS.case("a combine's body gathers its LSE from the ranks and tells the next combine another base", {
    "ops.py": """
        from mylib import combine
        def told_reduce(out, lse, group, is_lse_base_on_e=False):
            lses = group.all_gather(lse, dim=0)
            return combine(out, lses, is_lse_base_on_e=True)
        """}, {"ops.py": ("is_lse_base_on_e=True)", "is_lse_base_on_e=is_lse_base_on_e)")})
PAIRS.case("an LSE gathered into a buffer by torch.distributed keeps its base", {"layer.py": """
        import torch
        import torch.distributed as dist
        from mylib import decode, merge
        def step(q, world):
            out, lse = decode(q, return_lse=True)
            lses = torch.empty((world, *lse.shape))
            dist.all_gather_into_tensor(lses, lse)
            return merge(out, lses)
        """}, {"layer.py": ("merge(out, lses)", f"merge(out, lses * {LN2})")})


PAIRS.case("type(obj).attr reads the class of an object that may be of any subclass", {
    "base.py": IMPL_BASE, "layer.py": """
        from base import AttentionImpl
        from mylib import combine, decode
        class Decoding(AttentionImpl):
            def forward(self, q):
                return None, None
        class FiImpl(Decoding):
            can_return_lse_for_decode, lse_base_on_e = True, False
            def forward(self, q):
                return decode(q, return_lse=True)
        class Layer:
            def __init__(self, impl: Decoding):
                self.impl = impl
            def step(self, q):
                out, lse = self.impl.forward(q)
                return combine(out, lse, is_lse_base_on_e=Decoding.lse_base_on_e)
        """}, {"layer.py": ("=Decoding.lse_base_on_e", "=type(self.impl).lse_base_on_e")})
PAIRS.case("super().m() runs the parent's method, not the override of the caller's subclass", {
    "layer.py": """
        from mylib import decode, merge
        class Base:
            def kernel(self, q):
                out, lse = decode(q, return_lse=True)
                return out, lse
        class Child(Base):
            def kernel(self, q):
                out, lse = super().kernel(q)
                return out, lse
        def step(layer: Child, q):
            out, lse = layer.kernel(q)
            return merge(out, lse)
        """}, {"layer.py": ("                return out, lse\n        def step",
                            f"                return out, lse * {LN2}\n        def step")})


PAIRS.case("assert ends the path on which its test is false", {"ops.py": """
        from mylib import merge
        def told_reduce(out, lse, is_lse_base_on_e=False):
            assert not is_lse_base_on_e
            return merge(out, lse)
        """}, {"ops.py": ("merge(out, lse)", f"merge(out, lse * {LN2})")})

PAIRS.case("a flag read on self is what every class of its family declares", {"layer.py": """
        from mylib import combine, decode
        class Reducer:
            lse_base_on_e = True
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.lse_base_on_e)
        class PagedReducer(Reducer):
            page = 16
        """}, {"layer.py": ("lse_base_on_e = True", "lse_base_on_e = False")}, quiet=True)
PAIRS.case("a class body's tuple assignment binds each name to its item", {"layer.py": """
        from mylib import combine, decode
        class Config:
            name, lse_base_on_e = "fi", True
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=Config().lse_base_on_e)
        """}, {"layer.py": ('"fi", True', '"fi", False')}, quiet=True)

PAIRS.case("an object is never None: the test of an options object decides the path", {
    "layer.py": """
        import dataclasses
        from mylib import combine, decode
        @dataclasses.dataclass(frozen=True)
        class Options:
            base_e: bool = True
        class Reducer:
            def __init__(self, base_e=True, options=None):
                if options is not None:
                    base_e = options.base_e
                self.base_e = base_e
            def __call__(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=self.base_e)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return Reducer(options=Options(base_e=True))(out, lse)
        """}, {"layer.py": ("Options(base_e=True)", "Options(base_e=False)")}, quiet=True)
PAIRS.case("a backend's flag is a bool: isinstance and a comparison of it are decided", {
    "layer.py": """
        from mylib import combine, decode
        class Impl:
            can_return_lse_for_decode = True
            lse_base_on_e = False
            def forward(self, q):
                return decode(q, return_lse=True)
        def as_flag(base):
            if isinstance(base, (int, float)):
                base = base != 2
            return base
        class Layer:
            def __init__(self, impl: Impl):
                self.impl = impl
            def step(self, q):
                out, lse = self.impl.forward(q)
                return combine(out, lse, is_lse_base_on_e=as_flag(self.impl.lse_base_on_e))
        """}, {"layer.py": ("isinstance(base, (int, float))",
                            "isinstance(base, (int, float)) and not isinstance(base, bool)")},
    quiet=True)

TRY_LOOKUP = """
        from mylib import combine, decode
        BASES = {"fi": False, "fa": True}
        def on_e(name):
            try:
                return BASES[name]
            except Exception:
                return True
            except KeyError:
                return False
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=on_e(NAME))
        """
PAIRS.case("a lookup of a missing key raises KeyError: the first handler that catches it runs",
           {"layer.py": TRY_LOOKUP.replace("NAME", '"mla"')},
           {"layer.py": ("except Exception:", "except ValueError:")}, quiet=True)
PAIRS.case("a lookup that finds its key runs no handler", {"layer.py": TRY_LOOKUP.replace(
    "NAME", '"fa"')}, {"layer.py": ('on_e("fa")', 'on_e("fi")')}, quiet=True)
PAIRS.case("a bare name in a case is a capture pattern: it matches anything", {"layer.py": """
        from mylib import combine, decode
        KERNEL = "trtllm"
        NATURAL_KERNEL = "cute"
        def on_e(kernel):
            match kernel:
                case NATURAL_KERNEL:
                    return True
            return False
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=on_e(KERNEL))
        """}, {"layer.py": ("case NATURAL_KERNEL:", 'case "cute":')}, quiet=True)

PAIRS.case("a conversion constant raised to a flag: ln 2 ** False is 1, no conversion", {
    "layer.py": """
        import math
        from mylib import decode, merge
        CONVERTED = False
        def step(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, lse * math.log(2.0) ** CONVERTED)
        """}, {"layer.py": ("CONVERTED = False", "CONVERTED = True")}, quiet=True)

PAIRS.case("a helper called in __init__ reads what __init__ set, a call cycle that settles", {
    "layer.py": """
        from mylib import combine, decode
        class AttentionImpl:
            can_return_lse_for_decode = False
            lse_base_on_e = True
        class FiImpl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = False
            def forward(self, q):
                out, lse = decode(q, return_lse=True)
                return out, lse
        class Manager:
            def __init__(self, is_lse_base_on_e: bool):
                self.is_lse_base_on_e = is_lse_base_on_e
            def run(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=self.is_lse_base_on_e)
        class Layer:
            def __init__(self):
                self.impl = FiImpl()
                self.manager = Manager(is_lse_base_on_e=self.impl_flag("lse_base_on_e", True))
            def impl_flag(self, name, default):
                return not getattr(self.impl, name, default)
            def step(self, q):
                out, lse = self.impl.forward(q)
                return self.manager.run(out, lse)
        """}, {"layer.py": ("return not getattr", "return getattr")}, quiet=True)

PAIRS.case("a list appended to holds its items in order: the last one is the appended", {
    "layer.py": """
        from mylib import combine, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            told = [False]
            told.append(True)
            return combine(out, lse, is_lse_base_on_e=told[-1])
        """}, {"layer.py": ("told.append(True)", "told.append(False)")}, quiet=True)
PAIRS.case("a table another module appends to at its top level holds its own items either way", {
    "bases.py": """
        NATURAL = ["fa", "fi"]
        """,
    "platform.py": """
        from bases import NATURAL
        NATURAL.append("flashmla")
        """,
    "layer.py": """
        from mylib import combine, decode
        from bases import NATURAL
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e="fi" in NATURAL)
        """}, {"bases.py": ('["fa", "fi"]', '["fa"]')}, quiet=True)

PAIRS.case("a class attribute a method changes through the class name holds either value", {
    "layer.py": """
        from mylib import combine, decode
        class Mixin:
            natural: tuple = ("fa", "fi")
            def register(self, name):
                Mixin.natural += (name,)
            def step(self, q, other):
                if other:
                    self.register(other)
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e="fi" in Mixin.natural)
        """}, {"layer.py": ('("fa", "fi")', '("fa",)')})

PAIRS.case("a class body's table changed by a later statement of the body reads as changed", {
    "layer.py": """
        from mylib import combine, decode
        class Layer:
            BASES = {"fi": False}
            BASES["fi"] = True
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.BASES["fi"])
        """}, {"layer.py": ('BASES["fi"] = True', 'BASES["fi"] = False')}, quiet=True)

PAIRS.case("inspect.getattr_static of a plain class attribute reads what getattr reads", {
    "base.py": IMPL_BASE, "layer.py": """
        import inspect
        from base import AttentionImpl
        from mylib import combine, decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = False
            def forward(self, q):
                return decode(q, return_lse=True)
        class Layer:
            def __init__(self):
                self.impl = Impl()
            def step(self, q):
                out, lse = self.impl.forward(q)
                on_e = inspect.getattr_static(type(self.impl), "lse_base_on_e")
                return combine(out, lse, is_lse_base_on_e=not on_e)
        """}, {"layer.py": ("is_lse_base_on_e=not on_e", "is_lse_base_on_e=on_e")}, quiet=True)

PAIRS.told([
    ("a slice of a tuple is the items Python slices out", "flags = (True, False, True)",
     "flags[1:][1]", ("flags[1:][1]", "flags[1:][0]")),
    ("two tuples that differ in an item are unequal", "", "(1, 2) != (2, 1)",
     ("(1, 2) != (2, 1)", "(1, 2) == (2, 1)")),
    ("round and divmod fold as Python computes them", "", "round(0.4) == 1 or divmod(3, 2)[1] == 1",
     ("divmod(3, 2)[1] == 1", "divmod(3, 2)[1] == 0")),
    ("a number in a range", "", "5 in range(3, 9, 2)", ("5 in range", "6 in range")),
])
PAIRS.case("a name a module-level star assignment unpacks is read from its part", {
    "layer.py": """
        from mylib import combine, decode
        FIRST, *REST = (False, True, True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=REST[0])
        """}, {"layer.py": ("(False, True, True)", "(True, False, True)")}, quiet=True)

PAIRS.told([
    ("an Enum member looked up by its name", "", 'Unit["NATURAL"].value',
     ('Unit["NATURAL"]', 'Unit["LOG2"]')),
    ("an Enum member looked up by its value (True finds the member whose value is 1)", "",
     "Unit(1) is Unit.NATURAL", ("Unit(1)", "Unit(0)")),
], module="import enum\n        class Unit(enum.Enum):\n            NATURAL = True\n"
          "            LOG2 = False")

PAIRS.told([
    ("hasattr of an attribute the class assigns, or of a method, is true", "impl = Impl()",
     'hasattr(impl, "fast") and hasattr(impl, "run")', ('hasattr(impl, "fast") and ', "not ")),
], module="class Impl:\n            fast = True\n            def run(self):\n"
          "                return None")

PAIRS.case("an instance attribute over a method of the same name", {"layer.py": """
        from mylib import combine, decode, merge
        class Impl:
            def __init__(self):
                self.merge = merge
            def merge(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=False)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return self.merge(out, lse)
        """}, {"layer.py": ("self.merge = merge", "self.fixed = merge")})


PAIRS.case("a method reads what its caller stored on self, not the class default", {
    "layer.py": """
        from functools import partial
        from mylib import combine, decode
        class Manager:
            on_e: bool = True
            def __init__(self, impl_on_e):
                self._setup(impl_on_e)
            def _setup(self, on_e):
                self.on_e = on_e
                self._bind()
            def _bind(self):
                self.merge = partial(combine, is_lse_base_on_e=self.on_e)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return self.merge(out, lse)
        def go(q):
            return Manager(True).step(q)
        """}, {"layer.py": ("Manager(True)", "Manager(False)")})


@pytest.mark.parametrize("name", PAIRS.names())
def test_bug_is_an_error_and_fix_is_clean(name: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    PAIRS.check(name, tmp_path, capsys)


def test_a_conversion_of_an_lse_in_its_target_base_is_an_error_where_written_and_called(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A helper that converts base 2 into e, applied twice: AC016 at the conversion in the
    helper and at each call that hands it the converted LSE (either may be the bug); the first
    call, of a base-2 LSE, is right."""
    found = lint_json(tmp_path, capsys, "twice", {"layer.py": f"""
        from mylib import decode, merge
        def to_ln(lse):
            return lse * {LN2}
        def step(q):
            out, lse = decode(q, return_lse=True)
            once = to_ln(lse)
            again = to_ln(once)
            return merge(out, to_ln(once))
        """})
    at = sorted(int(str(f["location"]).split(":")[-2]) for f in found if f["code"] == "AC016")
    assert at == [4, 8, 9], found  # the second call with one LSE too (a memoised summary)


def test_an_lse_scaled_by_a_factor_not_read_warns_at_the_consumer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``lse * scale`` with ``scale`` unread (nor 1): the LSE is kept, of a base not known, and
    the consumer it reaches warns naming the factor (never silence); × 1 keeps the base."""
    found = lint_json(tmp_path, capsys, "scaled", {"layer.py": """
        from mylib import decode, merge
        from elsewhere import scale
        def step(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, lse * scale())
        """})
    lost = [f for f in found if f["code"] == "AC035"]
    assert [f["severity"] for f in lost] == ["warning"], found
    assert "× scale()" in str(lost[0]["message"]), lost
    assert not [f for f in found if f["severity"] == "error"], found
    kept = lint_json(tmp_path, capsys, "one", {"layer.py": """
        from mylib import decode, merge
        def step(q):
            out, lse = decode(q, return_lse=True)
            return merge(out, lse * 1.0)
        """})
    assert [f["code"] for f in kept if f["severity"] == "error"] == ["AC023"], kept


def test_a_class_attribute_changed_in_a_method_is_not_read_as_its_literal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``Mixin.natural += (name,)`` in a method: a name the literal lacks may be in it after
    that (not read: a warning), never "not in it" read from the literal alone."""
    found = lint_json(tmp_path, capsys, "grown", {"layer.py": """
        from mylib import combine, decode
        class Mixin:
            natural: tuple = ("fa",)
            def register(self, name):
                Mixin.natural += (name,)
            def step(self, q, other):
                self.register(other)
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e="fi" not in Mixin.natural)
        """})
    assert [(f["code"], f["severity"]) for f in found] == [("AC035", "warning")], found


def test_a_store_into_a_nested_item_leaves_the_table_not_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``T["b"]["on_e"] = False`` where ``dict.fromkeys`` made one inner dict for every key:
    ``T["a"]["on_e"]`` is False too. Which entries share the object is not followed, so the
    table is not read after such a store (a warning), never its literal (a false error)."""
    found = lint_json(tmp_path, capsys, "nested", {"layer.py": """
        from mylib import combine, decode
        def step(q):
            table = dict.fromkeys(("a", "b"), {"on_e": True})
            table["b"]["on_e"] = False
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=table["a"]["on_e"])
        """})
    assert [(f["code"], f["severity"]) for f in found] == [("AC035", "warning")], found


#: (name, module, told expression, Python's value of it): a base-2 LSE is told the value; the
#: lint may leave it not read (a warning), never read it wrongly. From a review of the session's
#: container changes (issue 37): each program once read a stale list, a set's hash order, or a
#: flattened branch as sure.
_NEVER_WRONG = [
    ("del then append", "xs = [True, False]\ndel xs[0]\nxs.append(False)", "xs[0]", False),
    ("slice store then append", "xs = [True, False]\nxs[:] = [False]\nxs.append(False)",
     "xs[0]", False),
    ("item store then append", "xs = [True]\nxs[0] = False\nxs.append(False)", "xs[0]", False),
    ("reverse then append", "xs = [True, False]\nxs.reverse()\nxs.append(False)", "xs[0]", False),
    ("+= then append", "xs = [False]\nxs += [True]\nxs.append(False)", "len(xs) == 3", True),
    ("a set unpacked", "a, b = {'x', 'y'}", "a == 'x'", None),
    ("a set's order after add", "s = {'a', 'b'}\ns.add('c')", "list(s)[0] == 'a'", None),
    ("a class body's table changed in a try", "class C:\n    T = {'k': False}\n    try:\n"
     "        T['k'] = True\n    except Exception:\n        T['k'] = False", "C.T['k']", True),
    ("a base class's attribute a function sets, read on a subclass",
     "class M:\n    FLAG = False\nclass S(M):\n    pass\ndef setup():\n    M.FLAG = True\nsetup()",
     "S.FLAG", True),
    ("getattr_static of a slot is its descriptor", "import inspect\nclass C:\n"
     "    __slots__ = ('F',)\n    def __init__(self):\n        self.F = False",
     "inspect.getattr_static(C(), 'F') is False", False),
]


@pytest.mark.parametrize(("name", "module", "told", "python"), _NEVER_WRONG,
                         ids=[c[0] for c in _NEVER_WRONG])
def test_a_value_is_read_as_python_computes_it_or_not_at_all(
        name: str, module: str, told: str, python: bool | None, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """True is an error (base e told for a base-2 LSE), False none; None: Python's value
    depends on the hash seed, so it must not be read (a warning)."""
    src = "from mylib import combine, decode\n" + module + "\ndef step(q):\n" \
        "    out, lse = decode(q, return_lse=True)\n" \
        f"    return combine(out, lse, is_lse_base_on_e={told})\n"
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    codes = {(f["code"], f["severity"]) for f in found}
    if python is None:
        assert codes == {("AC035", "warning")}, found
    elif python:
        assert ("AC023", "error") in codes, found
    else:
        assert not any(sev == "error" for _, sev in codes), found


#: (name, module, told expression, whether the lint must read it): Python itself computes the
#: told value (the reference: the module and the expression are run here), and the lint must
#: read it as Python does (an error where it is true, none where false), or, where the last
#: column is False, at least not wrongly (a warning).
#: decorators of the program: a wrapper that forwards its arguments, and a factory whose
#: wrapper forces a keyword
_DECORATORS = """import functools
def passthrough(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper
@passthrough
def g(x):
    return x
def force(value):
    def outer(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            kwargs["x"] = value
            return fn(*args, **kwargs)
        return inner
    return outer
@force(False)
def h(x=True):
    return x"""

#: a mixin whose ``__init__`` stores a base, run by ``super().__init__`` and skipped by an
#: explicit ``Base.__init__(self)``
_MIXED_INITS = """class Base:
    on_e = True
    def __init__(self, n):
        self.n = n
class Mixin:
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.on_e = False
class Explicit(Mixin, Base):
    def __init__(self, n):
        Base.__init__(self, n)
class Cooperative(Mixin, Base):
    def __init__(self, n):
        super().__init__(n)"""

_POST_INIT = ("import dataclasses\n@dataclasses.dataclass\nclass Spec:\n    backend: str = ''\n"
              "    on_e: bool = False\n    def __post_init__(self):\n"
              "        self.on_e = self.backend in ('x',)\n")
_WRITTEN_INIT = "    def __init__(self, backend):\n        self.backend = backend\n"
_FROZEN = ("import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass Spec:\n"
           "    on_e: bool = True\nclass Impl:\n    lse_base_on_e = False\n")
_NAT = "import enum\nclass Nat(enum.Enum):\n    A = 'x'\n    B = 'y'\n    C = 'x'\n"

_DISPATCH = ("import functools\n@functools.singledispatch\ndef natural(spec):\n"
             "    raise TypeError(spec)\n@natural.register\ndef _(spec: int) -> bool:\n"
             "    return spec != 2\n@natural.register\ndef _(spec: float) -> bool:\n"
             "    return spec != 2.0\n")

_AS_PYTHON = [
    ("a generator is true even where it yields nothing", "", "bool(x for x in ())", True),
    ("a filter object is true even where it keeps nothing", "", "bool(filter(None, ()))",
     True),
    ("any of a filter by a bound __eq__", "", "any(filter('a'.__eq__, ('b', 'a')))", True),
    ("any of a filter that keeps nothing", "", "any(filter('c'.__eq__, ('b', 'a')))", True),
    ("map over a tuple", "", "tuple(map(str.upper, ('a',))) == ('A',)", False),
    ("iter of an empty tuple is true", "", "bool(iter(()))", True),
    ("list of an empty generator is false", "", "bool(list(x for x in ()))", True),
    ("a starred list in a tuple display", "C = ['x']", "'x' in ('y', *C)", True),
    ("a starred list, the name not in it", "C = ['x']", "'z' in ('y', *C)", True),
    ("a subset of a set", "N = frozenset({'a', 'b'})", "{'a'} <= N", True),
    ("a superset asked the wrong way round", "N = frozenset({'a', 'b'})", "N <= {'a'}", True),
    ("frozenset of a dict holds its keys as they were", "D = {'a': 1}\nN = frozenset(D)\n"
     "D.update(b=2)", "'b' in N", True),
    ("a kept keys view sees later inserts", "D = {'a': 1}\nN = D.keys()\nD.update(b=2)",
     "'b' in N", True),
    ("a list of keys is a copy", "D = {'a': 1}\nN = list(D.keys())\nD['b'] = 2", "'b' in N",
     False),
    ("a view kept in an expression sees later inserts",
     "T = {'a': 1}\nK = T.keys() if True else ()\nT['b'] = 2", "'b' in K", False),
    ("a dict comprehension keeps a repeated key's first place",
     "d = {k: 1 for k in ('a', 'b', 'a')}", "list(d)[0] == 'a'", True),
    ("a module list changed through a second name, read as of a line",
     "A = []\nB = A\nN = len(A)\nB.append(1)", "N == 0", True),
    ("a module list changed once through a second name", "A = []\nB = A\nB.append(1)",
     "len(B) == 1", True),
    ("a loop that rebinds another name it reads",
     "A = True\nX = False\nfor i in (1, 2):\n    X = A\n    A = not A", "X", False),
    ("a generator kept sees a later append", "L = []\nG = (x for x in L)\nL.append(1)",
     "any(G)", False),
    ("a map kept sees a later append", "def f():\n    xs = []\n    m = map(bool, xs)\n"
     "    xs.append(1)\n    return any(m)", "f()", False),
    ("a regex function under another name", "from re import search as match",
     "bool(match('a', 'ba'))", True),
    ("a memoised list in two places, one changed", "def mk():\n    return []\ndef f():\n"
     "    xs = [mk() for _ in (1, 2)]\n    xs[0].append(1)\n    return xs", "bool(f()[1])",
     False),
    ("a list appended to through a second name", "def f():\n    c = ['x']\n    g = c\n"
     "    g.append('y')\n    return c", "'y' in f()", True),
    ("a list copied then appended to", "def f():\n    c = ['x']\n    g = c + []\n"
     "    g.append('y')\n    return c", "'y' in f()", True),
    ("a list in a tuple appended to", "def f():\n    c = ['x']\n    t = (c, 1)\n"
     "    c.append('y')\n    return t[0]", "'y' in f()", False),
    ("a module list extended through a second name", "C = ['x']\nF = C\nF += ['y']",
     "'y' in C", True),
    ("a module list extended through a second name, read through it",
     "C = ['x']\nF = C\nC.append('y')", "'y' in F", True),
    ("a module tuple rebound by += through a second name", "C = ('x',)\nF = C\nF += ('y',)",
     "'y' in C", False),
    ("a function's list extended by += through a second name", "def f():\n    c = ['x']\n"
     "    g = c\n    g += ['y']\n    return c", "'y' in f()", True),
    ("an unanchored regex search", "import re\nR = re.compile(r'(flash)?mla')",
     "bool(R.search('trtllm_mla'))", True),
    ("a regex fullmatch", "import re\nR = re.compile(r'(?:flash)mla')",
     "bool(R.fullmatch('trtllm_mla'))", True),
    ("re.match at the start only", "import re", "re.match('mla', 'flashmla') is None", True),
    ("a return inside nested loops", "G = ((True, ('a',)), (False, ('b', '*')))\n"
     "def p(x):\n    for g, bs in G:\n        for y in bs:\n            if y in (x, '*'):\n"
     "                return g\n    return False", "p('a')", True),
    ("a break leaves the inner loop only", "G = ((True, ('a',)), (False, ('b', '*')))\n"
     "def p(x):\n    r = False\n    for g, bs in G:\n        for y in bs:\n"
     "            if y in (x, '*'):\n                r = g\n                break\n    return r",
     "p('a')", True),
    ("a class body's comprehension skips the class's names",
     "P = False\nclass C:\n    P = True\n"
     "    T = {ph: P if ph == 'prefill' else True for ph in ('decode', 'prefill')}\n"
     "    on_e = all(T.values())", "C.on_e", True),
    ("a class body's call reads the class's names", "P = False\nclass C:\n    P = True\n"
     "    T = dict(decode=True, prefill=P)\n    on_e = all(T.values())", "C.on_e", True),
    ("a class body's comprehension iterates the class's name first",
     "class C:\n    NAMES = ('a',)\n    T = [n == 'a' for n in NAMES]", "C.T[0]", True),
    ("an instance attribute over a method of the same name",
     "def raw(out, lse, on_e=True):\n    return on_e\nclass Impl:\n    def __init__(self):\n"
     "        self.pick = raw\n    def pick(self, out, lse, on_e=False):\n        return on_e",
     "Impl().pick(1, 2)", True),
    ("one list repeated by [[]] * 2, extended through one item",
     "X = [[]] * 2\nX[0].extend(('a', 'b'))\nX[1].extend(('c',))", "'a' in X[1]", True),
    ("a list per item of a comprehension, extended through one",
     "X = [[] for _ in range(2)]\nX[0].extend(('a', 'b'))\nX[1].extend(('c',))",
     "'a' in X[1]", True),
    ("a function's lists extended through an item", "def f():\n    X = [[], []]\n"
     "    X[1].append('c')\n    return X", "'c' in f()[1]", True),
    ("a dict in a list updated through an item", "def f():\n    X = [{'k': False}]\n"
     "    X[0].update(k=True)\n    return X", "f()[0]['k']", False),
    ("a module's for-else after a loop that breaks", "r = 'start'\nfor x in [1, 2, 3]:\n"
     "    if x == 2:\n        break\nelse:\n    r = 'no break'", "r == 'no break'", True),
    ("a module's for-else after an empty loop", "r = 'start'\nfor x in []:\n    break\n"
     "else:\n    r = 'no break'", "r == 'no break'", True),
    ("a module's while-else after a break", "n = 0\nwhile n < 5:\n    n += 1\n"
     "    if n == 3:\n        break\nelse:\n    n = 100", "n == 100", False),
    ("a module's except clauses in order", "try:\n    raise KeyError('k')\n"
     "except LookupError:\n    r = 'lookup'\nexcept KeyError:\n    r = 'key'",
     "r == 'key'", True),
    ("a module's match capture rebinds the name", "RED = 'red'\ncolor = 'blue'\n"
     "match color:\n    case RED:\n        r = 'matched'", "RED == 'red'", True),
    ("a module's mapping pattern matches a larger dict", "r = False\n"
     "match {'a': 1, 'b': 2}:\n    case {'a': 1}:\n        r = True", "r", True),
    ("except* runs every matching handler", "a = b = False\ntry:\n"
     "    raise ExceptionGroup('g', [ValueError(), TypeError()])\nexcept* ValueError:\n"
     "    a = True\nexcept* TypeError:\n    b = True", "a and b", False),
    ("a class's __getattribute__ answers every read", "class A:\n    x = 1\n"
     "    def __getattribute__(self, name):\n        return 7", "A().x == 1", False),
    ("a dataclass field __post_init__ changes", "from dataclasses import dataclass\n"
     "@dataclass\nclass C:\n    x: int\n    def __post_init__(self):\n"
     "        self.x = self.x * 2", "C(1).x == 1", False),
    ("a closure reads a name rebound after it is made", "def outer():\n    x = True\n"
     "    def inner():\n        return x\n    x = False\n    return inner", "outer()()",
     False),
    ("lambdas made in a loop read its last value", "def outer():\n    fns = []\n"
     "    for b in (True, False):\n        fns.append(lambda: b)\n    return fns",
     "outer()[0]()", False),
    ("lambdas made in a comprehension read its last value",
     "def outer():\n    return [lambda: b for b in (True, False)]", "outer()[0]()", False),
    ("a dict's update keeps each key's place", "d = {'a': 1, 'b': 2}\nd.update(b=0, a=3)",
     "list(d)[0] == 'a'", True),
    ("a dict's item store keeps the key's place", "def f():\n    d = {'a': 1, 'b': 2}\n"
     "    d['a'] = 3\n    return d", "list(f())[0] == 'a'", True),
    ("a class's list changed through an instance", "class A:\n    items = []\n"
     "a = A()\nb = A()\na.items.append(1)", "len(b.items) == 1", False),
    ("a class's list changed by __init_subclass__", "class Base:\n    registry = []\n"
     "    def __init_subclass__(cls, **kw):\n        Base.registry.append(cls.__name__)\n"
     "class C(Base):\n    pass", "len(Base.registry) == 1", False),
    ("a property over an instance attribute's store", "class Impl:\n"
     "    @property\n    def on_e(self):\n        return False\n", "Impl().on_e", True),
    # 2026-12-05, ninth session (from set19, read as a learning set)
    ("a str method on an `or` of a name and a literal",
     "def fam(b):\n    return (b or '').rpartition('_')[0]", "fam('aiter') == 'aiter'", True),
    ("str.partition keeps a name without the separator",
     "def fam(b):\n    return (b or '').partition('_')[0]", "fam('aiter') == 'aiter'", True),
    ("a str method chained on a str method", "N = 'Cutedsl_MLA'",
     "N.lower().rpartition('_')[0] == 'cutedsl'", True),
    ("fnmatchcase of a glob that matches more than it should",
     "import fnmatch\nP = ('flashmla', '*_mla')",
     "any(fnmatch.fnmatchcase('trtllm_mla', p) for p in P)", True),
    ("fnmatch imported by name", "from fnmatch import fnmatchcase",
     "fnmatchcase('trtllm_mla', 'cutedsl_*')", True),
    ("operator.contains of a tuple", "import operator\nT = ('a', 'b')",
     "operator.contains(T, 'c')", True),
    ("os.path.splitext of a known name", "import os.path",
     "os.path.splitext('a.log2')[1] == '.log2'", True),
    ("dict.fromkeys maps every key to None", "T = dict.fromkeys(('aiter', 'flashmla'))",
     "bool(T.get('aiter'))", True),
    ("dict.fromkeys with a value", "T = dict.fromkeys(('aiter', 'flashmla'), True)",
     "bool(T.get('aiter'))", True),
    ("dict.fromkeys keys are in it", "T = dict.fromkeys('ab')", "'b' in T", True),
    ("a key every path stores is in a dict", "D = {'a': 1}\nif len(D) > 5:\n    D['b'] = 2",
     "'a' in D", True),
    ("a StrEnum's auto value is the lower-case name",
     "from enum import StrEnum, auto\nclass U(StrEnum):\n    LOG2 = auto()",
     "U.LOG2 != 'LOG2'", True),
    ("a StrEnum member compares equal to its value",
     "from enum import StrEnum, auto\nclass U(StrEnum):\n    LOG2 = auto()",
     "U.LOG2 == 'log2'", True),
    ("a str-mixin Enum member is in a tuple of its value",
     "from enum import Enum\nclass U(str, Enum):\n    E = 'e'", "U.E in ('e',)", True),
    ("an IntEnum member equals another class's member of its value",
     "from enum import IntEnum\nclass A(IntEnum):\n    X = 1\nclass B(IntEnum):\n    Y = 1",
     "A.X == B.Y", True),
    ("a plain Enum member is no string", "from enum import Enum\nclass U(Enum):\n    E = 'e'",
     "U.E == 'e'", True),
    ("a dataclass object is true", "from dataclasses import dataclass\n@dataclass\n"
     "class B:\n    natural: bool", "bool(B(natural=False))", True),
    ("an object's __bool__ decides its truth", "class B:\n    def __init__(self, n):\n"
     "        self.n = n\n    def __bool__(self):\n        return self.n", "bool(B(False))",
     True),
    ("an object's __len__ decides its truth", "class L:\n    def __len__(self):\n"
     "        return 0", "True if L() else False", True),
    ("not of a plain object", "class P:\n    pass", "not P()", True),
    ("attrgetter of two names gives them in order",
     "import operator\nclass I:\n    a = False\n    b = True",
     "operator.attrgetter('b', 'a')(I())[0]", True),
    ("attrgetter kept and called later", "from operator import attrgetter\nclass I:\n"
     "    a = True\nG = attrgetter('a')", "G(I())", True),
    # read after the class is made, its namespace may have changed since: not read
    ("a name in a class's own namespace", "class A:\n    x = True\nA.y = 1",
     "'y' in A.__dict__", False),
    ("a private name in a class's namespace is mangled",
     "class A:\n    __x = 1\n    def __init_subclass__(cls):\n"
     "        cls.mangled = '_B__x' in cls.__dict__\nclass B(A):\n    __x = 2", "B.mangled",
     False),
    ("an explicit Base.__init__(self) skips a mixin's __init__", _MIXED_INITS,
     "Explicit(1).on_e", True),
    ("a cooperative super().__init__ runs a mixin's __init__", _MIXED_INITS,
     "Cooperative(1).on_e", True),
    ("a class-body alias binds the function it named, not an override",
     "class Base:\n    def run(self, x):\n        return x\n    legacy = run\n"
     "class Sub(Base):\n    def run(self, x):\n        return not x", "Sub().legacy(True)",
     True),
    ("a class-body alias called from a method of the base",
     "class Base:\n    def run(self, x):\n        return x\n    legacy = run\n"
     "    def go(self, x):\n        return self.legacy(x)\n"
     "class Sub(Base):\n    def run(self, x):\n        return not x", "Sub().go(True)",
     True),
    ("a decorator that replaces the function", "def deco(fn):\n    return lambda *a: False\n"
     "@deco\ndef f():\n    return True", "f()", True),
    ("a decorator's wrapper forwards its arguments", _DECORATORS, "g(True)", True),
    ("a decorator factory's wrapper forces a keyword", _DECORATORS, "h(x=True)", True),
    ("a decorator returning None makes the name None", "def deco(fn):\n    pass\n@deco\n"
     "def f():\n    return True", "f is None", False),
    ("what __new__ stores on the object it makes", "class Base:\n    flag = False\n"
     "    def __new__(cls, *args, **kwargs):\n        self = super().__new__(cls)\n"
     "        self.flag = True\n        return self\nclass Impl(Base):\n"
     "    def __init__(self, n):\n        self.n = n", "Impl(1).flag", True),
    ("__init_subclass__ skips a subclass that declares the name",
     "class A:\n    on_e = True\n    def __init_subclass__(cls, **kw):\n"
     "        super().__init_subclass__(**kw)\n        if 'on_e' not in cls.__dict__:\n"
     "            cls.on_e = False\nclass B(A):\n    on_e = True", "B().on_e", True),    ("a return in finally replaces the try's return",
     "T = {'a': True}\ndef f(name):\n    try:\n        return T[name]\n    finally:\n"
     "        return False", "f('a')", True),
    ("a finally that returns on one path only keeps the try's return",
     "def f(name, quiet):\n    try:\n        return name == 'a'\n    finally:\n"
     "        if quiet:\n            return False", "f('a', False)", False),
    ("a finally that falls through keeps the try's return",
     "def f(name):\n    try:\n        return name == 'a'\n    finally:\n        pass",
     "f('a')", True),
    ("super() reads the parent's class attribute, not the subclass's",
     "class P:\n    flag = False\nclass C(P):\n    flag = True\n    def h(self):\n"
     "        return super().flag", "C().h()", True),
    ("super() skips what the instance itself holds",
     "class P:\n    flag = True\nclass C(P):\n    def __init__(self):\n"
     "        self.flag = False\n    def h(self):\n        return super().flag",
     "C().h()", True),
    ("super() in a middle class reads past it",
     "class A:\n    flag = False\nclass B(A):\n    flag = True\n    def h(self):\n"
     "        return super().flag\nclass C(B):\n    flag = True", "C().h()", True),
    ("super() in a middle class calls the method past it",
     "class A:\n    def f(self):\n        return False\nclass B(A):\n    def f(self):\n"
     "        return True\n    def h(self):\n        return super().f()\n"
     "class C(B):\n    pass", "C().h()", True),
    ("list.extend of a string adds its characters",
     "L = ['flashmla']\nL.extend('aiter')", "'aiter' in L", True),
    ("list.extend of a tuple holding the string adds the string",
     "L = ['flashmla']\nL.extend(('aiter',))", "'aiter' in L", True),
    ("set.update of a string adds its characters",
     "S = {'flashmla'}\nS.update('aiter')", "'a' in S and 'aiter' not in S", True),
    ("a loop over a string binds its characters",
     "def f():\n    seen = False\n    for c in 'ab':\n        if c == 'ab':\n"
     "            seen = True\n    return seen", "f()", True),
    # a class body is a namespace run in order: a loop's target of the attribute's name is
    # the attribute after it (on the class and as an instance's declared base)
    ("a class body's for target rebinds the attribute (instance)",
     "class C:\n    lse_base_on_e = False\n    for _k, lse_base_on_e in (('a', False), ('b', True)):"
     "\n        pass", "C().lse_base_on_e", True),
    ("a class body's for target rebinds the attribute (class)",
     "class C:\n    lse_base_on_e = True\n    for lse_base_on_e in (True, False):\n        pass",
     "not C.lse_base_on_e", True),
    # a dataclass calls __post_init__ from the __init__ it generates, never from a written one
    ("a generated __init__ runs __post_init__", _POST_INIT, "Spec('x').on_e", True),
    ("a written __init__ that calls __post_init__", _POST_INIT.replace(
        "    def __post_init__", _WRITTEN_INIT + "        self.__post_init__()\n"
        "    def __post_init__"), "Spec('x').on_e", True),
    ("a written __init__ never runs __post_init__", _POST_INIT.replace(
        "    def __post_init__", _WRITTEN_INIT + "    def __post_init__"), "not Spec('x').on_e", True),
    # a try body Python decides: a frozen dataclass refuses a store (FrozenInstanceError is an
    # AttributeError); a class's declared attribute is found and a generated __init__ given
    # its fields raises nothing (the handler never runs)
    ("a store on a frozen dataclass raises AttributeError", _FROZEN +
     "def f():\n    s = Spec()\n    try:\n        s.on_e = Impl.lse_base_on_e\n"
     "    except AttributeError:\n        pass\n    return s.on_e", "f()", True),
    ("a frozen dataclass built from a declared attribute raises nothing", _FROZEN +
     "def f():\n    try:\n        s = Spec(on_e=Impl().lse_base_on_e)\n"
     "    except AttributeError:\n        s = Spec()\n    return s.on_e", "f()", True),
    # a path that runs off a function's end returns None (a docstring-only stub of a plain
    # mixin too: an @abstractmethod only an ABC enforces)
    ("a property read runs its getter, not its setter",
     "class C:\n    def __init__(self):\n        self._on_e = True\n    @property\n"
     "    def on_e(self):\n        return self._on_e\n    @on_e.setter\n"
     "    def on_e(self, v):\n        self._on_e = v", "C().on_e", True),
    ("unpacking goes on only with what can be unpacked (None raises TypeError)",
     "def f(b):\n    if b:\n        return True, False\ndef g():\n    a, _ = f(1)\n"
     "    return a", "g()", True),
    ("a while True loop leaves only by its return (no None)",
     "def f(xs):\n    while True:\n        for x in xs:\n            if x:\n"
     "                return True", "not f([1])", True),
    ("a while True loop left by break runs on",
     "def f():\n    on_e = False\n    while True:\n        on_e = True\n        break\n"
     "    return on_e", "f()", True),
    ("a call of a function that raises on every path ends the path (no None)",
     "import os\nX = os.environ.get('ATTN_CONTRACTS_PROBE_UNSET', 'a')\n"
     "def unsupported(x):\n    raise ValueError(x)\ndef pick(x):\n    if x == 'a':\n"
     "        return True\n    unsupported(x)", "not pick(X)", False),
    ("a function that runs off its end returns None",
     "def pick(b):\n    if b == 'x':\n        return True", "not pick('y')", True),
    ("an abstract stub of a plain class returns None",
     "import abc\nclass Mixin:\n    @abc.abstractmethod\n    def on_e(self):\n"
     "        'provided by the class'\nclass Layer(Mixin):\n    pass", "not Layer().on_e()", True),
    ("a frozen dataclass's store is caught as FrozenInstanceError", _FROZEN.replace(
        "import dataclasses\n", "import dataclasses\nfrom dataclasses import FrozenInstanceError\n")
     + "s = Spec()\nchanged = True\ntry:\n    s.on_e = False\nexcept FrozenInstanceError:\n"
     "    changed = False", "changed", True),
    # an Enum's __members__ maps the members' names (never their values) to the members
    ("Enum.__members__ is keyed by the names", _NAT, "'x' not in Nat.__members__", True),
    ("Enum.__members__ holds an alias's name", _NAT, "'C' in Nat.__members__", True),
    # a builtin type's method looked up on the type binds its first argument as the receiver
    ("map of str.lower, frozen", "", "'flashmla' in frozenset(map(str.lower, ('FLASHMLA', "
     "'b')))", True),
    ("str.startswith called on the type", "", "not str.startswith('ab', 'b')", True),
    ("a module's own str is not the builtin", "class str:\n    @staticmethod\n"
     "    def lower(x):\n        return 'zz'", "str.lower('A') == 'a'", False),
    # a generator expression runs when consumed: its condition reads the names as they are then
    ("a generator's condition reads a name rebound before it runs",
     "def f(b):\n    g = (n for n in ('x', 'y') if n == b)\n    b = 'zz'\n    return any(g)",
     "not f('x')", True),
    ("a generator's first iterable is taken when it is made",
     "def f():\n    xs = ('x',)\n    g = (n for n in xs)\n    xs = ()\n    return any(g)",
     "f()", True),
    ("a generator is spent once consumed",
     "def f():\n    g = (n for n in ('x',))\n    any(g)\n    return any(g)", "not f()", False),
    ("a generator consumed on one path", "def f(b, c):\n    g = (n for n in ('x',) if n == b)\n"
     "    if c:\n        any(g)\n    return any(g)", "not f('x', True)", False),
    ("a generator not consumed on the path taken",
     "def f(b, c):\n    g = (n for n in ('x',) if n == b)\n    if c:\n        any(g)\n"
     "    return any(g)", "f('x', False)", True),
    ("map's function is taken when it is made",
     "def f(b):\n    m = map(b.__eq__, ('x',))\n    b = 'y'\n    return any(m)", "f('x')", False),
    # an object typed by a base class may be of any subclass: it holds what any of them holds
    ("a subclass's override of a class attribute read through a base-typed attribute",
     "import math\nclass A:\n    lse_log_base: float = math.e\nclass B(A):\n"
     "    lse_log_base: float = 2.0\nclass L:\n    def __init__(self, a: A):\n        self.a = a\n"
     "    def get(self):\n        return math.isclose(self.a.lse_log_base, math.e)",
     "L(B()).get()", False),
    # ``a or b`` whose last operand is true: a bool ``a`` was either true or passed on
    ("a comparison not known or true", "import os\nU = os.environ.get('ATTN_CONTRACTS_UNSET')",
     "U is None or not False", True),
    ("a comparison not known and false", "import os\nU = os.environ.get('ATTN_CONTRACTS_UNSET')",
     "not (U == 'x' and False)", True),
    ("a value not known or true", "import os\nU = os.environ.get('ATTN_CONTRACTS_UNSET')",
     "bool(U or True)", False),
    # a keyword that names a positional-only parameter is collected by ``**kwargs``
    ("a keyword never binds a positional-only parameter",
     "def f(x=True, /, **kw):\n    return x", "f(x=False)", True),
    ("a positional-only parameter given by position", "def f(x=True, /, **kw):\n    return x",
     "not f(False)", True),
    # functools.singledispatch picks by the first argument's type's MRO: bool before int
    ("singledispatch of a bool runs the int implementation", _DISPATCH, "natural(False)", True),
    ("singledispatch of a bool runs the bool implementation", _DISPATCH +
     "\n@natural.register\ndef _(spec: bool) -> bool:\n    return spec", "not natural(False)",
     True),
    ("singledispatch of a float", _DISPATCH, "not natural(2.0)", True),
    ("singledispatch registered by an argument", _DISPATCH.replace(
        "@natural.register\ndef _(spec: int)", "@natural.register(int)\ndef _(spec)"),
     "natural(3)", True),
    # PEP 572: a ``:=`` in a comprehension binds in the enclosing function, the last run's value
    ("a walrus in a comprehension's condition keeps the last run's value",
     "def f(b):\n    hits = [n for n in ('aiter', 'flashmla', 'cute') if (hit := n == b)]\n"
     "    return hit", "not f('aiter')", True),
    ("a walrus in a comprehension's element keeps the last element",
     "def f():\n    [(y := n) for n in ('a', 'b')]\n    return y == 'b'", "f()", True),
    ("a walrus after a false condition of a comprehension never runs",
     "def f():\n    x = True\n    [n for n in ('a',) if n == 'z' if (x := False)]\n"
     "    return x", "f()", True),
]


@pytest.mark.parametrize(("name", "module", "told", "reads"), _AS_PYTHON,
                         ids=[c[0] for c in _AS_PYTHON])
def test_a_value_is_read_as_python_runs_it(name: str, module: str, told: str, reads: bool,
                                          tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {}
    exec(compile(module or "pass", name, "exec", dont_inherit=True), namespace)  # Python itself
    python = bool(eval(told, namespace))
    src = "from mylib import combine, decode\n" + module + "\ndef step(q):\n" \
        "    out, lse = decode(q, return_lse=True)\n" \
        f"    return combine(out, lse, is_lse_base_on_e={told})\n"
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    codes = {(f["code"], f["severity"]) for f in found}
    errors = ("AC023", "error") in codes
    if reads or not codes & {("AC035", "warning")}:
        assert errors == python, found  # read, and read as Python computes it
    else:
        assert not errors, found  # not read: a warning, never a wrong error


@pytest.mark.parametrize(("pattern", "flags"), [
    ("(a|a)*b", 0), ("(a+)+b", 0), ("(ab){2,}", 0), ("a*a*a*a*b", 0),  # may backtrack long
    ("a", int(re.DEBUG)), ("a", 1 << 20),  # prints its parse; a flag Python does not define
])
def test_a_pattern_that_may_not_finish_or_prints_is_never_compiled(pattern: str,
                                                                    flags: int) -> None:
    assert compiled(Lit(pattern), Lit(flags)) is None


def test_a_pattern_that_is_safe_is_compiled_and_matched_as_python_matches() -> None:
    name = compiled(Lit("(flash|cutedsl_)?mla|aiter"), Lit(int(re.IGNORECASE)))
    assert name is not None
    assert fold_regex("fullmatch", name, Lit("CUTEDSL_MLA")) is True
    assert fold_regex("match", name, Lit("trtllm_mla")) is False
    assert fold_regex("search", name, Lit("trtllm_mla")) is True


def test_a_value_a_function_may_rebind_is_a_warning_never_silence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A global some function rebinds (``global flag``) may hold either value, depending on
    whether the function ran first: where one value agrees and the other contradicts the LSE,
    no error, and a warning that says so (it was silent)."""
    src = ("from mylib import combine, decode\nflag = True\ndef reset():\n    global flag\n"
           "    flag = False\ndef step(q):\n    out, lse = decode(q, return_lse=True)\n"
           "    return combine(out, lse, is_lse_base_on_e=flag)\n")
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    codes = {(f["code"], f["severity"]) for f in found}
    assert ("AC023", "error") not in codes, found
    assert ("AC035", "warning") in codes, found


_PAIR_HELPERS = {
    "returned whole": "def g(pair):\n    return pair",
    "unpacked and repacked": "def g(pair):\n    o, l = pair\n    return o, l",
    "indexed": "def g(pair):\n    return pair[0], pair[1]",
    "in a dict": "def g(pair):\n    d = {'o': pair[0], 'l': pair[1]}\n    return d['o'], d['l']",
}


@pytest.mark.parametrize("helper", sorted(_PAIR_HELPERS))
@pytest.mark.parametrize("display", ["(out, lse)", "[out, lse]"])
def test_an_lse_passed_inside_a_container_is_followed_through_the_helper(
        helper: str, display: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A helper given the ``(out, lse)`` pair whole (not the LSE itself) is followed: what it
    returns holds the argument's LSE (it was an LSE nothing could follow: no finding)."""
    src = ("from mylib import combine, decode\n" + _PAIR_HELPERS[helper] + "\n"
           "def step(q):\n    out, lse = decode(q, return_lse=True)\n"
           f"    o2, l2 = g({display})\n    return combine(o2, l2, is_lse_base_on_e=True)\n")
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert ("AC023", "error") in {(f["code"], f["severity"]) for f in found}, found


def test_a_pair_converted_by_a_static_helper_agrees(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A static method told which branch is base 2 converts that pair only: the combine told
    base e gets base e (it was an LSE nothing could follow: a warning on a correct change)."""
    src = ("import math\nfrom mylib import combine, decode\nclass K:\n    @staticmethod\n"
           "    def nat(pair, from_log2):\n        out, lse = pair\n"
           "        if lse is None or not from_log2:\n            return out, lse\n"
           "        return out, lse * math.log(2.0)\n    def run(self, q):\n"
           "        out, lse = decode(q, return_lse=True)\n"
           "        return self.nat((out, lse), from_log2=True)\n"
           "def step(q):\n    out, lse = K().run(q)\n"
           "    return combine(out, lse, is_lse_base_on_e=True)\n")
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert not [f for f in found if f["severity"] in ("error", "warning")], found


@pytest.mark.parametrize("told", ["U is None or not False", "not (U == 'x' and False)",
                                  "(U is None) or (1 < 2)"])
def test_a_bool_chain_ended_by_its_last_operand_is_read_whole(
        told: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``a or True`` where ``a`` is a comparison not known: either ``a`` is True or it passes
    on to True, so the value is True, read (no warning that it is not), as Python has it."""
    module = "import os\nU = os.environ.get('ATTN_CONTRACTS_UNSET')\n"
    namespace: dict[str, object] = {}
    exec(module, namespace)
    assert eval(told, namespace) is True
    src = ("from mylib import combine, decode\n" + module + "def step(q):\n"
           "    out, lse = decode(q, return_lse=True)\n"
           f"    return combine(out, lse, is_lse_base_on_e={told})\n")
    codes = {(f["code"], f["severity"]) for f in lint_json(tmp_path, capsys, "case",
                                                           {"layer.py": src})}
    assert ("AC023", "error") in codes and ("AC035", "warning") not in codes, codes


_DEFAULTED = """
import functools
from mylib import combine, decode
class Mgr:
    def NAME(self, out, lse, *, is_lse_base_on_e=False):
        return combine(out, lse, is_lse_base_on_e=is_lse_base_on_e)
    def run(self, q):
        out, lse = decode(q, return_lse=True)
        CALL
"""


@pytest.mark.parametrize(("name", "call", "warned"), [
    ("_combine", "return self._combine(out, lse, is_lse_base_on_e=False)", False),
    ("_combine", "f = functools.partial(self._combine, is_lse_base_on_e=False)\n"
     "        return f(out, lse)", False),
    ("_combine", "return self._combine(out, lse)", True),  # a caller takes the default
    ("_combine", "f = self._combine\n        return f(out, lse, is_lse_base_on_e=False)",
     True),  # handed on: what its callers pass is not read from the references
    ("_combine", "return self._combine(out, lse, **{'is_lse_base_on_e': False})", True),
    # a public one: where the program calls it, and every call states the base, as a private
    # one; where nothing in the program calls it, it is there for callers outside: warned
    ("combine_here", "return self.combine_here(out, lse, is_lse_base_on_e=False)", False),
    ("combine_here", "return self.combine_here(out, lse)", True),
    ("combine_here", "return out, lse", True),
])
def test_a_default_no_caller_of_a_private_function_takes_is_not_a_hazard(
        name: str, call: str, warned: bool, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """AC021 warns that a caller forgetting a defaulted base parameter gets the default: where
    every reference in the program states it (and one does, for a public function), none
    can."""
    src = _DEFAULTED.replace("NAME", name).replace("CALL", call)
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert ("AC021" in {f["code"] for f in found}) is warned, found


@pytest.mark.parametrize("elsewhere", [
    "def tune(layer):\n    layer.lse_base_on_e = False",  # stored from outside the class
    "def tune(layer):\n    setattr(layer, 'lse_base_on_e', False)",
    # stored on itself: in __init__, by computed names, through its __dict__ or vars()
    "def _own(self):\n    self.lse_base_on_e = False\nLayer._own = _own",
    "def _own(self):\n    for k, v in dict(lse_base_on_e=False).items():\n"
    "        setattr(self, k, v)",
    "def _own(self):\n    self.__dict__.update(lse_base_on_e=False)",
    "def _own(self):\n    vars(self)['lse_base_on_e'] = False",
])
def test_getattr_reads_its_default_only_where_no_object_may_have_the_attribute(
        elsewhere: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``getattr(obj, "flag", True)`` is True where no class of ``obj``'s family has the
    attribute and nothing stores it from outside; else the flag is not read (no error)."""
    src = PAIRS.cases["getattr of a flag an object never has is its default (a manager built "
                      "from its layer)"][0]["layer.py"]
    src = textwrap.dedent(src) + "\n" + elsewhere + "\n"
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert not [f for f in found if f["severity"] == "error"], found


def test_bool_of_a_declared_flag_is_the_flag(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``bool(self.impl.lse_base_on_e)`` (in an override of a hook) is the backend's own flag,
    read per backend as the flag itself is (it was a value not read: a warning)."""
    src = """
        from mylib import combine, decode, decode_e
        class AttentionImpl:
            lse_base_on_e = True
            def run(self, q):
                return decode_e(q)
        class FI(AttentionImpl):
            lse_base_on_e = False
            def run(self, q):
                return decode(q, return_lse=True)
        class Layer:
            def __init__(self, impl: AttentionImpl):
                self.impl = impl
                self.flag = self.base()
            def base(self):
                return bool(self.impl.lse_base_on_e)
            def step(self, q):
                out, lse = self.impl.run(q)
                return combine(out, lse, is_lse_base_on_e=self.flag)
        """
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert not [f for f in found if f["severity"] in ("error", "warning")], found


def test_a_class_attribute_each_subclass_sets_is_read_per_class_never_as_the_bases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``not self.impl.is_sparse`` on an impl that may be of any subclass: each subclass holds
    its own value, so which the combine is told follows the impl, as the LSE does (a dispatch:
    no error for a pairing Python never makes; it was read as the base class's value alone, a
    false error for the sparse impl's base-2 LSE)."""
    src = ("from mylib import combine, decode, decode_e\n"
           "class AttentionImpl:\n    is_sparse = False\n    def run(self, q):\n"
           "        return decode_e(q)\n"
           "class Sparse(AttentionImpl):\n    is_sparse = True\n    def run(self, q):\n"
           "        return decode(q, return_lse=True)\n"
           "class Layer:\n    def __init__(self, impl: AttentionImpl):\n        self.impl = impl\n"
           "        self.flag = not self.impl.is_sparse\n    def step(self, q):\n"
           "        out, lse = self.impl.run(q)\n"
           "        return combine(out, lse, is_lse_base_on_e=self.flag)\n")
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert not [f for f in found if f["severity"] == "error"], found


@pytest.mark.parametrize(("state", "severity"), [
    ("State()", "note"),  # its class declares the attribute: the default is never taken
    ("threading.local()", "warning"),  # nothing declares it: a missing one gets the default
])
def test_a_getattr_default_no_object_takes_is_a_note(
        state: str, severity: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = ("import threading\nfrom mylib import combine, decode\n"
           "class State(threading.local):\n    lse_base_on_e = False\n"
           f"class W:\n    def __init__(self):\n        self.state = {state}\n"
           "    def step(self, q):\n        out, lse = decode(q, return_lse=True)\n"
           "        return combine(out, lse, is_lse_base_on_e=getattr(self.state, "
           "'lse_base_on_e', True))\n")
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert [f["severity"] for f in found if f["code"] == "AC009"] == [severity], found


#: a backend whose decode converts its base-2 LSE twice where its flag says e: a bug wherever
#: the flag may be True on an object (the review's cases, each a way the flag is set)
_SET_FLAG = f"""
    from base import AttentionImpl
    from mylib import decode
    class Impl(AttentionImpl):
        can_return_lse_for_decode = True
        lse_base_on_e = False
        def __init__(self, natural=False, **kw):
            {{init}}
        def forward(self, q):
            out, lse = decode(q, return_lse=True)
            if self.lse_base_on_e:
                lse = lse * {LN2} * {LN2}
            return out, lse
    """


@pytest.mark.parametrize("init", [
    'setattr(self, "lse_base_on_e", natural)',  # stored by a constant name
    "self.__dict__.update(kw)",  # by names computed at run time
    "setattr(self, kw['name'], natural)",
])
def test_a_flag_an_instance_may_hold_otherwise_is_never_its_class_value(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], init: str) -> None:
    """A test of ``self.<base>`` is decided by the class's value only where nothing can store
    another on the object: a store by name, ``__dict__``, ``vars()``, ``setattr``."""
    found = lint_json(tmp_path, capsys, "case", {
        "base.py": IMPL_BASE, "impl.py": _SET_FLAG.format(init=init)})
    assert [f for f in found if f["severity"] == "error"], found


def test_a_flag_stored_on_an_instance_from_outside_is_never_its_class_value(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = lint_json(tmp_path, capsys, "case", {
        "base.py": IMPL_BASE, "impl.py": _SET_FLAG.format(init="pass"),
        "setup.py": "from impl import Impl\nIMPL = Impl()\nIMPL.lse_base_on_e = True\n"})
    assert [f for f in found if f["severity"] == "error"], found


@pytest.mark.parametrize("shadow", [
    # a class attribute of a subclass shadows the base's property
    "class Sub(Impl):\n    lse_base_on_e = True\n",
    # a cached_property a method overwrites on the instance
    None,
])
def test_the_first_class_that_binds_the_flag_decides_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], shadow: str | None) -> None:
    """Python reads an attribute from the first class of the MRO that binds it (a class
    attribute over an inherited property); a ``cached_property`` holds what is stored on the
    instance: neither is the property's value."""
    if shadow is not None:
        impl = ("from base import AttentionImpl\nfrom mylib import decode\n"
                "class Impl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
                "    @property\n    def lse_base_on_e(self):\n        return False\n"
                "    def forward(self, q):\n        out, lse = decode(q, return_lse=True)\n"
                f"        if not self.lse_base_on_e:\n            lse = lse * {LN2}\n"
                "        return out, lse\n" + shadow)
    else:
        impl = ("import functools\nfrom base import AttentionImpl\nfrom mylib import decode\n"
                "class Impl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
                "    @functools.cached_property\n    def lse_base_on_e(self):\n"
                "        return False\n    def natural(self):\n"
                "        self.lse_base_on_e = True\n"
                "    def forward(self, q):\n        out, lse = decode(q, return_lse=True)\n"
                f"        if self.lse_base_on_e:\n            lse = lse * {LN2} * {LN2}\n"
                "        return out, lse\n")
    found = lint_json(tmp_path, capsys, "case", {"base.py": IMPL_BASE, "impl.py": impl})
    assert [f for f in found if f["severity"] == "error"], found


@pytest.mark.parametrize("definition", [
    # the definition read is a fallback; what runs is imported
    "try:\n    from _ext import combine\nexcept ImportError:\n"
    "    def combine(out, lse):\n        raise NotImplementedError\n",
    # a decorator's wrapper takes what the call passes
    "import wrapping\n@wrapping.register\ndef combine(out, lse):\n    return out\n",
    # bound again after its def
    "import wrapping\ndef combine(out, lse):\n    return out\ncombine = wrapping.wrap(combine)\n",
])
def test_a_record_is_kept_where_the_definition_read_may_not_be_what_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], definition: str) -> None:
    """A consumer record whose base keyword the definition read lacks still describes the call
    where that definition may not be the function that runs, or the call passes the keyword
    (Python would raise ``TypeError`` on the definition read): the wrong base is an error."""
    found = lint_json(tmp_path, capsys, "case", {
        "mylib.py": "def decode(q, return_lse=False):\n    return q, q\n" + definition,
        "layer.py": "from mylib import combine, decode\ndef step(q):\n"
                    "    out, lse = decode(q, return_lse=True)\n"
                    "    return combine(out, lse, is_lse_base_on_e=True)\n"})
    assert [f for f in found if f["severity"] == "error"], found


def test_a_private_method_looked_up_by_a_computed_name_runs_on_every_class(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``getattr(self, "_decode_" + mode)`` may reach a private method from any class: its run
    is not narrowed to the classes of its ``self._name(...)`` callers."""
    impl = TWO_DECODES.format(forward='def forward(self, q, mode):\n'
                              '                return getattr(self, "_decode_" + mode)(q)')
    found = lint_json(tmp_path, capsys, "case", {"base.py": IMPL_BASE, "impl.py": impl})
    assert [f for f in found if f["code"] == "AC016"], found


def test_a_function_an_unknown_decorator_replaces_may_equal_a_constant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What an unknown decorator returns may be a name (``@registered`` giving the string):
    a table's key, never read as an object that keys no entry."""
    src = ("import registry\nfrom mylib import combine, decode\n"
           "@registry.backend_name\ndef BACKEND():\n    return None\n"
           "BASE_ON_E = {'FLASHINFER': True}\n"
           "def step(q):\n    out, lse = decode(q, return_lse=True)\n"
           "    return combine(out, lse, is_lse_base_on_e=BASE_ON_E.get(BACKEND, False))\n")
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert [f for f in found if f["severity"] == "error"], found


#: each a correct function where a name bound to a view (or something that reads as one) must
#: not carry a write it does not see: two items of one list; a whole view of a buffer
#: converted in place after the view was made; a view made on a side that returns; a mask
#: index (which copies)
_NOT_VIEWS = {
    "two items of one list": """
        import torch
        from mylib import decode, decode_e, merge
        def step(q):
            o1, l1 = decode_e(q)
            o2, l2 = decode(q, return_lse=True)
            lses = [l1.clone(), torch.empty_like(l1)]
            a = lses[0]
            b = lses[1]
            b.copy_(l2)
            return merge(o1, a)
        """,
    "a whole view of a buffer converted after": """
        import math
        import torch
        from mylib import decode, merge
        def step(q):
            o, l2 = decode(q, return_lse=True)
            buf = torch.empty_like(l2)
            w = buf.view(-1)
            buf.copy_(l2)
            buf.mul_(math.log(2.0))
            return merge(o, w)
        """,
    "a view made on a side that returns": """
        import torch
        from mylib import decode, decode_e, merge
        def step(q, early):
            o, l2 = decode(q, return_lse=True)
            oe, le = decode_e(q)
            a = torch.empty_like(le)
            b = torch.empty_like(le)
            if early:
                b = a.view(-1)
                return o
            a.copy_(le)
            b.copy_(l2)
            return merge(oe, a)
        """,
    "a mask index copies": """
        import math
        from mylib import combine, decode
        def step(q, keep):
            out, lse = decode(q, return_lse=True)
            sel = lse[keep]
            sel.mul_(math.log(2.0))
            a = combine(out[keep], sel, is_lse_base_on_e=True)
            return a, combine(out, lse, is_lse_base_on_e=False)
        """,
}


@pytest.mark.parametrize("name", sorted(_NOT_VIEWS))
def test_a_write_reaches_only_the_tensors_that_share_its_storage(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = lint_json(tmp_path, capsys, "case", {"layer.py": _NOT_VIEWS[name]})
    assert not [f for f in found if f["severity"] == "error"], found


@pytest.mark.parametrize(("src", "line"), [
    # a view of a view, bound to the same name
    ("""
        import torch
        from mylib import decode, merge
        def step(q):
            o, l2 = decode(q, return_lse=True)
            send = torch.empty(4, 8)
            w = send.view(torch.float32)
            w = w[:, 5]
            w.copy_(l2)
            return merge(o, send[:, 5])
        """, 10),
    # a parameter written through a view: the caller's tensor holds the LSE
    ("""
        import torch
        from mylib import decode, merge
        def _pack(dst, lse):
            w = dst.view(-1)
            w.copy_(lse)
        def step(q):
            o, l2 = decode(q, return_lse=True)
            buf = torch.empty(8)
            _pack(buf, l2)
            return merge(o, buf)
        """, 11),
])
def test_a_write_through_a_view_reaches_the_tensor_viewed(
        src: str, line: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = lint_json(tmp_path, capsys, "case", {"layer.py": src})
    assert [(f["code"], f["line"]) for f in found if f["severity"] == "error"] == \
        [("AC023", line)], found
