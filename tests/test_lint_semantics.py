"""The lint's interpreter follows Python's data flow in general (issue 37 item 1).

Each case is a pair written from the language's semantics, not from an engine: a base-2 LSE
(``mylib.decode``) reaches a base-e combine (``mylib.merge``, fixed; ``mylib.combine``, told by
``is_lse_base_on_e``) through one construct of the language (the bug, an error), and the same
program with the base right (the fix, no error). A rule that fires everywhere, or nowhere, fails.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from attn_contracts.lint import main
from fixtures.records import MYLIB_RECORDS, consumer_toml, producer_toml

RECORDS = MYLIB_RECORDS + consumer_toml(
    "mylib.reduce_default_e", "mylib.reduce_default_e", '{ kind = "keyword", keyword = '
    '"is_lse_base_on_e", values = { "True" = "e", "False" = "2" }, default = "True" }') + \
    producer_toml("mylib.decode_into", "mylib.decode_into", "2",  # returns its output alone
                  call='lse_out = ["lse"], lse_returned = false')


def _errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
            files: dict[str, str]) -> list[dict[str, object]]:
    root = tmp_path / name
    for fname, text in files.items():
        (root / fname).parent.mkdir(parents=True, exist_ok=True)
        (root / fname).write_text(textwrap.dedent(text))
    records = tmp_path / "records.toml"
    records.write_text(RECORDS)
    main([str(root), "--records", str(records), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    return [f for f in found if f["severity"] == "error"]


# name -> (files of the bug, {file: (old, new)} turning it into the fix)
CASES: dict[str, tuple[dict[str, str], dict[str, tuple[str, str]]]] = {}


def case(name: str, files: dict[str, str], fix: dict[str, tuple[str, str]]) -> None:
    CASES[name] = (files, fix)


LN2 = "0.6931471805599453"

# --- argument binding by signature --------------------------------------------------------
case("positional base to a combine of the program", {
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
case("positional base to a combine whose signature is not linted", {"layer.py": """
        from mylib import decode, reduce_default_e
        def step(q, g):
            out, lse = decode(q, return_lse=True)
            return reduce_default_e(out, lse, g)
        """}, {"layer.py": ("lse, g)", "lse, g, None, False, False)")})
case("base forwarded through **kwargs", {"layer.py": """
        from mylib import combine, decode
        def reduce(out, lse, **kwargs):
            return combine(out, lse, **kwargs)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse, is_lse_base_on_e=True)
        """}, {"layer.py": ("is_lse_base_on_e=True)", "is_lse_base_on_e=False)")})
case("LSE forwarded through *args", {"layer.py": """
        from mylib import merge, decode
        def reduce(*args):
            return merge(*args)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse)
        """}, {"layer.py": ("reduce(out, lse)", f"reduce(out, lse * {LN2})")})
case("base as a default of a helper", {"layer.py": """
        from mylib import combine, decode
        def reduce(out, lse, base_e=True):
            return combine(out, lse, is_lse_base_on_e=base_e)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse)
        """}, {"layer.py": ("reduce(out, lse)", "reduce(out, lse, False)")})
case("base returned by a module-level function", {"layer.py": """
        from mylib import combine, decode
        def natural():
            return True
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=natural())
        """}, {"layer.py": ("return True", "return False")})
case("base returned by a method, through a local name", {"layer.py": """
        from mylib import combine, decode
        class Settings:
            def log_base_is_e(self):
                return True
        def step(q, s: Settings):
            out, lse = decode(q, return_lse=True)
            is_lse_base_on_e = s.log_base_is_e()
            return combine(out, lse, is_lse_base_on_e=is_lse_base_on_e)
        """}, {"layer.py": ("return True", "return False")})
case("base returned through a chain of helpers in another module", {"cfg.py": """
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
case("base as a membership test of a literal set", {"layer.py": """
        from mylib import combine, decode
        NATURAL = ("fa3", "triton")
        def natural(kind):
            return kind in NATURAL
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=natural("triton"))
        """}, {"layer.py": ('natural("triton")', 'natural("flashinfer")')})
case("base keyword dropped by a comprehension filtering **kwargs", {"layer.py": """
        from mylib import reduce_default_e, decode
        ALLOWED = ("group",)
        def reduce(out, lse, **options):
            passed = {name: val for name, val in options.items() if name in ALLOWED}
            return reduce_default_e(out, lse, **passed)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse, group=None, is_lse_base_on_e=False)
        """}, {"layer.py": ('ALLOWED = ("group",)', 'ALLOWED = ("group", "is_lse_base_on_e")')})
case("a table keyed by classes, read with the class of an object and a default", {
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
case("a table keyed by classes, subscripted with the class of an object", {"layer.py": """
        from mylib import combine, decode
        class Paged: pass
        NATURAL_BY_KIND = {Paged: True}
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=NATURAL_BY_KIND[type(Paged())])
        """}, {"layer.py": ("{Paged: True}", "{Paged: False}")})
case("partialmethod", {"layer.py": """
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
case("instance attribute set in __init__ over the class attribute", {"layer.py": """
        from mylib import combine, decode
        class Layer:
            base_e = False
            def __init__(self):
                self.base_e = True
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.base_e)
        """}, {"layer.py": ("self.base_e = True", "self.base_e = False")})
case("a property", {"layer.py": """
        from mylib import combine, decode
        class Layer:
            @property
            def base_e(self):
                return True
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.base_e)
        """}, {"layer.py": ("return True", "return False")})
case("dataclass field given by the constructor over its default", {"layer.py": """
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
case("dataclass field given by position", {"layer.py": """
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
case("NamedTuple field", {"layer.py": """
        from typing import NamedTuple
        from mylib import combine, decode
        class Cfg(NamedTuple):
            base_e: bool = False
        def step(q):
            cfg = Cfg(True)
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=cfg.base_e)
        """}, {"layer.py": ("Cfg(True)", "Cfg(False)")})
case("Enum value", {"layer.py": """
        import enum
        from mylib import combine, decode
        class Base(enum.Enum):
            E = True
            TWO = False
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=Base.E.value)
        """}, {"layer.py": ("Base.E.value", "Base.TWO.value")})

case("NamedTuple built in __init__, read in a subclass with its own __init__", {"layer.py": """
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
case("dataclass built at module level with the base by keyword over its default", {
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
IMPL_BASE = """
    class AttentionImpl:
        can_return_lse_for_decode = False
        lse_base_on_e = True
    """
case("a backend's base declared by a property", {"base.py": IMPL_BASE, "impl.py": """
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
case("a backend's base declared by an Enum member's value", {"base.py": IMPL_BASE, "impl.py": """
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
case("a backend's base set on self in __init__", {"base.py": IMPL_BASE, "impl.py": IMPL_INIT},
     {"impl.py": ("self.lse_base_on_e = True", "self.lse_base_on_e = False")})
case("a backend's base set in __init__ is read at the combine", {"base.py": IMPL_BASE,
                                                                "impl.py": IMPL_INIT + """
        class Layer:
            def __init__(self):
                self.impl = Impl()
            def run(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=self.impl.lse_base_on_e)
        """}, {"impl.py": ("self.lse_base_on_e = True", "self.lse_base_on_e = False")})

case("a metadata dataclass's default never overrides the backend's own value",
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
case("closure", {"layer.py": """
        from mylib import combine, decode
        def make(base_e):
            def reduce(out, lse):
                return combine(out, lse, is_lse_base_on_e=base_e)
            return reduce
        def step(q):
            out, lse = decode(q, return_lse=True)
            return make(True)(out, lse)
        """}, {"layer.py": ("make(True)", "make(False)")})
case("lambda", {"layer.py": """
        from mylib import merge, decode
        reduce = lambda o, l: merge(o, l)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse)
        """}, {"layer.py": ("reduce(out, lse)", f"reduce(out, lse * {LN2})")})
case("generator", {"layer.py": """
        from mylib import merge, decode
        def partials(qs):
            for q in qs:
                out, lse = decode(q, return_lse=True)
                yield out, lse
        def step(qs):
            for out, lse in partials(qs):
                merge(out, lse)
        """}, {"layer.py": ("yield out, lse", f"yield out, lse * {LN2}")})
case("star-unpacked result", {"layer.py": """
        from mylib import merge, decode
        def step(q):
            out, *rest = decode(q, return_lse=True)
            return merge(out, rest[0])
        """}, {"layer.py": ("rest[0])", f"rest[0] * {LN2})")})

# --- containers ------------------------------------------------------------------------------
case("a list of (out, lse) pairs", {"layer.py": """
        from mylib import merge, decode
        def step(qs):
            pairs = []
            for q in qs:
                out, lse = decode(q, return_lse=True)
                pairs.append((out, lse))
            for o, l in pairs:
                merge(o, l)
        """}, {"layer.py": ("pairs.append((out, lse))", f"pairs.append((out, lse * {LN2}))")})
case("pairs of a list grown by append, star-unpacked into the call", {"layer.py": """
        from mylib import merge, decode
        def step(q, o2, l2):
            out, lse = decode(q, return_lse=True)
            pairs = [(out, lse)]
            pairs.append((o2, l2))
            return merge(*pairs[0])
        """}, {"layer.py": ("pairs = [(out, lse)]", f"pairs = [(out, lse * {LN2})]")})
case("a conditional expression decided by the literal a caller passes", {"util.py": """
        import math
        def token_major(lse, *, log2=True):
            lse = lse.transpose(0, 1)
            return lse * math.log(2) if log2 else lse
        """, "layer.py": """
        from mylib import decode_e, merge
        from util import token_major
        def step(q):
            out, lse = decode_e(q)
            return merge(out, token_major(lse))
        """}, {"layer.py": ("token_major(lse))", "token_major(lse, log2=False))")})
case("a closure over a global reads it when called: the loop's last value", {"ops.py": """
        from functools import partial
        from mylib import combine
        COMBINES = {}
        for _kind, _on_e in (("paged", False), ("ragged", True)):
            COMBINES[_kind] = lambda *a, **kw: combine(*a, is_lse_base_on_e=_on_e, **kw)
        """, "layer.py": """
        from mylib import decode
        from ops import COMBINES
        class Impl:
            def __init__(self):
                self.merge = COMBINES["paged"]
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return self.merge(out, lse)
        """}, {"ops.py": ("lambda *a, **kw: combine(*a, is_lse_base_on_e=_on_e, **kw)",
                          "partial(combine, is_lse_base_on_e=_on_e)")})
case("a table filled in a loop over literal pairs keeps each pass's value", {"ops.py": """
        from functools import partial
        from mylib import combine
        TABLE = {}
        for _kind, _on_e in (("paged", True), ("ragged", True)):
            TABLE[_kind] = partial(combine, is_lse_base_on_e=_on_e)
        """, "layer.py": """
        from mylib import decode
        from ops import TABLE
        def step(q):
            out, lse = decode(q, return_lse=True)
            return TABLE["paged"](out, lse)
        """}, {"ops.py": ('("paged", True), ("ragged", True)', '("paged", False), ("ragged", True)')})
case("a NamedTuple built by position keeps its field's default", {"layer.py": """
        from typing import NamedTuple
        from mylib import decode_e, combine
        class Partial(NamedTuple):
            out: object
            lse: object
            lse_base_on_e: bool = False
        def attend(q):
            return Partial(*decode_e(q))
        def step(q):
            p = attend(q)
            return combine(p.out, p.lse, is_lse_base_on_e=p.lse_base_on_e)
        """}, {"layer.py": ("lse_base_on_e: bool = False", "lse_base_on_e: bool = True")})
case("a dataclass field's default given by field(default=...)", {"layer.py": """
        from dataclasses import dataclass, field
        from mylib import decode_e, combine
        @dataclass
        class Partial:
            out: object
            lse: object
            on_e: bool = field(default=False)
        def step(q):
            out, lse = decode_e(q)
            p = Partial(out, lse)
            return combine(p.out, p.lse, is_lse_base_on_e=p.on_e)
        """}, {"layer.py": ("field(default=False)", "field(default=True)")})
case("an in-place scaling of a view converts the view and the tensor it views", {"impl.py": """
        import math
        from mylib import decode, combine
        class Impl:
            can_return_lse_for_decode = True
            lse_base_on_e = False
            def forward(self, q):
                out, lse = decode(q, return_lse=True)
                lse.view(-1, 8).mul_(math.log(2.0))
                return out, lse
        """}, {"impl.py": ("lse_base_on_e = False", "lse_base_on_e = True")})
case("a plain object's base attribute a combine is told", {"layer.py": """
        from mylib import decode, combine
        class Settings:
            lse_base_on_e = True
        SETTINGS = Settings()
        def run(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=SETTINGS.lse_base_on_e)
        """}, {"layer.py": ("lse_base_on_e = True", "lse_base_on_e = False")})
case("a base read in method resolution order (C3), not depth first", {"impl.py": """
        from mylib import decode
        class Impl:
            can_return_lse_for_decode = False
            lse_base_on_e = True
        class Paged(Impl):
            pass
        class Log2Units(Impl):
            lse_base_on_e = True  # its own
        class PagedLog2(Paged, Log2Units):
            can_return_lse_for_decode = True
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("True  # its own", "False  # its own")})
case("a class decorator that sets the base", {"base.py": IMPL_BASE + """
    def lse_base(*, on_e):
        def wrap(cls):
            setattr(cls, "lse_base_on_e", on_e)
            return cls
        return wrap
    """, "impl.py": """
        from base import AttentionImpl, lse_base
        from mylib import decode
        @lse_base(on_e=True)
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("@lse_base(on_e=True)", "@lse_base(on_e=False)")})
case("a base stored on the class below its body", {"base.py": IMPL_BASE, "impl.py": """
        from base import AttentionImpl
        from mylib import decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            def forward(self, q):
                return decode(q, return_lse=True)
        Impl.lse_base_on_e = True
        """}, {"impl.py": ("Impl.lse_base_on_e = True", "Impl.lse_base_on_e = False")})
case("a store on any subclass (cls: type[X]) leaves X's own attribute alone", {"impl.py": """
        from mylib import decode
        class AttentionImpl:
            can_return_lse_for_decode = False
            lse_base_on_e = True
        def configure(cls: type[AttentionImpl], on_e: bool) -> None:
            cls.lse_base_on_e = on_e
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            def forward(self, q):
                return decode(q, return_lse=True)
        """}, {"impl.py": ("    lse_base_on_e = True\n", "    lse_base_on_e = False\n")})
case("an if statement decided by the class attribute of the class a method runs on", {
    "base.py": """
        import math
        from typing import ClassVar
        class PrefillBackend:
            kernel_lse_is_log2: ClassVar[bool] = False
            def heads_first(self, lse):
                lse = lse.transpose(0, 1)
                if self.kernel_lse_is_log2:
                    lse = lse * math.log(2.0)
                return lse
        """, "impl.py": """
        from typing import ClassVar
        from base import PrefillBackend
        from mylib import decode, merge
        class Log2Prefill(PrefillBackend):
            kernel_lse_is_log2: ClassVar[bool] = False
            def run(self, q):
                out, lse = decode(q, return_lse=True)
                return out, self.heads_first(lse)
        class Layer:
            def __init__(self):
                self.prefill = Log2Prefill()
            def step(self, q):
                out, lse = self.prefill.run(q)
                return merge(out, lse)
        """}, {"impl.py": ("ClassVar[bool] = False", "ClassVar[bool] = True")})
case("`or` gives its first true operand: a False passed is not the default", {"layer.py": """
        from mylib import decode, combine
        def reduce(out, lse, on_e=None):
            return combine(out, lse, is_lse_base_on_e=on_e or True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse, on_e=False)
        """}, {"layer.py": ("on_e or True", "True if on_e is None else on_e")})
case("a method read without the call is true", {"layer.py": """
        from mylib import decode, combine
        class Impl:
            def base_is_e(self):
                return False
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=True if self.base_is_e else False)
        """}, {"layer.py": ("if self.base_is_e else", "if self.base_is_e() else")})
case("an LSE kept in a list and merged later", {"layer.py": """
        from mylib import merge, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            kept = [lse]
            return merge(out, kept[0])
        """}, {"layer.py": ("kept = [lse]", f"kept = [lse * {LN2}]")})
case("a comprehension over pairs", {"layer.py": """
        from mylib import merge, decode
        def step(qs):
            pairs = [decode(q, return_lse=True) for q in qs]
            lses = [l for _, l in pairs]
            return merge(pairs[0][0], lses[0])
        """}, {"layer.py": ("lses = [l for _, l in pairs]", f"lses = [l * {LN2} for _, l in pairs]")})
case("an LSE held in a dataclass", {"layer.py": """
        from dataclasses import dataclass
        from mylib import merge, decode
        @dataclass
        class Partial:
            out: object
            lse: object
        def step(q):
            out, lse = decode(q, return_lse=True)
            p = Partial(out, lse)
            return merge(p.out, p.lse)
        """}, {"layer.py": ("Partial(out, lse)", f"Partial(out, lse * {LN2})")})

# --- mutation after definition ------------------------------------------------------------
case("a table changed by setitem", {"layer.py": """
        from mylib import combine, decode
        BASES = {"fi": False}
        BASES["fi"] = True
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASES["fi"])
        """}, {"layer.py": ('BASES["fi"] = True', 'BASES["fi"] = False')})
case("a table changed by update", {"layer.py": """
        from mylib import combine, decode
        BASES = {"fi": False}
        BASES.update(fi=True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASES["fi"])
        """}, {"layer.py": ("BASES.update(fi=True)", "BASES.update(fi=False)")})
case("a global rebound by a function", {"layer.py": """
        from mylib import combine, decode
        BASE_E = True
        def configure():
            global BASE_E
            BASE_E = True
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASE_E)
        """}, {"layer.py": ("    BASE_E = True", "    BASE_E = False")})
case("a table changed in place by a function is unknown", {"layer.py": """
        from mylib import combine, decode
        BASES = {"fi": True}
        def register(name, base_e):
            pass
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASES["fi"])
        """}, {"layer.py": ("            pass", "            BASES[name] = base_e")})
case("a list of bases grown by append", {"layer.py": """
        from mylib import combine, decode
        FLAGS = []
        FLAGS.append(True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=FLAGS[0])
        """}, {"layer.py": ("FLAGS.append(True)", "FLAGS.append(False)")})

# --- getattr, dict.get, custom ops, conversions --------------------------------------------
case("getattr(module, constant)", {"layer.py": """
        import mylib
        from mylib import decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            return getattr(mylib, "merge")(out, lse)
        """}, {"layer.py": ("(out, lse)\n", f"(out, lse * {LN2})\n")})
case("getattr(self, table name)", {"layer.py": """
        from mylib import combine, decode
        NAMES = {"a2a": "reduce_e"}
        class Layer:
            def reduce_e(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=True)
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return getattr(self, NAMES["a2a"])(out, lse)
        """}, {"layer.py": ("is_lse_base_on_e=True", "is_lse_base_on_e=False")})
case("dict.get with a default", {"layer.py": """
        from mylib import combine, decode
        BASES = {"fa3": False}
        def step(q, backend):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASES.get(backend, True))
        """}, {"layer.py": ("BASES.get(backend, True)", "BASES.get(backend, False)")})
case("a torch.ops custom-op wrapper", {"ops.py": """
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
case("a double conversion", {"layer.py": """
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
case("a double conversion through a tensor-typed helper past the bound on call contexts", {
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
case("an out buffer's slice carried in a **mapping built by setitem, read by a subclass", {
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
case("an out buffer's view in a dict literal given as **mapping", {"layer.py": """
        import torch
        from mylib import decode, merge
        def step(q, out):
            buf = torch.empty(4, 8)
            extra = {"lse": buf.view(4, 8)}
            decode(q, return_lse=True, **extra)
            return merge(out, buf)
        """}, {"layer.py": ("merge(out, buf)", f"merge(out, buf * {LN2})")})
case("an out buffer in dict(...) given as **mapping", {"layer.py": """
        import torch
        from mylib import decode, merge
        def step(q, out):
            buf = torch.empty(4, 8)
            decode(q, return_lse=True, **dict(lse=buf))
            return merge(out, buf)
        """}, {"layer.py": ("merge(out, buf)", f"merge(out, buf * {LN2})")})
case("an out buffer's copy is not the buffer (the kernel writes the copy)", {"layer.py": """
        import torch
        from mylib import decode, merge
        def step(q, out):
            buf = torch.empty(4, 8)
            decode(q, return_lse=True, lse=buf.transpose(0, 1))
            return merge(out, buf)
        """}, {"layer.py": ("lse=buf.transpose(0, 1))", "lse=buf.clone())")})
case("an out buffer by position, the producer's signature in the program", {
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
    case(f"dicts merged by {form}: the later key wins (ChainMap: the first map's)",
         {"layer.py": MERGED.replace("MERGE", bug)}, {"layer.py": (bug, fix)})
case("a partial bound with a ** it cannot read is not told the default", {"layer.py": """
        from functools import partial
        from mylib import decode, reduce_default_e
        def step(q, opts):
            out, lse = decode(q, return_lse=True)
            told = partial(reduce_default_e, **{"is_lse_base_on_e": True})
            unread = partial(reduce_default_e, **opts)
            return told(out, lse), unread(out, lse)
        """}, {"layer.py": ('{"is_lse_base_on_e": True}', '{"is_lse_base_on_e": False}')})

REPLACED = """
        import dataclasses
        from typing import NamedTuple
        from mylib import decode, merge
        class Part(NamedTuple):
            out: object
            lse: object
        @dataclasses.dataclass
        class Held:
            out: object
            lse: object
        def step(q):
            out, lse = decode(q, return_lse=True)
            p = Part(out, lse)
            p = p._replace(lse=p.lse * LN2)
            h = Held(out, lse)
            h = dataclasses.replace(h, lse=h.lse * LN2)
            return merge(p.out, p.lse), merge(h.out, h.lse)
        """.replace("LN2", LN2)
case("NamedTuple._replace: the field given is replaced",
     {"layer.py": REPLACED.replace(f"p._replace(lse=p.lse * {LN2})", "p._replace(out=p.out)")},
     {"layer.py": ("p._replace(out=p.out)", f"p._replace(lse=p.lse * {LN2})")})
case("dataclasses.replace: the field given is replaced",
     {"layer.py": REPLACED.replace(f"replace(h, lse=h.lse * {LN2})", "replace(h, out=h.out)")},
     {"layer.py": ("replace(h, out=h.out)", f"replace(h, lse=h.lse * {LN2})")})

# --- a callee changes its argument's tensor in place ---------------------------------------
case("a helper that converts its argument in place converts the caller's tensor", {
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
case("a method that converts its argument in place, on a contiguous copy or the tensor", {
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

case("`if x is not None:` converts the tensor, and x is None on the other side", {"layer.py": """
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

# more subclasses of one base than the contexts one function gets
SUBCLASSES = "".join(f"""
        class {c}(ImplBase):
            lse_base_on_e = False
            def forward(self, q):
                return decode(q, return_lse=True)""" for c in "ABCDEFG")
case("__init_subclass__ runs with the class statement's keywords", {"base.py": """
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

case("`not` of a backend's base flag, through a property that negates it", {
    "base.py": IMPL_BASE, "impl.py": """
        from base import AttentionImpl
        from mylib import combine, decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            lse_base_on_e = False
            @property
            def lse_is_log2(self):
                return not self.lse_base_on_e
            def forward(self, q):
                return decode(q, return_lse=True)
        class Layer:
            def __init__(self):
                self.impl = Impl()
            def run(self, q):
                out, lse = self.impl.forward(q)
                return combine(out, lse, is_lse_base_on_e=self.impl.lse_is_log2)
        """}, {"impl.py": ("is_lse_base_on_e=self.impl.lse_is_log2",
                           "is_lse_base_on_e=not self.impl.lse_is_log2")})

case("a nested function rebinds the enclosing variable only where it says nonlocal", {
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

case("a NamedTuple is a tuple: unpacked and indexed", {"layer.py": """
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
    case(f"a base chosen from a known backend name by {which}",
         {"layer.py": NAMED.replace("WHICH", which).replace("NAME", "fa3")},
         {"layer.py": ('"fa3")', '"trtllm_fi")')})

case("a conversion factor computed by math (log with a base, a quotient): folded as Python does",
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


case("an Enum member's auto() value is Python's (from 1, one more than the last)", {
    "base.py": IMPL_BASE, "impl.py": _impl("""
        import enum
        class Unit(enum.Enum):
            LN = enum.auto()
            LOG2 = enum.auto()""", "lse_base_on_e = Unit.LOG2.value != 1  # counted from 0?")},
    {"impl.py": ("Unit.LOG2.value != 1", "Unit.LOG2.value != 2")})

case("a class body reads the names it assigned above (a scope run in order)", {
    "base.py": IMPL_BASE, "impl.py": _impl("", 'lse_unit = "log2"\n            '
                                               'lse_base_on_e = lse_unit != "log_2"')},
    {"impl.py": ('lse_unit != "log_2"', 'lse_unit != "log2"')})


case("a kernel that returns its output alone: the LSE is its buffer's, converted after", {
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

case("an __init__ store is read in __init__'s frame, its locals included", {"layer.py": """
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


case("set operators bind as Python binds them (- before |)", _named(
    '        ALL = frozenset({"fa", "fi", "mla"})\n'
    '        LOG2 = frozenset({"fi", "trt"})\n'
    '        LN = ALL | {"aiter"} - LOG2', 'name not in LN'),
    {"layer.py": ('ALL | {"aiter"} - LOG2', '(ALL | {"aiter"}) - LOG2')})

case("a tuple nested in a tuple is one element, not its items", _named(
    '        CUDA = ("fi", "trt")\n        LOG2 = (CUDA, "aiter2")', 'name in LOG2'),
    {"layer.py": ('LOG2 = (CUDA, "aiter2")', 'LOG2 = (*CUDA, "aiter2")')})

case("frozenset.union returns a new set: a result thrown away changes nothing", _named(
    '        LOG2 = frozenset({"trt"})\n        LOG2.union({"fi"})', 'name in LOG2'),
    {"layer.py": ('LOG2.union({"fi"})', 'LOG2 = LOG2.union({"fi"})')})

case("a descriptor's __get__ runs for the class the attribute is read on", {
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

case("an Enum member whose value repeats an earlier one is an alias: not iterated", _named(
    '        import enum\n'
    '        class Base(enum.Enum):\n'
    '            fa = "e"\n'
    '            trt = "2"\n'
    '            fi = "2"\n'
    '        LOG2 = frozenset(m.name for m in Base if m.value == "2")', 'name in LOG2'),
    {"layer.py": ('frozenset(m.name for m in Base if m.value == "2")',
                  'frozenset(m.name for m in Base if m.value == "2") | {"fi"}')})

case("a Flag's zero member is in every value of the Flag", _named(
    '        import enum\n'
    '        class Lse(enum.Flag):\n'
    '            BASE_E = 0\n'
    '            BASE_2 = enum.auto()\n'
    '        TABLE = {"fa": Lse.BASE_E, "mla": Lse.BASE_E}',
    'Lse.BASE_E not in TABLE.get(name, Lse.BASE_2)'),
    {"layer.py": ('Lse.BASE_E not in TABLE.get(name, Lse.BASE_2)',
                  'TABLE.get(name, Lse.BASE_2) == Lse.BASE_2')})

case("a comprehension's condition drops an element, as Python runs it", _named(
    '        BASES = {"fa": True, "fi": False, "trt": False}\n'
    '        LOG2 = [n for n, on_e in BASES.items() if on_e]', 'name in LOG2'),
    {"layer.py": ('if on_e]', 'if not on_e]')})

case("a loop's else runs unless the loop breaks", {"layer.py": """
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

case("bool() of a non-empty set is True, whatever it holds", {"layer.py": """
        from mylib import combine, decode
        BASES_E = {False}
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=bool(BASES_E))
        """}, {"layer.py": ("bool(BASES_E)", "all(BASES_E)")})

case("a class is never equal to its name", {"layer.py": """
        from mylib import combine, decode
        class FiImpl:
            pass
        LOG2_IMPLS = frozenset({"FiImpl"})
        def step(impl: FiImpl, q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=type(impl) not in LOG2_IMPLS)
        """}, {"layer.py": ("type(impl) not in", "type(impl).__name__ not in")})


@pytest.mark.parametrize("name", sorted(CASES))
def test_bug_is_an_error_and_fix_is_clean(name: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    files, fix = CASES[name]
    bug = _errors(tmp_path, capsys, "bug", files)
    fixed = dict(files)
    for fname, (old, new) in fix.items():
        fixed[fname] = fixed[fname].replace(old, new)
        assert fixed[fname] != files[fname], (fname, old)
    good = _errors(tmp_path, capsys, "fix", fixed)
    assert bug, f"{name}: the bug is no error"
    assert not good, f"{name}: the fix is flagged: {good}"


ANY_SUBCLASS = """
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
            self.impl = impl
        def run(self, q):
            out, lse = self.impl.forward(q)
            return combine(out, lse, is_lse_base_on_e=TOLD)
    """


@pytest.mark.parametrize(("told", "codes"), [
    ("not self.impl.lse_is_log2", set()),  # the flag itself, through two negations: read
    ("self.impl.lse_is_log2", {"AC023"}),  # the other base than each subclass declares
])
def test_negation_of_any_subclass_flag(told: str, codes: set[str], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``not`` of what the flag is on each subclass an instance may be: read per subclass,
    never "could not be read"."""
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "impl.py").write_text(textwrap.dedent(ANY_SUBCLASS).replace("TOLD", told))
    records = tmp_path / "records.toml"
    records.write_text(RECORDS)
    main([str(root), "--records", str(records), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    assert {f["code"] for f in found if f["severity"] != "note"} == codes, found


def test_an_init_store_is_not_read_again_at_class_level(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """What ``__init__`` stores on ``self`` is read in ``__init__``'s frame, where its locals
    are known; read a second time as if the class body had said it (no locals there), it was
    an unread base beside the right one: a warning on a correct program."""
    files, fix = CASES["an __init__ store is read in __init__'s frame, its locals included"]
    root = tmp_path / "fix"
    (root).mkdir()
    old, new = fix["layer.py"]
    (root / "layer.py").write_text(textwrap.dedent(files["layer.py"]).replace(old, new))
    records = tmp_path / "records.toml"
    records.write_text(RECORDS)
    main([str(root), "--records", str(records), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    assert [f for f in found if f["severity"] != "note"] == []
