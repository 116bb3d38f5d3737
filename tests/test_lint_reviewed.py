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
