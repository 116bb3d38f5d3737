"""Rank consensus at startup: every DCP rank must combine with the same contract.

Each rank publishes a report (its records, chosen backend, DCP settings and its own findings)
through the process group's key-value store, not a collective, so that a rank that died, hung or
never joined ends the others with a clear error within ``timeout_s`` instead of a hang until the
collective timeout. The verdict is decided once for the group, so no rank passes while another
fails:

1. A rank first reads the group's decision key: a late rank finds the verdict made and follows it.
2. Otherwise it writes its report and polls until every report is there (verdict: the union of
   all findings, plus ``AC007`` naming each differing field) or its deadline passes (verdict:
   ``AC007`` "rank(s) X did not report"), or until another rank has decided (if ranks are
   missing, an on-time rank still returns no sooner than its own deadline).
3. It proposes its verdict with an atomic ``compare_set`` on the decision key; the first proposal
   wins, and every rank follows the value stored there.
4. A rank that read a verdict made from every rank's report (passing or failing) waits (briefly)
   until every rank has read it: the store may live in one of them (a ``TCPStore`` on rank 0), and
   a host that left at once (an engine stops every rank at the first failure) would leave the
   others without the verdict.

A rank that fails before it can publish its report (the engine's own check raised, a bad setting)
says so instead (:func:`report_failure`, :func:`tell_peers`): it proposes a failing verdict whose
first finding is its cause (``AC007`` "rank 1 failed vLLM's own check: AssertionError: ..."), so
every peer fails at once with that cause, not after ``timeout_s`` with "rank 1 did not report"; it
waits (briefly) until the peers have read it, as a passing verdict does, then re-raises its own error.

A caller with slow work before its report (an engine deriving what it checks) opens its round
first (:func:`open_round`): the round and its deadline are fixed before that work, the rank marks
itself started (a peer that times out names it "started, not reported" rather than "never
started"), and a failure during the work is told in that round. Until it reports, the rank says
it is alive a few times a second; a peer past its deadline waits for a rank whose beat still
moves (slow work on a loaded machine is no reason to refuse a start), up to a bound, and a rank
whose beat stopped (frozen, dead) ends the peers' wait within seconds. Once it has acted on the verdict
(logged it), a rank of such a round says so and waits, briefly, until every rank has
(:meth:`Opened.finish`): an engine stops every rank as soon as one raises, and a peer that read
the verdict a moment later must still have said why it stops. A rank that cannot check at all
(a fault of the checker, not of the contract) abstains (:meth:`Opened.abstain`): its peers stop
waiting for it and each is judged on its own findings, so a guest's own fault never refuses a
start.

A rank that loses the store (its host exited, died or froze; each store call has a hard limit)
fails with ``AC007`` "the store became unreachable": it cannot learn the verdict, so it fails, and
no rank can pass without its report. Left open: a host that dies (not exits) in the milliseconds
between a passing verdict and the last rank reading it strands that rank with ``AC007``.

torch is imported inside the functions: the contract package stays importable without it.
"""

from __future__ import annotations

import contextlib
import enum
import json
import threading
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import TypeVar

from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import error_text
from attn_contracts.records import CapabilityRecord

__all__ = ["Opened", "agree_across_ranks", "fingerprint", "open_round", "rank_in", "report_failure",
           "tell_peers"]

_round: dict[tuple[int, ...], int] = {}  # per group: how many consensus rounds this rank ran
_POLL_S = 0.02
_READ_GRACE_S = 0.75  # how long a passing rank waits for the others to read the verdict, at least
# One store call answers in milliseconds, a frozen host never: a second leaves room for a loaded
# machine, and with the grace keeps every rank within timeout_s + 2 s.
_OP_LIMIT_S = 1.0
# How long a rank that failed before reporting waits for its peers to read why, at most: peers that
# reach the exchange within it fail with the cause; a later one finds the verdict too, unless the
# failed rank hosted the store and has exited by then (it is then told the store is gone).
_FAILURE_LINGER_S = 10.0
# A rank doing slow work after opening its round (deriving what it checks, on a loaded machine)
# says it is alive every _BEAT_S; a peer past its deadline keeps waiting for a rank whose beat
# moved within _STALE_S, up to _SLOW_MAX_S past the deadline. A slow rank is not a dead one: a
# start is never refused because a machine is busy, and a frozen or dead rank (its beat stops)
# still ends the others within _STALE_S of their deadline.
_BEAT_S = 0.5
_STALE_S = 5.0
_SLOW_MAX_S = 300.0
_TOLD = "__attn_contracts_told_peers__"  # set on an exception whose rank has told its peers
_T = TypeVar("_T")


class _StoreLost(Exception):
    """A store call failed: the store's host is gone or unreachable."""


def fingerprint(records: Sequence[CapabilityRecord | ConsumerRecord],
                chosen: CapabilityRecord | None,
                world_size: int, settings: Mapping[str, Any] | None,
                collective: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """What ranks must agree on, as JSON values: every record (all fields), the chosen backend,
    the DCP world size and the settings (compared by value: ``torch.bfloat16`` is
    ``"bfloat16"``, a tuple is a list, a pydantic model is its ``model_dump(mode="json")``), and
    per collective consumer (``collective``: name → what it needs identical, with
    ``on_mismatch`` saying what a difference does) the values this rank passes it."""
    return {
        "collective": {str(name): {"on_mismatch": str(c.get("on_mismatch", "wrong")),
                                   "values": {str(k): _setting_value(str(k), v)
                                              for k, v in dict(c.get("values", {})).items()}}
                       for name, c in sorted((collective or {}).items())},
        "records": {_key(r): r.model_dump(mode="json")
                    for r in sorted(set(records), key=_key)},
        "backend": None if chosen is None else {"name": chosen.name,
                                                "record": chosen.model_dump(mode="json")},
        "world_size": world_size,
        "settings": {str(k): _setting_value(str(k), v) for k, v in (settings or {}).items()},
    }


def _setting_value(key: str, value: Any) -> Any:
    if type(value).__name__ == "dtype" and str(value).startswith("torch."):
        return str(value).removeprefix("torch.")  # a typed setting and its name are one value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as err:
        raise TypeError(f"setting {key!r} must be a JSON value (str, number, bool, None, list, "
                        f"dict), a torch.dtype or a pydantic model; found "
                        f"{type(value).__name__} {value!r}") from err


# ---- differences, named by field ----------------------------------------------------------------

_MISSING = object()


def _differences(prints: dict[int, dict[str, Any]]) -> list[str]:
    """Human lines naming each differing field and which ranks hold which value."""
    lines = []
    lines += _differ("world_size", {r: p["world_size"] for r, p in prints.items()})
    backends = {r: p["backend"] for r, p in prints.items()}
    lines += _differ("backend", {r: b and b["name"] for r, b in backends.items()})
    names = sorted({n for p in prints.values() for n in p["records"]})
    for name in names:
        lines += _record_differences(f"record {name}", {r: p["records"].get(name, _MISSING)
                                                        for r, p in prints.items()})
    lines += _backend_record_differences(prints)
    keys = sorted({k for p in prints.values() for k in p["settings"]})
    for key in keys:
        lines += _differ(f"setting {key}", {r: p["settings"].get(key, _MISSING)
                                            for r, p in prints.items()})
    return lines


def _collective_differences(prints: dict[int, dict[str, Any]]) -> tuple[list[str], set[str]]:
    """Lines naming each value a collective consumer needs identical that ranks pass
    differently (a rank that does not call the consumer at all differs too), and what a
    difference does there (``hang``, ``wrong``, ``error``)."""
    lines: list[str] = []
    effects: set[str] = set()
    names = sorted({n for p in prints.values() for n in p.get("collective", {})})
    for name in names:
        held = {r: p.get("collective", {}).get(name, _MISSING) for r, p in prints.items()}
        off = [r for r, c in sorted(held.items()) if c is _MISSING]
        effect = next(c["on_mismatch"] for c in held.values() if c is not _MISSING)
        if off:
            on = [r for r in sorted(held) if r not in off]
            lines.append(f"{name}: called on rank(s) {','.join(map(str, on))}, not on rank(s) "
                         f"{','.join(map(str, off))}")
            effects.add(effect)
            continue
        keys = sorted({k for c in held.values() for k in c["values"]})
        for key in keys:
            found = _differ(f"{name} {key}", {r: c["values"].get(key, _MISSING)
                                              for r, c in held.items()})
            if found:
                lines += found
                effects.add(effect)
    return lines, effects


_EFFECT = {"hang": "the call would hang (its kernel waits for peers' writes that never come "
                   "matching; FlashInfer does not detect it on the host, flashinfer #4586)",
           "wrong": "the merge would read slices laid out for another rank's plan",
           "error": "the library would raise on some ranks and not others"}


def _backend_record_differences(prints: dict[int, dict[str, Any]]) -> list[str]:
    """The chosen record's fields, when every rank names the same backend and the record lines
    do not already cover it (a backend passed as a record, not among the records)."""
    backends = [p["backend"] for p in prints.values()]
    if backends[0] is None or any(b is None or b["name"] != backends[0]["name"] for b in backends):
        return []
    name = backends[0]["name"]
    if all(p["records"].get(name) == p["backend"]["record"] for p in prints.values()):
        return []
    return _record_differences(f"backend {name}", {r: p["backend"]["record"]
                                                   for r, p in prints.items()})


def _record_differences(what: str, dumps: dict[int, Any]) -> list[str]:
    off = [r for r, d in sorted(dumps.items()) if d is _MISSING]
    if off:
        on = [r for r in sorted(dumps) if r not in off]
        return [f"{what}: on rank(s) {','.join(map(str, on))}, missing on rank(s) "
                f"{','.join(map(str, off))}"]
    flat = {r: _flatten(d) for r, d in dumps.items()}
    paths = sorted({p for f in flat.values() for p in f})
    return [line for p in paths
            for line in _differ(f"{what}: field {p}",
                                {r: f.get(p, _MISSING) for r, f in flat.items()})]


def _flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Nested mappings as dotted field paths (``lse.base``); lists and scalars are leaves."""
    if not isinstance(value, dict) or not value:
        return {path: value}
    out: dict[str, Any] = {}
    for k, v in value.items():
        out.update(_flatten(v, f"{path}.{k}" if path else str(k)))
    return out


def _differ(what: str, values: dict[int, Any]) -> list[str]:
    """One line if the ranks hold different values: ``what: ranks 0,1 have 'e'; rank 2 has '2'``."""
    groups: dict[str, list[int]] = {}
    shown: dict[str, str] = {}
    for rank, v in sorted(values.items()):
        key = "<missing>" if v is _MISSING else json.dumps(v, sort_keys=True)
        groups.setdefault(key, []).append(rank)
        shown[key] = "nothing" if v is _MISSING else repr(v)
    if len(groups) < 2:
        return []
    return [f"{what}: " + "; ".join(
        f"rank{'s' if len(rs) > 1 else ''} {','.join(map(str, rs))} "
        f"{'have' if len(rs) > 1 else 'has'} {shown[k]}" for k, rs in groups.items())]


# ---- the exchange -------------------------------------------------------------------------------

def _key(record: CapabilityRecord | ConsumerRecord) -> str:
    """Producers by name, consumers as ``consumer NAME`` (the two roles may share a name)."""
    return record.name if isinstance(record, CapabilityRecord) else f"consumer {record.name}"


def _round_for(group: Any, timeout_s: float) -> _Round:
    """This rank's next consensus round over ``group`` (each call is one round: every rank of a
    group runs the same sequence of rounds, whether it reports or fails)."""
    import torch.distributed as dist

    store: Any = dist.distributed_c10d._get_default_store()  # every group's ranks share it
    ranks = tuple(dist.get_process_group_ranks(group)) if group is not None else tuple(
        range(dist.get_world_size()))
    generation = _round[ranks] = _round.get(ranks, 0) + 1
    return _Round(store, f"attn_contracts/consensus/{'-'.join(map(str, ranks))}/{generation}",
                  len(ranks), dist.get_rank(group), timeout_s)


class Opened:
    """A consensus round opened before this rank's slow work (:func:`open_round`): its keys and
    its deadline are fixed; hand it to :func:`agree_across_ranks` and :func:`tell_peers`."""

    def __init__(self, round_: _Round, deadline: float):
        self.round, self.deadline = round_, deadline
        self._done = threading.Event()
        threading.Thread(target=self._beat, name="attn-contracts-alive", daemon=True).start()

    def _beat(self) -> None:
        """Until this rank reports, fails or abstains: count up ``alive/<rank>`` (bounded, as
        every store call; at most :data:`_SLOW_MAX_S` past the deadline)."""
        key, end = f"{self.round.prefix}/alive/{self.round.me}", self.deadline + _SLOW_MAX_S
        while not self._done.wait(_BEAT_S) and time.monotonic() < end:
            self.round._try(self.round.store.add, key, 1)

    def done(self) -> None:
        """The slow work is over (the report is about to be published, or the rank failed or
        abstained): stop saying this rank is alive."""
        self._done.set()

    def finish(self, limit_s: float = _FAILURE_LINGER_S) -> None:
        """This rank has acted on the verdict (logged it, about to raise or go on): say so, and
        wait until every rank has, at most ``limit_s``. An engine stops every rank as soon as
        one raises: a peer that read the verdict but had not yet logged its own (a loaded
        machine runs it a second later) would be stopped without a word. Raises nothing."""
        key = self.round.finished_key
        done = self.round._try(self.round.store.add, key, 1)
        until = time.monotonic() + limit_s
        while done is not None and done < self.round.size and time.monotonic() < until:
            time.sleep(_POLL_S)
            done = self.round._try(self.round.store.add, key, 0)

    def abstain(self, cause: str) -> None:
        """This rank cannot check (``cause``: the checker's own fault): decide the round with no
        finding and without this rank, so that no peer waits for it and each is judged on its
        own findings; wait (briefly) until the peers have read it. Raises nothing."""
        self.done()
        self.round._try(self.round.store.add, self.round.finished_key, 1)
        try:
            self.round.fail(None, self.deadline, abstained=cause)
        except Exception:  # the store is gone: the peers learn that themselves
            return


def open_round(group: Any, timeout_s: float) -> Opened:
    """Open this rank's next round over ``group`` now, before slow work: the deadline runs from
    here, and the rank is marked started. Raises what ``torch.distributed`` raises when it is not
    initialised."""
    round_ = _round_for(group, timeout_s)
    deadline = time.monotonic() + timeout_s
    round_.deadline = deadline
    round_._try(round_.store.set, f"{round_.prefix}/started/{round_.me}", "1")
    return Opened(round_, deadline)


def agree_across_ranks(findings: list[Finding],
                       records: Sequence[CapabilityRecord | ConsumerRecord],
                       chosen: CapabilityRecord | None, world_size: int, *, group: Any,
                       timeout_s: float, settings: Mapping[str, Any] | None = None,
                       collective: Mapping[str, Mapping[str, Any]] | None = None,
                       opened: Opened | None = None) -> list[Finding]:
    """Exchange reports with every rank of ``group`` and follow the group's one verdict: the
    union of every rank's findings, plus ``AC007`` if ranks differ, a rank did not report within
    ``timeout_s``, a rank failed before reporting (its cause first), or the store became
    unreachable. Returns within ``timeout_s`` + 2 s (of ``opened``, where the round was opened
    before), unless a rank that opened its round is still at its slow work and alive (its beat
    moves): it is waited for, up to :data:`_SLOW_MAX_S` more; what it raises before this rank's
    report is published (a setting that is no JSON value) is told to the peers first."""
    if opened is not None:
        opened.done()
        round_, deadline = opened.round, opened.deadline
    else:
        deadline = time.monotonic() + timeout_s
        round_ = _round_for(group, timeout_s)
    try:
        mine = fingerprint(records, chosen, world_size, settings, collective)  # may raise
        mine["findings"] = [f.to_json() for f in findings]
        report = json.dumps(mine)
    except Exception as err:
        _mark_told(err)
        round_.fail(_failed(round_.me, f"before publishing its contract: {error_text(err)}"),
                    deadline)
        raise
    try:  # every store call inside has its own hard limit (_bounded): the store's timeout is
        # left as the engine set it
        decision = round_.decide(report, deadline)
    except _StoreLost as err:
        return [*findings, _unreachable(str(err), round_.size)]
    out = [_finding_from_json(f) for f in decision["findings"]]
    if round_.me not in decision["reported"]:  # decided without this rank: its own findings count
        out += findings
    return out


def rank_in(group: Any) -> tuple[int, int] | None:
    """This process's rank in ``group`` and the group's size, or None where
    ``torch.distributed`` is not up (a log line then goes without a rank)."""
    try:
        import torch.distributed as dist

        return dist.get_rank(group), dist.get_world_size(group)
    except Exception:  # not initialised, or no torch
        return None


def report_failure(cause: str, *, group: Any, timeout_s: float = 30.0,
                   opened: Opened | None = None) -> None:
    """This rank failed before publishing its report (``cause``: ``"vLLM's own check:
    AssertionError: ..."``): propose the failing verdict ``AC007`` "rank R failed CAUSE" for the
    round the peers are in (``opened``, where this rank opened it already), and wait until they
    have read it (at most ``timeout_s``, and :data:`_FAILURE_LINGER_S`). Raises nothing: the
    caller re-raises its own error next."""
    try:
        if opened is not None:
            opened.done()
            round_, deadline = opened.round, opened.deadline
            round_._try(round_.store.add, round_.finished_key, 1)  # nothing to log here
        else:
            round_, deadline = _round_for(group, timeout_s), time.monotonic() + timeout_s
        round_.fail(_failed(round_.me, cause), deadline)
    except Exception:  # a store that is gone, torch.distributed not up: the caller's error stands
        return


def tell_peers(err: BaseException, what: str, *, group: Any, timeout_s: float = 30.0,
               opened: Opened | None = None) -> None:
    """:func:`report_failure` for an exception this rank is about to raise (``what``: where it
    came from, ``"vLLM's own check"``), once per exception however many layers catch and
    re-raise it; nothing without an initialised ``torch.distributed``."""
    if getattr(err, _TOLD, False):
        return
    _mark_told(err)
    try:
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            return
    except ImportError:
        return
    report_failure(f"{what}: {error_text(err)}", group=group, timeout_s=timeout_s, opened=opened)


def _mark_told(err: BaseException) -> None:
    with contextlib.suppress(AttributeError, TypeError):  # a type that takes no attributes
        setattr(err, _TOLD, True)


def _failed(rank: int, cause: str) -> Finding:
    return Finding(
        Code.AC007, "dcp", f"rank {rank} failed {cause}", hint=f"rank {rank}'s own error is the "
        "cause (see its log); this rank stops too, so that no rank is left waiting for it",
        field="failed", found=rank, allowed="every rank reports its contract")


class _Round:
    """One consensus round's keys: ``report/<rank>``, ``decision``, ``read`` (a counter)."""

    def __init__(self, store: Any, prefix: str, size: int, me: int, timeout_s: float):
        self.store, self.prefix, self.size, self.me = store, prefix, size, me
        self.timeout_s = timeout_s
        self.reports = [f"{prefix}/report/{r}" for r in range(size)]
        self.decision_key = f"{prefix}/decision"
        self.finished_key = f"{prefix}/finished"  # ranks that acted on the verdict (a counter)
        self.deadline = 0.0  # set by decide(): until when a slow store call is tried again
        #: per missing rank, its last beat seen and when it last moved (this rank's clock)
        self._beats: dict[int, tuple[int, float]] = {}
        self._beats_read = 0.0

    def decide(self, report: str, deadline: float) -> dict[str, Any]:
        """The group's verdict, as stored under the decision key; raises :class:`_StoreLost`."""
        self.deadline = deadline
        decision = self._decision()
        if decision is None:
            self._call("publish this rank's report", self.store.set, self.reports[self.me],
                       report)
            decision = self._wait_and_propose(deadline)
        read = self._try(self.store.add, f"{self.prefix}/read", 1)
        if decision["missing"]:
            if self.me in decision["reported"]:
                # Another rank's deadline came first; this one still gives the missing ranks its
                # own full timeout_s (a start skew of milliseconds), as its caller was promised.
                time.sleep(max(0.0, deadline - time.monotonic()))
        elif read is not None:
            # Every rank is alive and polling: wait until all have read the verdict, failing ones
            # too (an engine stops every rank at the first failure it sees, and the store may go
            # with the rank that hosts it; a peer must read this verdict, not "the store is gone").
            grace = time.monotonic() + _READ_GRACE_S
            self._linger_until_read(read, grace if decision["findings"] else max(deadline, grace))
        return decision

    def fail(self, finding: Finding | None, deadline: float, abstained: str = "") -> None:
        """Propose a failing verdict (``finding``) for a rank that has no report to publish, or,
        ``abstained`` (why), a verdict without it and with no finding; wait (at most until the
        deadline, and :data:`_FAILURE_LINGER_S`) until every peer has read it."""
        self.deadline = deadline
        verdict: dict[str, Any] = {"findings": [] if finding is None else [finding.to_json()],
                                   "reported": [], "missing": [], "by": self.me}
        verdict.update({"abstained": {str(self.me): abstained}} if abstained else
                       {"failed": [self.me]})
        try:
            self._propose(verdict)
        except _StoreLost:
            return
        read = self._try(self.store.add, f"{self.prefix}/read", 1)
        if read is not None:
            self._linger_until_read(read, min(deadline, time.monotonic() + _FAILURE_LINGER_S))

    def _wait_and_propose(self, deadline: float) -> dict[str, Any]:
        while True:
            decision = self._decision()
            if decision is not None:
                return decision
            if self._call("check the reports", self.store.check, self.reports):
                return self._propose(self._verdict_from_all())
            if time.monotonic() >= deadline and not self._still_working(deadline):
                return self._propose(self._verdict_missing())
            time.sleep(_POLL_S)

    def _still_working(self, deadline: float) -> bool:
        """Past this rank's deadline: whether every rank that has not reported is still alive
        in slow work (its beat moved within :data:`_STALE_S`, and the deadline is at most
        :data:`_SLOW_MAX_S` behind); then its report is waited for, a loaded machine being no
        reason to refuse a start. A rank that never beat (never opened a round: dead, hung
        before it, never started) is not waited for."""
        now = time.monotonic()
        if now >= deadline + _SLOW_MAX_S:
            return False
        if now - self._beats_read < _BEAT_S:
            return True  # read again no more often than the beats come
        self._beats_read = now
        for r, key in enumerate(self.reports):
            if r == self.me or self._try(self.store.check, [key]):
                continue
            beat = self._try(self.store.add, f"{self.prefix}/alive/{r}", 0)
            if not beat:  # never beat, or the store did not answer
                return False
            last, moved = self._beats.get(r, (beat, now))
            if beat != last:
                moved = now
            self._beats[r] = (beat, moved)
            if now - moved >= _STALE_S:
                return False
        self.deadline = now + _STALE_S  # a slow store call is still tried again meanwhile
        return True

    def _propose(self, verdict: dict[str, Any]) -> dict[str, Any]:
        # compare_set with "" as expected value sets the key only if it is absent, and returns
        # what the key holds afterwards: the first proposal, whoever made it.
        stored = self._call("propose the verdict", self.store.compare_set, self.decision_key,
                            "", json.dumps(verdict))
        return dict(json.loads(stored))

    def _decision(self) -> dict[str, Any] | None:
        if not self._call("read the decision", self.store.check, [self.decision_key]):
            return None
        return dict(json.loads(self._call("read the decision", self.store.get,
                                          self.decision_key)))

    def _verdict_from_all(self) -> dict[str, Any]:
        prints = {r: json.loads(self._call(f"read rank {r}'s report", self.store.get, key))
                  for r, key in enumerate(self.reports)}
        shared = _union_findings(prints)
        diffs = _differences(prints)
        together, effects = _collective_differences(prints)
        if together:
            shared.append(Finding(
                Code.AC031, "dcp", "DCP ranks pass a collective consumer different values: "
                + " | ".join(together) + "; " + "; ".join(_EFFECT[e] for e in sorted(effects)),
                hint="pass the same base keyword and the same combine setting on every rank (and "
                "call it on every rank, in the same order)", field="collective",
                found=f"{len(together)} differing value(s)", allowed="identical on every rank"))
        if diffs:
            shared.append(Finding(
                Code.AC007, "dcp", "DCP ranks disagree on their contracts: " + " | ".join(diffs),
                hint="deploy the same records, backend and settings on every rank", field="fingerprint",
                found=f"{len(diffs)} differing field(s)", allowed="identical on every rank"))
        return {"findings": [f.to_json() for f in shared], "reported": sorted(prints),
                "missing": [], "by": self.me}

    def _verdict_missing(self) -> dict[str, Any]:
        present = [r for r, key in enumerate(self.reports)
                   if self._call("check the reports", self.store.check, [key])]
        missing = [r for r in range(self.size) if r not in present]
        prints = {r: json.loads(self._call(f"read rank {r}'s report", self.store.get,
                                           self.reports[r])) for r in present}
        started = [r for r in missing if self._try(self.store.check,
                                                   [f"{self.prefix}/started/{r}"])]
        how = (f"; rank(s) {','.join(map(str, started))} had started checking" if started
               else "")
        late = Finding(
            Code.AC007, "dcp", f"rank(s) {','.join(map(str, missing))} of {self.size} did not "
            f"report their contract within {self.timeout_s:g} s (dead, hung, late, or never "
            f"started{how})", hint="check those ranks' logs; every rank must call validate_startup with "
            "the same group", field="ranks", found=missing, allowed=f"all {self.size} ranks")
        return {"findings": [f.to_json() for f in [*_union_findings(prints), late]],
                "reported": present, "missing": missing, "by": self.me}

    def _linger_until_read(self, read: int, until: float) -> None:
        while read < self.size and time.monotonic() < until:
            time.sleep(_POLL_S)
            got = self._try(self.store.add, f"{self.prefix}/read", 0,
                            limit_s=max(_POLL_S, until - time.monotonic()))
            if got is None:
                return  # the verdict is already read here; a lost store cannot change it
            read = got

    def _call(self, what: str, fn: Callable[..., _T], *args: Any) -> _T:
        # A call that only timed out is tried again while this rank's deadline leaves room (a
        # loaded machine answers late; every call here is a read or an idempotent write); a
        # connection error, or no answer by the deadline, is a lost store.
        while True:
            try:
                return _bounded(fn, args, _OP_LIMIT_S)
            except TimeoutError as err:
                if time.monotonic() + _OP_LIMIT_S < self.deadline:
                    continue
                raise _StoreLost(f"{what}: no answer within {_OP_LIMIT_S:g} s") from err
            except Exception as err:  # DistNetworkError, DistStoreError, RuntimeError
                first = str(err).strip().splitlines()[0] if str(err).strip() else ""
                raise _StoreLost(f"{what}: {type(err).__name__}: {first}") from err

    def _try(self, fn: Callable[..., _T], *args: Any, limit_s: float = _OP_LIMIT_S) -> _T | None:
        try:
            return _bounded(fn, args, limit_s)
        except Exception:  # after the verdict is known, a store error changes nothing
            return None


def _bounded(fn: Callable[..., _T], args: tuple[Any, ...], limit_s: float) -> _T:
    """``fn(*args)`` with a hard time limit. The store's own timeout bounds only waits for keys:
    a call to a host that is frozen (stopped, swapped out, cut off) blocks on its socket for
    good, so the call runs in a daemon thread that is left behind if it does not answer."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as err:  # handed to the caller's thread below
            box["error"] = err

    worker = threading.Thread(target=run, name="attn-contracts-store-call", daemon=True)
    worker.start()
    worker.join(limit_s)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {limit_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _unreachable(detail: str, size: int) -> Finding:
    return Finding(
        Code.AC007, "dcp", f"the key-value store became unreachable before this rank learned "
        f"the verdict of the {size} ranks ({detail}); the rank hosting it (rank 0 with env:// "
        "or tcp://) has probably exited or died", hint="check the hosting rank's log; every rank "
        "must call validate_startup while the store is up", field="store", found=detail,
        allowed="a reachable store")


def _finding_from_json(f: dict[str, Any]) -> Finding:
    return Finding.from_json(f)


def _union_findings(prints: dict[int, dict[str, Any]]) -> list[Finding]:
    """Every rank's findings, deduplicated, in rank order, each naming the rank if not all."""
    seen: dict[str, tuple[dict[str, Any], list[int]]] = {}
    for rank, p in sorted(prints.items()):
        for f in p["findings"]:
            key = json.dumps(f, sort_keys=True)
            seen.setdefault(key, (f, []))[1].append(rank)
    out = []
    for f, on in seen.values():
        suffix = "" if len(on) == len(prints) else f" (on rank(s) {','.join(map(str, on))})"
        out.append(_finding_from_json({**f, "message": f["message"] + suffix}))
    return out
