"""What the interpreter infers for the rules: the facts :mod:`attn_contracts.lint.edges` reads.

The interpreter (:mod:`attn_contracts.lint.interpret`) never reports a rule's finding: it
records these facts (a producer call reached, an LSE reaching a consumer, a weight in the
wrong base, a base left to a default or to dispatch, records that disagree), and the rules turn
them into findings, as astroid's inference leaves reporting to pylint's checkers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from attn_contracts.call_base import CallBase
from attn_contracts.findings import Location
from attn_contracts.lint.record_index import Consumer
from attn_contracts.lint.record_index import Producer
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import Param
from attn_contracts.lint.values import Source

__all__ = ["BaseGiven", "BoundReached", "Computed", "Disagreed", "Dispatched", "Fact", "Kernel",
           "Mixed", "Omitted", "Returned", "Use", "Weighed"]


@dataclass(frozen=True)
class Kernel:
    """A producer call reached: the record, where, and the base it returns there."""

    record: str
    name: str  # the call's last name
    where: Location
    base: str | None  # pinned base, or None (dispatch, or an expression chooses)
    dispatch: bool = False
    bases: tuple[str, ...] = ()
    choice: str = ""
    #: handed to a combine told a fixed base after a conversion, or to a state merge: that edge
    #: is judged (AC023), and says nothing about the decode LSE the class declares
    settled: bool = False


@dataclass(frozen=True)
class BaseGiven:
    """How a consumer call is told the base.

    ``kind``: ``"fixed"`` (the record's own fixed base, a literal, a default), ``"flag"`` (a
    backend's declared attribute), ``"param"`` (a parameter of the function analysed alone),
    ``"unknown"`` (an expression the linter cannot read: trusted)."""

    kind: str
    base: str | None = None
    where: Location | None = None  # where the base is written (a literal, a default), or the call
    how: str = ""  # for messages
    literal: bool = False  # written as a literal in the linted code (AC003)
    keyword: str = ""
    flag: Flag | None = None
    param: Param | None = None
    omitted: Location | None = None  # the call that left the keyword (or a wrapper's parameter) out
    table: bool = False  # a literal read from a table by a key the linter cannot see
    rebound: bool = False  # one of the values of a global a function rebinds
    #: ``"choice"``: the ways the value may tell the base (``x if c else True``, a table)
    options: tuple[BaseGiven, ...] = ()


@dataclass(frozen=True)
class Use:
    """An LSE reaching a consumer call."""

    consumer: Consumer
    given: BaseGiven
    lse: Lse
    where: Location  # the consumer call
    dispatched: bool  # inside an ``if`` on the base: the branch is the dispatch
    #: the argument is that LSE on every path the lint followed (not also something unread)
    whole: bool = True


@dataclass(frozen=True)
class Weighed:
    """An LSE exponentiated in one base (``torch.exp2(lse - m)``, a hand-written merge's
    weight): ``sources`` are its sources of the other base."""

    fn: str  # ``torch.exp2`` / ``.exp()``, as written
    name: str  # ``exp2``
    reads: str
    sources: tuple[Source, ...]
    where: Location


@dataclass(frozen=True)
class Omitted:
    """A consumer call that leaves its base keyword out and gets the default base."""

    consumer: Consumer
    keyword: str
    default: str | None
    where: Location


@dataclass(frozen=True)
class Dispatched:
    """A producer call that leaves its LSE's base to the library's run-time dispatch on some
    path."""

    producer: Producer
    call_base: CallBase
    where: Location


@dataclass(frozen=True)
class Disagreed:
    """A consumer whose records (one per library version) disagree, the versions unknown:
    only what they agree on is used."""

    consumer: Consumer
    versions: Mapping[str, str]  # the knowledge's library versions, for the message
    where: Location


@dataclass(frozen=True)
class BoundReached:
    """The analysis of a function stopped short of the whole: a bound (a budget, a value's
    size, a loop's fixpoint) was reached, and what it widened is not read."""

    function: str  # the function's name, as its ``def`` spells it
    kind: str  # which bound: "run budget", "value size", ...
    detail: str
    where: Location


@dataclass(frozen=True)
class Misconverted:
    """A conversion between the bases (``lse * ln 2``) applied to an LSE already in the base it
    converts into, whichever LSE reaches it here: what comes out is of neither base.
    ``called_at``: the call that entered the function the conversion is written in (a helper
    applied twice, or to the wrong LSE, is wrong there), None at the top of an analysis."""

    how: str  # "× ln 2", as the lint writes conversions
    target: str  # the base it converts into
    sources: tuple[Source, ...]
    where: Location
    called_at: Location | None = None


@dataclass(frozen=True)
class Returned:
    """A combine's body, read as its consumer record says it is called
    (:mod:`.contracts`), returns an LSE of another base than the record says its merged LSE
    is (the base it was given, or a fixed one): the record's callers convert by the record."""

    consumer: Consumer
    told: str  # how the call selects the base (``is_lse_base_on_e=False``); "" for a fixed one
    expected: str  # the base the record says the returned LSE is in
    source: Source  # the returned LSE of the other base
    where: Location  # the first ``return`` of it (the innermost function's)


@dataclass(frozen=True)
class Mixed:
    """A sum or difference of two LSEs each of one known base, the two bases different
    (``local_lse - final_lse`` where one was moved to base 2 and the other not): what comes
    out is in neither base's units."""

    op: str  # "+" or "-"
    left: tuple[Source, ...]
    right: tuple[Source, ...]
    where: Location


@dataclass(frozen=True)
class Computed:
    """A producer's body, read on its own (:mod:`.contracts`), hands back an LSE it computed
    in another base than its record says (``m + tl.log2(s)`` under a natural-log record): the
    callers read it by the record."""

    record: str  # the producer record
    function: str  # its function's name, for messages
    expected: str  # the base the record says
    source: Source  # the LSE of the other base it hands back
    where: Location  # where it hands it back (a ``return``, a kernel's store), else the def


#: what the interpreter infers besides the uses, for :mod:`attn_contracts.lint.edges`
Fact = Weighed | Omitted | Dispatched | Disagreed | BoundReached | Misconverted | Returned | \
    Computed | Mixed


def kernel_of(src: Source) -> Kernel | None:
    """What a producer's LSE is where it ends up (used or returned), for the class rules;
    None for what no producer record made (a parameter, a merged LSE)."""
    if not src.record or not src.key.startswith("producer:") or src.site is None:
        return None
    base = src.base if src.pinned else None
    name = src.what.partition("(")[0].removeprefix("the LSE of ").strip()
    choice = src.choice + (f", after {src.converted}" if src.converted else "")
    return Kernel(src.record, name, src.site, base, src.dispatch, src.bases, choice)
