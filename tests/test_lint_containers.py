"""The lint's interpreter follows LSEs and bases through containers (issue 37 item 1):
subscripts, star-unpacking, comprehensions, and mutation after a literal. Bug/fix pairs
(``fixtures/semantic_pairs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.semantic_pairs import HELD
from fixtures.semantic_pairs import IMPL_BASE
from fixtures.semantic_pairs import LN2
from fixtures.semantic_pairs import Pairs
from fixtures.semantic_pairs import lint_json

PAIRS = Pairs()

# --- containers ------------------------------------------------------------------------------
PAIRS.case("a list of (out, lse) pairs", {"layer.py": """
        from mylib import merge, decode
        def step(qs):
            pairs = []
            for q in qs:
                out, lse = decode(q, return_lse=True)
                pairs.append((out, lse))
            for o, l in pairs:
                merge(o, l)
        """}, {"layer.py": ("pairs.append((out, lse))", f"pairs.append((out, lse * {LN2}))")})
PAIRS.case("pairs of a list grown by append, star-unpacked into the call", {"layer.py": """
        from mylib import merge, decode
        def step(q, o2, l2):
            out, lse = decode(q, return_lse=True)
            pairs = [(out, lse)]
            pairs.append((o2, l2))
            return merge(*pairs[0])
        """}, {"layer.py": ("pairs = [(out, lse)]", f"pairs = [(out, lse * {LN2})]")})
PAIRS.case("a conditional expression decided by the literal a caller passes", {"util.py": """
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
PAIRS.case("a closure over a global reads it when called: the loop's last value", {"ops.py": """
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
PAIRS.case("a table filled in a loop over literal pairs keeps each pass's value", {"ops.py": """
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
PAIRS.case("a NamedTuple built by position keeps its field's default", {"layer.py": """
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
PAIRS.case("a dataclass field's default given by field(default=...)", {"layer.py": """
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
PAIRS.case("an in-place scaling of a view converts the view and the tensor it views", {"impl.py": """
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
PAIRS.case("a plain object's base attribute a combine is told", {"layer.py": """
        from mylib import decode, combine
        class Settings:
            lse_base_on_e = True
        SETTINGS = Settings()
        def run(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=SETTINGS.lse_base_on_e)
        """}, {"layer.py": ("lse_base_on_e = True", "lse_base_on_e = False")})
PAIRS.case("a base read in method resolution order (C3), not depth first", {"impl.py": """
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
PAIRS.case("a class decorator that sets the base", {"base.py": IMPL_BASE + """
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
PAIRS.case("a base stored on the class below its body", {"base.py": IMPL_BASE, "impl.py": """
        from base import AttentionImpl
        from mylib import decode
        class Impl(AttentionImpl):
            can_return_lse_for_decode = True
            def forward(self, q):
                return decode(q, return_lse=True)
        Impl.lse_base_on_e = True
        """}, {"impl.py": ("Impl.lse_base_on_e = True", "Impl.lse_base_on_e = False")})
PAIRS.case("a store on any subclass (cls: type[X]) leaves X's own attribute alone", {"impl.py": """
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
PAIRS.case("an if statement decided by the class attribute of the class a method runs on", {
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
PAIRS.case("`or` gives its first true operand: a False passed is not the default", {"layer.py": """
        from mylib import decode, combine
        def reduce(out, lse, on_e=None):
            return combine(out, lse, is_lse_base_on_e=on_e or True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return reduce(out, lse, on_e=False)
        """}, {"layer.py": ("on_e or True", "True if on_e is None else on_e")})
PAIRS.case("a method read without the call is true", {"layer.py": """
        from mylib import decode, combine
        class Impl:
            def base_is_e(self):
                return False
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=True if self.base_is_e else False)
        """}, {"layer.py": ("if self.base_is_e else", "if self.base_is_e() else")})
PAIRS.case("an LSE kept in a list and merged later", {"layer.py": """
        from mylib import merge, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            kept = [lse]
            return merge(out, kept[0])
        """}, {"layer.py": ("kept = [lse]", f"kept = [lse * {LN2}]")})
PAIRS.case("a comprehension over pairs", {"layer.py": """
        from mylib import merge, decode
        def step(qs):
            pairs = [decode(q, return_lse=True) for q in qs]
            lses = [l for _, l in pairs]
            return merge(pairs[0][0], lses[0])
        """}, {"layer.py": ("lses = [l for _, l in pairs]", f"lses = [l * {LN2} for _, l in pairs]")})
PAIRS.case("an LSE held in a dataclass", {"layer.py": HELD + """
        def step(q):
            out, lse = decode(q, return_lse=True)
            h = Held(out, lse)
            return merge(h.out, h.lse)
        """}, {"layer.py": ("Held(out, lse)", f"Held(out, lse * {LN2})")})

# --- mutation after definition ------------------------------------------------------------
PAIRS.case("a table changed by setitem", {"layer.py": """
        from mylib import combine, decode
        BASES = {"fi": False}
        BASES["fi"] = True
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASES["fi"])
        """}, {"layer.py": ('BASES["fi"] = True', 'BASES["fi"] = False')})
PAIRS.case("a table changed by update", {"layer.py": """
        from mylib import combine, decode
        BASES = {"fi": False}
        BASES.update(fi=True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASES["fi"])
        """}, {"layer.py": ("BASES.update(fi=True)", "BASES.update(fi=False)")})
PAIRS.case("a global rebound by a function", {"layer.py": """
        from mylib import combine, decode
        BASE_E = True
        def configure():
            global BASE_E
            BASE_E = True
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASE_E)
        """}, {"layer.py": ("    BASE_E = True", "    BASE_E = False")})
PAIRS.case("a table changed in place by a function is unknown", {"layer.py": """
        from mylib import combine, decode
        BASES = {"fi": True}
        def register(name, base_e):
            pass
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASES["fi"])
        """}, {"layer.py": ("            pass", "            BASES[name] = base_e")})
PAIRS.case("a list of bases grown by append", {"layer.py": """
        from mylib import combine, decode
        FLAGS = []
        FLAGS.append(True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=FLAGS[0])
        """}, {"layer.py": ("FLAGS.append(True)", "FLAGS.append(False)")})



# --- Python's iteration builtins and the truth of containers, as Python computes them ----------
PAIRS.told([
    ("next() of an iterator is its first element", "order = (True, False)", "next(iter(order))",
     ("next(iter(order))", "next(reversed(order))")),
    ("enumerate and zip pair elements by position", "names, flags = ('fa', 'fi'), (True, False)",
     "[f for i, (n, f) in enumerate(zip(names, flags)) if n == 'fa'][0]",
     ("if n == 'fa'", "if n == 'fi'")),
    ("dict() of (key, value) pairs", "table = dict(zip(('fa', 'fi'), (True, False)))",
     "table['fa']", ("table['fa']", "table['fi']")),
    ("not of a container is whether it is empty",
     "kept = [n for n, e in FLAGS.items() if n == 'fi' and e]", "not kept",
     ("if n == 'fi' and e]", "if n == 'fi' and not e]")),
], module='FLAGS = {"fa": True, "fi": False}')

PAIRS.case("copy.copy of a partial binds what the partial binds", {"layer.py": """
        import copy
        import functools
        from mylib import combine, decode
        REDUCE = functools.partial(combine, is_lse_base_on_e=True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            reduce = copy.copy(REDUCE)
            return reduce(out, lse)
        """}, {"layer.py": ("is_lse_base_on_e=True)", "is_lse_base_on_e=False)")})

PAIRS.case("a dict comprehension over nested fors keeps a key's last value", {"layer.py": """
        from mylib import combine, decode
        GROUPS = ((("fi", "mla"), False), (("fa", "mla"), True))
        BASE_E = {name: on_e for names, on_e in GROUPS for name in names}
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASE_E.get("mla", True))
        """}, {"layer.py": ('(("fa", "mla"), True)', '(("fa",), True)')}, quiet=True)
PAIRS.case("isinstance of a constant is Python's answer (a bool is an int)", {"layer.py": """
        from mylib import combine, decode
        def as_flag(base):
            if isinstance(base, (int, float)):
                return base != 2
            return base
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=as_flag(False))
        """}, {"layer.py": ("isinstance(base, (int, float))",
                            "isinstance(base, (int, float)) and not isinstance(base, bool)")},
    quiet=True)

PAIRS.case("an LSE stored into part of a tensor is held by the tensor", {"layer.py": """
        import torch
        from mylib import merge, decode
        def step(q):
            out, lse = decode(q, return_lse=True)
            packed = torch.empty(lse.shape[0], 2)
            packed[:, 0] = lse
            return merge(out, packed[:, 0])
        """}, {"layer.py": ("packed[:, 0] = lse", f"packed[:, 0] = lse * {LN2}")}, quiet=True)
PAIRS.case("a helper that copies an LSE into its argument changes the caller's tensor", {
    "layer.py": """
        import torch
        from mylib import merge, decode
        def stage(src, dst):
            dst.copy_(src)
        def step(q):
            out, lse = decode(q, return_lse=True)
            staged = torch.empty_like(lse)
            stage(lse, staged)
            return merge(out, staged)
        """}, {"layer.py": ("stage(lse, staged)", f"stage(lse * {LN2}, staged)")}, quiet=True)

PAIRS.case("a Triton kernel's tl.store writes the tensor its pointer argument points into", {
    "layer.py": """
        import torch
        import triton
        import triton.language as tl
        from mylib import merge, decode
        @triton.jit
        def _pack(lse_ptr, dst_ptr, stride, BLOCK: tl.constexpr):
            i = tl.program_id(0)
            dst = dst_ptr + i * stride
            tl.store(dst, tl.load(lse_ptr + i))
        def pack(lse, dst):
            _pack[(lse.shape[0],)](lse, dst, dst.stride(0), BLOCK=1)
        def step(q):
            out, lse = decode(q, return_lse=True)
            packed = torch.empty(lse.shape[0], 2)
            pack(lse, packed[:, 0])
            return merge(out, packed[:, 0])
        """}, {"layer.py": ("pack(lse, packed", f"pack(lse * {LN2}, packed")}, quiet=True)

PAIRS.case("an LSE exchanged by a library's all-to-all comes back of its base", {"layer.py": """
        import torch
        from flashinfer.comm.dcp_alltoall import decode_cp_a2a_alltoall
        from mylib import merge, decode
        def step(q, workspace):
            out, lse = decode(q, return_lse=True)
            stats = torch.empty(lse.shape[0], 2)
            stats[:, 0] = lse
            out_x, stats_x = decode_cp_a2a_alltoall(out, stats, workspace, 0, 2)
            return merge(out_x, stats_x[:, 0])
        """}, {"layer.py": ("stats[:, 0] = lse", f"stats[:, 0] = lse * {LN2}")}, quiet=True)

PAIRS.case("itertools.zip_longest pads the shorter tuple with its fillvalue", {"layer.py": """
        import itertools
        from mylib import combine, decode
        NAMES = ("fa", "fa3", "fi")
        BASE_E = dict(itertools.zip_longest(NAMES, (True, True), fillvalue=True))
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=BASE_E["fi"])
        """}, {"layer.py": ("fillvalue=True", "fillvalue=False")}, quiet=True)
PAIRS.case("itertools.takewhile stops at the first element its predicate refuses", {"layer.py": """
        import itertools
        from mylib import combine, decode
        PAIRS = (("fa", True), ("fi", False), ("fa3", True))
        NATURAL = frozenset(n for n, e in itertools.takewhile(lambda p: p[1], PAIRS))
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e="fa3" not in NATURAL)
        """}, {"layer.py": ('"fa3" not in NATURAL', '"fi" in NATURAL')}, quiet=True)
PAIRS.case("math's constants and functions are the numbers Python computes", {"layer.py": """
        import math
        from mylib import combine, decode
        class Impl:
            lse_log = 2.0
            def step(self, q):
                out, lse = decode(q, return_lse=True)
                return combine(out, lse, is_lse_base_on_e=int(math.e) == int(self.lse_log))
        """}, {"layer.py": ("int(math.e) == int(self.lse_log)",
                            "not math.isclose(self.lse_log, 2)")}, quiet=True)
PAIRS.case("zip(..., strict=True) pairs as zip does when the lengths agree", {"layer.py": """
        from mylib import combine, decode
        NAMES = ("fa", "fi")
        NATURAL = (True, True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            table = dict(zip(NAMES, NATURAL, strict=True))
            return combine(out, lse, is_lse_base_on_e=table.get("fi", False))
        """}, {"layer.py": ("NATURAL = (True, True)", "NATURAL = (True, False)")}, quiet=True)
PAIRS.case("enumerate(t, start) counts from start", {"layer.py": """
        from mylib import combine, decode
        NAMES = ("fa", "fi", "fa3")
        NATURAL = (True, False, True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            i, name = tuple(enumerate(NAMES, 1))[1]
            return combine(out, lse, is_lse_base_on_e=NATURAL[i])
        """}, {"layer.py": ("NATURAL[i])", "NATURAL[i - 1])")}, quiet=True)
PAIRS.case("a defaultdict's factory answers a key it lacks where indexed", {"layer.py": """
        from collections import defaultdict
        from mylib import combine, decode
        NATURAL = defaultdict(lambda: True, {"fa": True})
        def step(q, name="fi"):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=NATURAL["fi"])
        """}, {"layer.py": ('{"fa": True}', '{"fa": True, "fi": False}')}, quiet=True)
PAIRS.case("a defaultdict's .get never calls its factory", {"layer.py": """
        import collections
        from mylib import combine, decode
        NATURAL = collections.defaultdict(bool, fa=True)
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=NATURAL.get("fi", True))
        """}, {"layer.py": ('NATURAL.get("fi", True)', 'NATURAL["fi"]')}, quiet=True)
PAIRS.case("a dict key is the value Python hashes it as (True == 1)", {"layer.py": """
        from mylib import combine, decode
        NATURAL = {0: False, 1.0: True}
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=NATURAL.get(True, False))
        """}, {"layer.py": ("1.0: True", "1.0: False")}, quiet=True)

@pytest.mark.parametrize("name", PAIRS.names())
def test_bug_is_an_error_and_fix_is_clean(name: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    PAIRS.check(name, tmp_path, capsys)


def test_a_decorator_of_another_file_is_named_at_its_line(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The store a decorator from another module makes is shown in the class's file by the
    decorator's line (the line of the class statement that changed the class), not by the
    ``class`` line below it, which shows only the body's value."""
    files, _ = PAIRS.cases["a class decorator that sets the base"]
    found = [f for f in lint_json(tmp_path, capsys, "bug", files) if f["severity"] == "error"]
    where = {(Path(str(f["path"])).name, f["line"]) for f in found}
    assert ("impl.py", 4) in where, found  # the decorator; the class line is 5


FOREIGN_TABLE = {"tables.py": """
        NATURAL = ["fa", "fa3"]
        """, "layer.py": """
        from mylib import combine, decode
        from tables import NATURAL
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e="fi" not in NATURAL)
        """}


@pytest.mark.parametrize(("plugin", "errors"), [
    (None, 1),  # nothing else changes it: its literal, and "fi" is not in it (base e told)
    ("from tables import NATURAL\nNATURAL.append('fi')\n", 0),
    ("from tables import NATURAL\ndef load():\n    NATURAL[0] = 'fi'\n", 0),
    ("from tables import OTHER\nOTHER.append('fi')\n", 1),  # another name: not this table
    # a comment, a local of the same name, another object's attribute: not this table
    ("from tables import NATURAL\n# NATURAL.append('fi')\n", 1),
    ("from tables import NATURAL\ndef f():\n    NATURAL = []\n    NATURAL.append('fi')\n", 1),
    ("from tables import NATURAL\nclass C:\n    def f(self):\n        self.NATURAL.append(1)\n", 1),
    ("from tables import NATURAL as N\nN += ['fi']\n", 0),  # a list's += changes it in place
])
def test_a_table_another_module_changes_is_not_its_literal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plugin: str | None,
        errors: int) -> None:
    """A module-level list another module imports and changes in place (at its import, or in
    a function) holds at run time what that module did too: not read (a warning), never its
    literal (a false error)."""
    files = dict(FOREIGN_TABLE)
    if plugin is not None:
        files["plugin.py"] = plugin
    found = [f for f in lint_json(tmp_path, capsys, "t", files) if f["severity"] == "error"]
    assert len(found) == errors, found


@pytest.mark.parametrize(("table", "plugin", "errors"), [
    # ``|=`` of a frozenset (or ``+=`` of a tuple) rebinds the importer's name to a copy: the
    # table the layer reads is unchanged, and "fi" is not in it (base e told, an error)
    ('frozenset({"fa", "fa3"})', "N |= {'fi'}\nN.add('x')\n", 1),
    ('("fa", "fa3")', "N += ('fi',)\n", 1),
    # of a set or a list it changes the table in place: "fi" may be in it (not read)
    ('{"fa", "fa3"}', "N |= {'fi'}\n", 0),
    ('["fa", "fa3"]', "N += ['fi']\n", 0),
    # what the table is built by is not known: not read
    ('make({"fa", "fa3"})', "N |= {'fi'}\n", 0),
])
def test_an_importer_rebinding_an_immutable_table_leaves_it_as_it_was(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, plugin: str,
        errors: int) -> None:
    files = dict(FOREIGN_TABLE)
    files["tables.py"] = f"from elsewhere import make\nNATURAL = {table}\n"
    files["plugin.py"] = "from tables import NATURAL as N\n" + plugin
    found = [f for f in lint_json(tmp_path, capsys, "t", files) if f["severity"] == "error"]
    assert len(found) == errors, found


@pytest.mark.parametrize(("table", "errors"), [
    # a factory that reads a name is called at the lookup, with what the name holds then
    ("default = True\nNATURAL = defaultdict(lambda: default)\ndefault = False\n", 0),
    # a factory replaced after the table is built
    ("NATURAL = defaultdict(lambda: True)\nNATURAL.default_factory = bool\n", 0),
    ("NATURAL = defaultdict(lambda: True)\n", 1),  # the factory's constant: base e told
])
def test_a_defaultdict_factory_is_read_only_where_its_value_is_sure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, errors: int) -> None:
    """A missing key of a ``defaultdict`` reads its factory's value where that value is the
    same whenever it is called (a builtin type, a lambda of a constant) and nothing replaces
    the factory; else it is not read (a warning), never a wrong literal."""
    body = "".join(f"        {line}\n" for line in table.splitlines())
    files = {"layer.py": f"""
        from collections import defaultdict
        from mylib import combine, decode
{body}        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=NATURAL["fi"])
        """}
    found = [f for f in lint_json(tmp_path, capsys, "t", files) if f["severity"] == "error"]
    assert len(found) == errors, found
