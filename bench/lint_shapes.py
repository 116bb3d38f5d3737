"""A generated benchmark of ``attn-contracts lint`` (issue 37 item 6): producer × carrier × hops ×
consumer, each combination written as a bug and its fix, from Python's semantics alone.

Every combination is two small packages under one root, linted together with the records below:

- **producer** (``source.py``): a kernel whose record fixes base 2, returned as ``(out, lse)``
  (``fixed``), one whose base its keyword picks (``keyword``, ``lse_base="log2"``, or read
  from a table by ``dict.get`` with a default), or one that writes an ``lse=`` buffer the caller
  allocated (``buffer``);
- **hops** 1-3: the pair handed on through functions in other modules, every second one a method
  of a class;
- **carrier**: how the last hop hands the LSE to the consumer (each shape of issue 37 item 1:
  ``**kwargs``, ``*args``, a partial, a closure, a lambda, a generator, star-unpacking, a list of
  pairs, a list kept and read later, a comprehension, a dataclass, a NamedTuple, a dict, an
  instance attribute, ``getattr(module, name)``, a ``torch.ops`` custom-op wrapper);
- **consumer** (``sink.py``): a base-e combine (``merge``), or a combine told its base
  (``combine(..., is_lse_base_on_e=...)``), the base written as a literal, an attribute, a
  helper's default (positional or keyword-only), a positional argument, a table value, or carried
  to it by ``**kwargs``, a partial, a closure, a dataclass or NamedTuple field given to the
  constructor over the field's default, an Enum's ``.value``, a property, an instance attribute
  set in ``__init__`` over the class's, ``dict.get``, a table changed after its literal, or a
  method picked by ``getattr(self, name)``.

The bug tells the consumer base e (or converts nothing); the fix tells it base 2 (or converts
with ``× ln 2``). The bug must be an error; the fix must have none. Recall as errors and fixes
flagged are reported per carrier (goal: 100 % and 0).

    python bench/lint_shapes.py                # every combination, a table on stdout
    python bench/lint_shapes.py --markdown bench/results/lint-shapes.md
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from attn_contracts.lint import main as lint_main
from fixtures.records import consumer_toml
from fixtures.records import producer_toml

RECORDS = "".join([
    producer_toml("mylib.decode", "mylib.decode", "2",
                  call='when = { return_lse = "True" }, lse_index = 1, lse_out = ["lse"]'),
    producer_toml("mylib.decode_kw", "mylib.decode_kw", "2",
                  call="""lse_index = 1, base = { keyword = "lse_base", values = { "'log2'" = "2", """
                       """"'ln'" = "e" }, unset = [], default = "2" }"""),
    consumer_toml("mylib.merge", "mylib.merge", '{ kind = "fixed", base = "e" }'),
    consumer_toml("mylib.combine", "mylib.combine", '{ kind = "keyword", keyword = '
                  '"is_lse_base_on_e", values = { "True" = "e", "False" = "2" } }'),
])

# the library the records describe, in the linted tree (so a positional base binds by its
# signature, as a combine of the engine's own does)
MYLIB = """
def decode(q, return_lse=False, lse=None):
    return q, lse

def decode_kw(q, lse_base="log2"):
    return q, q

def merge(out, lse):
    return out

def combine(out, lse, group=None, is_lse_base_on_e=True):
    return out
"""

LN2 = "0.6931471805599453"

PRODUCERS = {
    "fixed": """
        from mylib import decode

        def produce(q):
            out, lse = decode(q, return_lse=True)
            return out, lse
        """,
    "keyword": """
        from mylib import decode_kw

        def produce(q):
            return decode_kw(q, lse_base="log2")
        """,
    "keyword from a table": """
        from mylib import decode_kw

        MODES = {"fi": "log2", "fa": "log2"}

        def produce(q, backend="fi"):
            return decode_kw(q, lse_base=MODES.get(backend, "log2"))
        """,
    "buffer": """
        import torch
        from mylib import decode

        def produce(q):
            lse = torch.empty(8, 4)
            out, _ = decode(q, return_lse=True, lse=lse)
            return out, lse
        """,
}

# the consumer: (sink.py text with {E} for the base-e spelling and {CONV} for a conversion);
# the bug fills E = True / CONV = "", the fix E = False / CONV = " * ln 2"
CONSUMERS = {
    "fixed-base merge": """
        from mylib import merge

        def reduce(out, lse):
            return merge(out, lse{CONV})
        """,
    "literal": """
        from mylib import combine

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e={E})
        """,
    "attribute": """
        from mylib import combine

        class Setting:
            def __init__(self, base_e):
                self.base_e = base_e

        SETTING = Setting({E})

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=SETTING.base_e)
        """,
    "default": """
        from mylib import combine

        def reduce(out, lse, base_e={E}):
            return combine(out, lse, is_lse_base_on_e=base_e)
        """,
    "positional": """
        from mylib import combine

        def reduce(out, lse):
            return combine(out, lse, None, {E})
        """,
    "table": """
        from mylib import combine

        BASE_E = {{"fa": True, "fi": {E}}}

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=BASE_E["fi"])
        """,
    "keyword-only default": """
        from mylib import combine

        def reduce(out, lse, *, base_e={E}):
            return combine(out, lse, is_lse_base_on_e=base_e)
        """,
    "**kwargs": """
        from mylib import combine

        def forward(out, lse, **kwargs):
            return combine(out, lse, **kwargs)

        def reduce(out, lse):
            return forward(out, lse, is_lse_base_on_e={E})
        """,
    "partial": """
        import functools
        from mylib import combine

        def reduce(out, lse):
            return functools.partial(combine, is_lse_base_on_e={E})(out, lse)
        """,
    "closure": """
        from mylib import combine

        def bind(base_e):
            def run(out, lse):
                return combine(out, lse, is_lse_base_on_e=base_e)
            return run

        def reduce(out, lse):
            return bind({E})(out, lse)
        """,
    "dataclass field": """
        from dataclasses import dataclass
        from mylib import combine

        @dataclass(frozen=True)
        class Setting:
            name: str
            base_e: bool = {NOT_E}

        def reduce(out, lse):
            setting = Setting("fi", base_e={E})
            return combine(out, lse, is_lse_base_on_e=setting.base_e)
        """,
    "NamedTuple field": """
        from typing import NamedTuple
        from mylib import combine

        class Setting(NamedTuple):
            name: str
            base_e: bool = {NOT_E}

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=Setting("fi", {E}).base_e)
        """,
    "Enum value": """
        import enum
        from mylib import combine

        class Base(enum.Enum):
            NATURAL = True
            TWO = False

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=Base.{ENUM}.value)
        """,
    "property": """
        from mylib import combine

        class Setting:
            @property
            def base_e(self):
                return {E}

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=Setting().base_e)
        """,
    "instance over class attribute": """
        from mylib import combine

        class Setting:
            base_e = {NOT_E}

            def __init__(self):
                self.base_e = {E}

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=Setting().base_e)
        """,
    "dict.get": """
        from mylib import combine

        BASE_E = {{"fi": {E}}}

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=BASE_E.get("fi", {NOT_E}))
        """,
    "table changed by setitem": """
        from mylib import combine

        BASE_E = {{"fi": {NOT_E}}}
        BASE_E["fi"] = {E}

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=BASE_E["fi"])
        """,
    "table changed by update": """
        from mylib import combine

        BASE_E = {{"fi": {NOT_E}}}
        BASE_E.update({{"fi": {E}}})

        def reduce(out, lse):
            return combine(out, lse, is_lse_base_on_e=BASE_E["fi"])
        """,
    "getattr(self, name)": """
        from mylib import combine

        CHOSEN = "{METHOD}"

        class Combiner:
            def natural(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=True)

            def base2(self, out, lse):
                return combine(out, lse, is_lse_base_on_e=False)

            def __call__(self, out, lse):
                return getattr(self, CHOSEN)(out, lse)

        def reduce(out, lse):
            return Combiner()(out, lse)
        """,
}

# how the last hop hands (out, lse) to sink.reduce: the body of ``deliver(out, lse)``, and any
# module-level helpers it needs
CARRIERS: dict[str, tuple[str, str]] = {
    "direct": ("", "return sink.reduce(out, lse)"),
    "**kwargs": ("""
        def forward(**kwargs):
            return sink.reduce(**kwargs)
        """, "return forward(out=out, lse=lse)"),
    "*args": ("""
        def forward(*args):
            return sink.reduce(*args)
        """, "return forward(out, lse)"),
    "partial": ("import functools\n", "return functools.partial(sink.reduce, out)(lse)"),
    "closure": ("""
        def bind(lse):
            def run(out):
                return sink.reduce(out, lse)
            return run
        """, "return bind(lse)(out)"),
    "lambda": ("", "run = lambda o, l: sink.reduce(o, l)\n    return run(out, lse)"),
    "generator": ("""
        def pairs(out, lse):
            yield out, lse
        """, "for o, l in pairs(out, lse):\n        return sink.reduce(o, l)"),
    "star-unpacking": ("", "first, *rest = (out, lse)\n    return sink.reduce(first, rest[0])"),
    "list of pairs": ("", "kept = []\n    kept.append((out, lse))\n"
                      "    for o, l in kept:\n        return sink.reduce(o, l)"),
    "list read later": ("", "kept = [out]\n    kept.append(lse)\n"
                        "    return sink.reduce(kept[0], kept[-1])"),
    "comprehension": ("", "lses = [x for x in (lse,)]\n    return sink.reduce(out, lses[0])"),
    "dict": ("", "state = {'out': out, 'lse': lse}\n"
             "    return sink.reduce(state['out'], state['lse'])"),
    "dataclass": ("""
        import dataclasses

        @dataclasses.dataclass
        class Partial:
            out: object
            lse: object
        """, "p = Partial(out, lse)\n    return sink.reduce(p.out, p.lse)"),
    "NamedTuple": ("""
        from typing import NamedTuple

        class Partial(NamedTuple):
            out: object
            lse: object
        """, "p = Partial(out=out, lse=lse)\n    return sink.reduce(p.out, p.lse)"),
    "instance attribute": ("""
        class Holder:
            def __init__(self, lse):
                self.lse = lse
        """, "h = Holder(lse)\n    return sink.reduce(out, h.lse)"),
    "getattr(module, name)": ("NAME = 'reduce'\n", "return getattr(sink, NAME)(out, lse)"),
    "torch.ops wrapper": ("""
        import torch

        @torch.library.custom_op("{PKG}::reduce_op", mutates_args=())
        def reduce_op(out: torch.Tensor, lse: torch.Tensor) -> torch.Tensor:
            return sink.reduce(out, lse)
        """, "return torch.ops.{PKG}.reduce_op(out, lse)"),
}


@dataclass(frozen=True)
class Combo:
    producer: str
    carrier: str
    hops: int
    consumer: str

    def package(self, n: int, kind: str) -> str:
        return f"case{n:04d}_{kind}"


def _write(root: Path, pkg: str, combo: Combo, bug: bool) -> None:
    """The package of one combination: source.py → hop1..hopN → sink.py."""
    d = root / pkg
    d.mkdir(parents=True)
    (d / "__init__.py").write_text("")
    (d / "source.py").write_text(textwrap.dedent(PRODUCERS[combo.producer]))
    sink = textwrap.dedent(CONSUMERS[combo.consumer]).format(
        E="True" if bug else "False", NOT_E="False" if bug else "True",
        CONV="" if bug else f" * {LN2}", ENUM="NATURAL" if bug else "TWO",
        METHOD="natural" if bug else "base2")
    (d / "sink.py").write_text(sink)
    helpers, body = CARRIERS[combo.carrier]
    helpers = textwrap.dedent(helpers).replace("{PKG}", pkg)
    body = body.replace("{PKG}", pkg)
    for i in range(1, combo.hops + 1):
        last = i == combo.hops
        nxt = f"hop{i + 1}"
        imports = f"from {pkg} import sink\n" if last else f"from {pkg} import {nxt}\n"
        if i == 1:
            imports += f"from {pkg} import source\n"
        call_next = (f"{nxt}.Hop().step(out, lse)" if (i + 1) % 2 == 0 else
                     f"{nxt}.step(out, lse)") if not last else ""
        inner = body if last else f"return {call_next}"
        if i % 2 == 0:  # a method of a class
            fn = ("class Hop:\n    def step(self, out, lse):\n        "
                  + inner.replace("\n    ", "\n        ") + "\n")
        else:
            fn = f"def step(out, lse):\n    {inner}\n"
        text = imports + (helpers if last else "") + "\n" + fn
        if i == 1:
            text += "\n\ndef run(q):\n    out, lse = source.produce(q)\n    return step(out, lse)\n"
        (d / f"hop{i}.py").write_text(text)


def combos(carriers: Sequence[str] | None = None) -> list[Combo]:
    return [Combo(p, c, h, k) for p, c, h, k in itertools.product(
        PRODUCERS, carriers or CARRIERS, (1, 2, 3), CONSUMERS)]


def measure(selected: list[Combo]) -> dict[str, dict[str, object]]:
    """Lint every bug and fix package at once; per carrier: combinations, bugs found as
    errors, fixes with an error, and the combinations missed or flagged."""
    with tempfile.TemporaryDirectory(prefix="lint-shapes-") as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        (root / "mylib.py").write_text(MYLIB)
        for n, combo in enumerate(selected):
            _write(root, combo.package(n, "bug"), combo, True)
            _write(root, combo.package(n, "fix"), combo, False)
        records = Path(tmp) / "records.toml"
        records.write_text(RECORDS)
        out = Path(tmp) / "out.json"
        lint_main([str(root), "--records", str(records), "--format", "json",
                   "--output-file", str(out), "--exit-zero"])
        found = json.loads(out.read_text())
    errors: set[str] = set()
    for f in found:
        if f["severity"] == "error":
            errors.add(Path(str(f["path"])).relative_to(root).parts[0])
    table: dict[str, dict[str, object]] = {}
    for n, combo in enumerate(selected):
        row = table.setdefault(combo.carrier, {"n": 0, "found": 0, "flagged": 0,
                                               "missed": [], "false": []})
        row["n"] = int(str(row["n"])) + 1
        name = f"{combo.producer}/hops={combo.hops}/{combo.consumer}"
        if combo.package(n, "bug") in errors:
            row["found"] = int(str(row["found"])) + 1
        else:
            row["missed"].append(name)  # type: ignore[attr-defined]
        if combo.package(n, "fix") in errors:
            row["flagged"] = int(str(row["flagged"])) + 1
            row["false"].append(name)  # type: ignore[attr-defined]
    return table


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--carrier", action="append", choices=sorted(CARRIERS),
                    help="only these carriers (repeatable)")
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    table = measure(combos(args.carrier))
    out = Table(title="lint shapes: bug found as an error / fix flagged, per carrier")
    for col in ("carrier", "combinations", "bugs as errors", "fixes flagged", "missed (first 3)"):
        out.add_column(col)
    lines = ["| carrier | combinations | bugs as errors | fixes flagged | missed or flagged |",
             "|---|---|---|---|---|"]
    total = [0, 0, 0]
    for carrier, row in table.items():
        n, hit, bad = (int(str(row[k])) for k in ("n", "found", "flagged"))
        total = [total[0] + n, total[1] + hit, total[2] + bad]
        missed = list(row["missed"]) + [f"flagged: {x}" for x in row["false"]]  # type: ignore[call-overload]
        out.add_row(carrier, str(n), f"{hit} ({100 * hit / n:.0f} %)", str(bad),
                    "; ".join(missed[:3]))
        lines.append(f"| {carrier} | {n} | {hit} ({100 * hit / n:.0f} %) | {bad} | "
                     f"{'; '.join(missed[:6]) or '-'}{' …' if len(missed) > 6 else ''} |")
    n, hit, bad = total
    out.add_row("all", str(n), f"{hit} ({100 * hit / n:.0f} %)", str(bad), "")
    lines.append(f"| **all** | {n} | {hit} ({100 * hit / n:.0f} %) | {bad} | |")
    Console().print(out)
    if args.markdown is not None:
        args.markdown.write_text(
            "# lint shapes (issue 37 item 6)\n\n"
            f"`python bench/lint_shapes.py --markdown {args.markdown}`: producers "
            f"{', '.join(PRODUCERS)} × {len(CARRIERS)} carriers × hops 1-3 × consumers "
            f"{', '.join(CONSUMERS)}; each a bug (an error wanted) and its fix (none wanted), "
            "linted together.\n\n" + "\n".join(lines) + "\n")
    return 0 if hit == n and bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
