"""Cases a review of the flag-case, late-binding, reduction and dataclass changes (issue 37)
found wrong in their first versions: correct code read as an error, or a finding lost. Each
package is linted with the pairs' records (``fixtures/semantic_pairs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.semantic_pairs import FAMILY
from fixtures.semantic_pairs import lint_json

#: a layer over an object of the backend family (``FAMILY``); a case's lines follow in its
#: ``forward``, after ``out, lse = self.impl.forward(q)``
_LAYER = FAMILY + """
    LN2 = 0.6931471805599453
    class Layer:
        def __init__(self, impl: AttentionImpl):
            self.impl = impl
        def forward(self, q):
            out, lse = self.impl.forward(q)
    """

CASES = {
    "a lambda called where a comprehension makes it reads the variable's value then": ('no_error', """
        from mylib import combine, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            return [(lambda: combine(out, lse, is_lse_base_on_e=on_e))() for on_e in (False, True) if not on_e]
        """),
    'an inner iterable a filter skips is never evaluated': ('no_error', """
        from mylib import combine, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            return [r for on_e in (False, True) if not on_e for r in [combine(out, lse, is_lse_base_on_e=on_e)]]
        """),
    "an IntEnum whose _missing_ it defines: its member's truth is not read": ('no_error', """
        import enum
        from mylib import combine, decode
        class B(enum.IntEnum):
            TWO = 0
            E = 1
            @classmethod
            def _missing_(cls, value):
                return cls.E
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=bool(B.TWO))
        """),
    'asdict of an object changed since it was built reads the change': ('no_error', """
        import dataclasses
        from mylib import combine, decode
        @dataclasses.dataclass
        class Conf:
            on_e: bool = True
            chunk: int = 0
        def step(q):
            out, lse = decode(q, return_lse=True)
            c = Conf()
            c.on_e = False
            return combine(out, lse, is_lse_base_on_e=dataclasses.asdict(c)["on_e"])
        """),
    'a stacked tensor of both bases, one row converted in place: not read row by row': ('no_error', """
        import torch
        from mylib import decode, decode_e, merge
        LN2 = 0.6931471805599453
        def step(q, k):
            out, lse2 = decode(q, return_lse=True)
            _, lse_e = decode_e(k)
            lses = torch.stack([lse_e, lse2])
            lses[1] *= LN2
            return merge(out, torch.logsumexp(lses, dim=0))
        """),
    'functools.reduce with an initial value starts from it alone': ('no_error', """
        import functools
        import torch
        from mylib import decode, merge
        LN2 = 0.6931471805599453
        def step(qs, q):
            out, _ = decode(q, return_lse=True)
            lses = torch.stack([decode(x, return_lse=True)[1] for x in qs])
            init = torch.full_like(lses[0], float("-inf"))
            total = functools.reduce(lambda acc, part: torch.logaddexp(acc, part * LN2), lses.unbind(0), init)
            return merge(out, total)
        """),
    "an LSE picked by a backend's flag stays an LSE (its conversion read)": ('error AC023', _LAYER + """
            lse = lse * LN2 if self.impl.lse_base_on_e else lse
            return merge(out, lse)
    """),
    'a default confirmed on one path only, the other unread, stays a warning': ('warning AC022', """
        import somelib
        from mylib import decode_e, reduce_default_e
        def step(q, natural):
            if natural:
                out, lse = decode_e(q)
            else:
                out, lse = somelib.attn(q)
            return reduce_default_e(out, lse)
        """),
    "a comprehension reads a flag expression again with its variable rebound (no memo)": (
        "no_error", _LAYER + """
            bs = [bool(self.impl.lse_base_on_e) == flip for flip in (False, True)]
            return combine(out, lse, is_lse_base_on_e=bs[1])
        """),
    "each element of a comprehension of a flag expression is read with its own variable": (
        "error AC023", _LAYER + """
            return [combine(out, lse, is_lse_base_on_e=(
                bool(self.impl.lse_base_on_e) == flip)) for flip in (True, False)]
        """),
}


@pytest.mark.parametrize("why", list(CASES))
def test_reviewed_case(why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``no_error``: no error at all; ``<severity> <code>``: that finding stands."""
    want, text = CASES[why]
    found = lint_json(tmp_path, capsys, "case", {"layer.py": text})
    if want == "no_error":
        assert [f for f in found if f["severity"] == "error"] == [], found
    else:
        severity, code = want.split()
        assert any(f["code"] == code and f["severity"] == severity for f in found), found


# --- constructions and callers read from the program's own calls (a later review) ----------
#: a wrapper whose ``run`` converts a base-2 LSE unless built with is_lse_base_on_e=True (the
#: default): built with False somewhere, and with the default by a way a reference scan
#: must not miss
_WRAPPER = """
    from functools import partial
    from mylib import decode, merge
    class Wrapper:
        def __init__(self, is_lse_base_on_e: bool = True):
            self._on_e = is_lse_base_on_e
        def run(self, q):
            out, lse = decode(q, return_lse=True)
            if not self._on_e:
                lse = lse * 0.6931471805599453
            return merge(out, lse)
    built = Wrapper(False)
    """

#: a reducer whose ``regroup`` builds another of its class (the line given) with the default
_REDUCER = """
    from mylib import combine, decode
    class Reducer:
        def __init__(self, group, is_lse_base_on_e: bool = True):
            self.on_e = is_lse_base_on_e
        def __call__(self, out, lse):
            return combine(out, lse, is_lse_base_on_e=self.on_e)
        def regroup(self, group):
            {regroup}
    def step(q, group, impl):
        out, lse = decode(q, return_lse=True)
        return Reducer(group, impl.lse_base_on_e).regroup(group)(out, lse)
    """

BUILT = {
    "type(w)() builds an object of w's class with the defaults": ("error AC023", {
        "layer.py": _WRAPPER + """
    def fresh(w):
        return type(w)()
    """}),
    "a base's classmethod builds cls()": ("error AC023", {"layer.py": """
    class Base:
        @classmethod
        def plain(klass):
            return klass()
    """ + _WRAPPER.replace("class Wrapper:", "class Wrapper(Base):") + """
    other = built.plain()
    """}),
    "self.__init__ run again with another value": ("error AC023", {
        "layer.py": _WRAPPER.replace("        def run(self", "        def reset(self, on_e):\n"
                                     "            self.__init__(on_e)\n        def run(self")}),
    "a class built from its name in a string": ("error AC023", {
        "layer.py": _WRAPPER, "registry.py": """
    import importlib
    def load(qualname):
        module, _, name = qualname.rpartition(".")
        return getattr(importlib.import_module(module), name)()
    plain = load("case.layer.Wrapper")
    """}),
    "a partial's keyword a call replaces": ("error AC023", {
        "layer.py": _WRAPPER.replace("built = Wrapper(False)",
                                     "make = partial(Wrapper, is_lse_base_on_e=False)\n"
                                     "    built = make(is_lse_base_on_e=True)")}),
    "a class a decorator registers, built through the registry": ("error AC023", {
        "layer.py": """
    OPS = {}
    def register(cls):
        OPS[cls.__name__] = cls
        return cls
    """ + _WRAPPER.replace("    class Wrapper:", "    @register\n    class Wrapper:") + """
    def build(name):
        return OPS[name]()
    """}),
    "a class of the same name in another module is another class": ("no_error", {
        "layer.py": """
    from mylib import combine, decode
    class Wrapper:
        def __init__(self, is_lse_base_on_e: bool = False):
            self._on_e = is_lse_base_on_e
        def run(self, q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=self._on_e)
    """, "other.py": """
    class Wrapper:
        def __init__(self, is_lse_base_on_e: bool):
            self._on_e = is_lse_base_on_e
    built = Wrapper(is_lse_base_on_e=True)
    """}),
    "a constructor's default a type(self)(...) takes stays AC021": ("warning AC021", {
        "layer.py": _REDUCER.format(regroup="return type(self)(group)")}),
    "a constructor's default the class's own type(self), held, takes stays AC021": (
        "warning AC021", {"layer.py": _REDUCER.format(
            regroup="klass = type(self)\n            return klass(group)")}),
    "getattr's default in a method also called on an unknown object stays a warning": (
        "warning AC009", {"layer.py": """
    from mylib import combine, decode
    class TwoImpl:
        lse_base_on_e = False
    class Plain:
        pass
    class Helper:
        def on_e(self, impl):
            return getattr(impl, "lse_base_on_e", True)
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=Helper().on_e(TwoImpl()))
    def step2(q, h):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=h.on_e(Plain()))
    """}),
    "getattr's default in a function a decorator registers stays a warning": ("warning AC009", {
        "layer.py": """
    from mylib import combine, decode
    HOOKS = {}
    def hook(fn):
        HOOKS[fn.__name__] = fn
        return fn
    class TwoImpl:
        lse_base_on_e = False
    class Plain:
        pass
    @hook
    def on_e(impl):
        return getattr(impl, "lse_base_on_e", False)
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=on_e(TwoImpl()))
    def step_hooked(q, name):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=HOOKS[name](Plain()))
    """}),
    "a grandparent's __post_init__ named directly runs it": ("no_error", {"layer.py": """
    import dataclasses
    from mylib import combine, decode
    @dataclasses.dataclass
    class Spec:
        kind: str
        on_e: bool = True
        def __post_init__(self):
            self.on_e = self.kind in ("fa", "mla")
    @dataclasses.dataclass
    class Mid(Spec):
        def __post_init__(self):
            pass
    @dataclasses.dataclass
    class Leaf(Mid):
        def __post_init__(self):
            Spec.__post_init__(self)
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=Leaf("fi").on_e)
    """}),
}


@pytest.mark.parametrize("why", list(BUILT))
def test_constructions_and_callers(why: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """What the program's calls say is read only where they are every way the code runs:
    ``no_error`` or the finding that stands, as in :func:`test_reviewed_case`."""
    want, files = BUILT[why]
    found = lint_json(tmp_path, capsys, "case", files)
    if want == "no_error":
        assert [f for f in found if f["severity"] == "error"] == [], found
    else:
        severity, code = want.split()
        assert any(f["code"] == code and f["severity"] == severity for f in found), found
