"""Every reason a record, a setting or an edge is refused: pure functions from data to findings.

This is the one place refusals live (the registry, startup, the planner and the CLI only call
these), and each check returns *all* its findings, so a caller reports every problem at once. Each
verdict is derived from the records' fields: a new capability is new data, not a new method.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

from attn_contracts.call_base import literal_key
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import FixedBase
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Finding
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec
from attn_contracts.setting import OUT_DTYPES
from attn_contracts.setting import CombineSetting

__all__ = [
    "LSE_DTYPES",
    "CallRefused",
    "call_keys",
    "check_backend_known",
    "check_call_device",
    "check_call_lse",
    "check_call_out",
    "check_call_partials",
    "check_call_row_mask",
    "check_call_sink",
    "check_call_turns_off_lse",
    "check_combinable",
    "check_dcp",
    "check_direct",
    "check_edge",
    "check_heads_divisible",
    "check_mode_call",
    "check_rank",
    "check_row_mask_given",
    "check_setting",
    "check_unique",
    "check_workspace_buffer",
    "check_workspace_call",
    "check_workspace_mode",
    "check_workspace_step",
    "refuse",
    "resolve_call",
    "resolve_call_base",
    "resolve_call_layout",
]


def check_unique(records: Sequence[CapabilityRecord | ConsumerRecord]) -> list[Finding]:
    """``AC005`` for every name used by more than one (different) record of one role."""
    counts = Counter((type(r).__name__, r.name) for r in set(records))
    names = sorted({r.name for r in records})
    return [
        Finding(Code.AC005, name, f"{n} different records are named {name!r}",
                hint="give each kernel variant and call mode its own name", field="name", found=name,
                allowed=f"unique names (all: {', '.join(names)})")
        for (_, name), n in sorted(counts.items(), key=lambda kv: kv[0][1]) if n > 1
    ]


def check_backend_known(backend: str, known: Iterable[str]) -> list[Finding]:
    """``AC013`` when the engine chose a backend no record describes."""
    names = sorted(set(known))
    if backend in names:
        return []
    return [Finding(Code.AC013, backend, f"the chosen backend {backend!r} has no record; known: "
                    f"{', '.join(names) or '(none)'}",
                    hint="register a record for it (decorator, TOML file or entry point)",
                    field="backend", found=backend, allowed=", ".join(names))]


def _needs_lse(record: CapabilityRecord, what: str, hint: str) -> list[Finding]:
    if record.returns_lse:
        return []
    return [Finding(Code.AC006, record.name, f"{what} but the backend returns no LSE "
                    "(lse.returns = 'none'); partial outputs cannot be combined", hint=hint,
                    field="lse.returns", found="none", allowed=f'"lse" (required for {what})')]


def check_dcp(record: CapabilityRecord, world_size: int) -> list[Finding]:
    """``AC006``: DCP combines partial outputs by their LSE, so a backend without one cannot shard."""
    if world_size <= 1:
        return []
    return _needs_lse(record, f"world_size={world_size}",
                      "choose a backend that returns LSE, or run with world_size=1")


def check_combinable(record: CapabilityRecord, mode: str) -> list[Finding]:
    """``AC006`` for a combine plan: every mode weighs partials by their LSE."""
    return _needs_lse(record, f"a {mode!r} combine", "plan the combine for a backend that "
                      "returns LSE")


def check_heads_divisible(record: CapabilityRecord, num_heads: int, world_size: int,
                          mode: str) -> list[Finding]:
    """``AC010``: head-scattered modes give each rank ``num_heads / world_size`` heads."""
    if num_heads % world_size:
        return [Finding(Code.AC010, record.name, f"mode {mode!r} scatters heads over the ranks but "
                        f"num_heads={num_heads} is not divisible by world_size={world_size}",
                        hint="use mode 'ar', or a world size that divides the head count", field="num_heads",
                        found=num_heads, allowed=f"a multiple of {world_size}")]
    return []


def _readable(record: CapabilityRecord, s: CombineSetting) -> list[Finding]:
    """``AC015``: settings the record says its kernel cannot produce."""
    out: list[Finding] = []
    spec = record.lse
    if isinstance(spec, LseSpec) and spec.padded_heads and s.num_heads > spec.padded_heads:
        out.append(Finding(Code.AC015, record.name, f"num_heads={s.num_heads} exceeds the "
                           f"{spec.padded_heads} padded LSE head slots", field="lse.padded_heads",
                           found=s.num_heads, allowed=f"<= {spec.padded_heads}"))
    if s.head_dim not in record.decode.head_dims:
        out.append(Finding(Code.AC015, record.name, f"head_dim={s.head_dim} is not one the kernel "
                           f"produces", field="decode.head_dims", found=s.head_dim,
                           allowed=", ".join(map(str, record.decode.head_dims))))
    if s.out_dtype not in OUT_DTYPES:  # unreachable through the model; kept for model_construct
        out.append(Finding(Code.AC015, record.name, f"out_dtype {s.out_dtype} is not supported",
                           field="out_dtype", found=s.out_dtype, allowed=", ".join(OUT_DTYPES)))
    return out


def _sink_once(record: CapabilityRecord, s: CombineSetting) -> list[Finding]:
    """``AC024``: a sink inside each partial's LSE is counted once per partial by the merge."""
    spec = record.lse
    if not (isinstance(spec, LseSpec) and spec.includes_sink and (s.world_size > 1 or s.sink)):
        return []
    why = ("the plan adds a sink too (sink=True): it would count twice" if s.sink else
           f"merging {s.world_size} partials that each include the sink counts it "
           f"{s.world_size} times")
    return [Finding(Code.AC024, record.name, f"lse.includes_sink = true with world_size="
                    f"{s.world_size}: {why}",
                    hint="run the kernel without the sink (a record with includes_sink = false) and "
                    "plan with sink=True: the plan adds the sink once after the merge",
                    field="lse.includes_sink", found=True, allowed="false (the plan applies the sink)")]


_MODE_HINTS = {
    "symmetric_memory": "use mode 'a2a' (NCCL all-to-all), or 'a2a_best' to fall back by itself",
    "fused": "use mode 'a2a' (the project's NCCL all-to-all and merge), or run where FlashInfer "
             ">= 0.7.2.post1 and NCCL >= 2.29 are installed",
}


def check_direct(record: CapabilityRecord, setting: CombineSetting,
                 unavailable: str | None) -> list[Finding]:
    """``AC026``: a mode that moves partials through symmetric memory (``a2a_direct``, or
    FlashInfer's fused ``fi_a2a``) where it cannot run, or with a setting it cannot serve;
    ``unavailable`` is the reason the combine found (no CUDA, no symmetric memory, the group,
    the dtype, FlashInfer missing, a sink or merged LSE asked of a kernel that has neither),
    None where it can."""
    spec = setting.spec
    if spec.collective not in _MODE_HINTS or unavailable is None:
        return []
    return [Finding(Code.AC026, record.name, f"mode {spec.name!r} cannot run here: {unavailable}",
                    hint=_MODE_HINTS[spec.collective], field="mode", found=spec.name,
                    allowed=spec.needs or "where its collective runs")]


def check_setting(record: CapabilityRecord, setting: CombineSetting) -> list[Finding]:
    """Every reason ``record`` cannot be combined as ``setting`` says (``AC006``, ``AC010``,
    ``AC015``, ``AC024``), all at once."""
    findings = check_combinable(record, setting.mode)
    if setting.spec.scatters_heads:
        findings += check_heads_divisible(record, setting.num_heads, setting.world_size,
                                          setting.mode)
    return findings + _readable(record, setting) + _sink_once(record, setting)


# --- the combine at call time: a call, a workspace, a sink against the plan's setting -------------
# The launchers keep only the tensor checks their kernels need; what a call must match because of
# its plan (and which mode runs how) is refused here, by name, with the value found and what is
# allowed. The combine calls these only when its cheap per-call comparison already failed, so the
# hot path pays for a tuple compare, not for building findings.
class CallRefused(ContractError, ValueError):
    """A combine call refused by its plan: the findings of a :class:`ContractError`, and a
    ``ValueError`` (what a bad argument is in Python)."""


def refuse(findings: list[Finding], context: str) -> None:
    """Raise :class:`CallRefused` when there is a finding; a no-op otherwise."""
    if findings:
        raise CallRefused(findings, context)


def _call(subject: str, field: str, message: str, found: object, allowed: str,
          hint: str = "") -> Finding:
    return Finding(Code.AC027, subject, message, hint=hint, field=field, found=found,
                   allowed=allowed)


def check_mode_call(subject: str, setting: CombineSetting, *, collective: bool,
                    has_workspace: bool) -> list[Finding]:
    """``AC027``: a mode called the way the table says it cannot run (a ``merge`` plan given to
    ``dcp_combine``, a collective plan called as a local merge, a mode whose buffers are made
    once by every rank together called without its workspace)."""
    spec = setting.spec
    if collective and spec.collective == "none":
        return [_call(subject, "mode", f"dcp_combine runs the collective modes; mode "
                      f"{spec.name!r} runs none", spec.name, "a mode with a collective",
                      "call a 'merge' plan directly on the stacked partials")]
    if collective and spec.workspace == "required" and not has_workspace:
        return [_call(subject, "workspace", f"mode {spec.name!r} needs a Workspace: its buffers "
                      "are made once, by every rank together", None, "a Workspace of this plan",
                      "Workspace(plan, group, max_tokens=...) at startup, then workspace= on "
                      "every call")]
    return []


def check_workspace_mode(subject: str, setting: CombineSetting) -> list[Finding]:
    """``AC027``: a workspace for a mode that runs no collective (``merge``)."""
    if setting.spec.workspace != "none":
        return []
    return [_call(subject, "mode", f"a {setting.mode!r} plan runs no collective and needs no "
                  "workspace", setting.mode, "a mode with a collective")]


def check_call_partials(subject: str, setting: CombineSetting, *, shape: tuple[int, ...],
                        dtype: str, stacked: bool, heads: int, world: int | None = None,
                        gathered: int | None = None) -> list[Finding]:
    """``AC027``: partial outputs that do not match the plan. ``stacked``: ``[N, T, H, D]`` (N =
    the plan's world size) else one rank's ``[T, H, D]``; ``heads``: the heads this call must
    carry (all of them, or ``H / N`` for the merge after an all-to-all); ``world``: the process
    group's size, where there is one; ``gathered``: how many ranks' LSEs a rescale was given."""
    out: list[Finding] = []
    n = setting.world_size
    if world is not None and world != n:
        out.append(_call(subject, "world_size", f"the plan is for world_size={n}, the process "
                         f"group has {world} ranks", world, str(n)))
    if gathered is not None and gathered != n:
        out.append(_call(subject, "world_size", f"the gathered LSE holds {gathered} ranks' LSEs, "
                         f"the plan rescales against world_size={n}", gathered, str(n)))
    dims = 4 if stacked else 3
    want = f"[N={n}, T, H={heads}, D={setting.head_dim}]" if stacked else \
        f"[T, H={heads}, D={setting.head_dim}]"
    if len(shape) != dims:
        out.append(_call(subject, "partial_out", f"partial_out has shape {shape}, the plan "
                         f"takes {want}", shape, want))
        return out
    if stacked and shape[0] != n:
        out.append(_call(subject, "world_size", f"partial_out holds {shape[0]} partials (shape "
                         f"{shape}), the plan merges world_size={n}: {want}", shape[0], str(n)))
    if shape[-2] != heads:
        out.append(_call(subject, "num_heads", f"partial_out has {shape[-2]} heads (shape "
                         f"{shape}), the plan takes {want}", shape[-2], str(heads)))
    if shape[-1] != setting.head_dim:
        out.append(_call(subject, "head_dim", f"partial_out has head dim {shape[-1]} (shape "
                         f"{shape}), the plan takes {want}", shape[-1], str(setting.head_dim)))
    if dtype != setting.out_dtype:
        out.append(_call(subject, "out_dtype", f"partial_out dtype {dtype} differs from the "
                         f"plan's out_dtype {setting.out_dtype}", dtype, setting.out_dtype,
                         "plan with the partials' dtype; every rank must send the same dtype"))
    return out


def check_call_out(subject: str, setting: CombineSetting, *, shape: tuple[int, ...],
                   dtype: str, want: tuple[int, ...]) -> list[Finding]:
    """``AC027``: an ``out=`` buffer of another shape or dtype than the plan writes (``want``):
    a collective writes into it directly, where a mismatch would otherwise surface as a backend's
    own check failure (gloo aborts the process) instead of a reason."""
    out: list[Finding] = []
    if shape != want:
        out.append(_call(subject, "out", f"out has shape {shape}, the plan writes {want} "
                         f"([T, heads, D] of its {setting.mode} mode)", shape, str(want)))
    if dtype != setting.out_dtype:
        out.append(_call(subject, "out", f"out dtype {dtype} differs from the plan's out_dtype "
                         f"{setting.out_dtype}", dtype, setting.out_dtype))
    return out


#: sink dtypes a call may pass (the kernels load them as fp32)
SINK_DTYPES = ("float32", "bfloat16", "float16", "float64")


def check_call_sink(subject: str, setting: CombineSetting, *, shape: tuple[int, ...] | None,
                    dtype: str | None) -> list[Finding]:
    """``AC027``: a plan made with ``sink=True`` takes ``sink [H]`` (float, natural-log logits) on
    every call; one made without refuses a sink (the kernels would count one nobody planned).
    ``shape`` None: the call passed no sink."""
    h = setting.num_heads
    if shape is None:
        if setting.sink:
            return [_call(subject, "sink", "the plan adds an attention sink (sink=True) and the "
                          "call passed none", None, f"a float [H={h}] tensor",
                          f"pass sink= (float32 [H={h}], natural-log logits)")]
        return []
    if not setting.sink:
        return [_call(subject, "sink", "sink= given to a plan made with sink=False", shape,
                      "no sink", "plan with sink=True")]
    if shape != (h,) or dtype not in SINK_DTYPES:
        return [_call(subject, "sink", f"sink must be a float [H={h}] tensor of natural-log "
                      f"logits, found {dtype} {shape}", (dtype, shape),
                      f"shape ({h},), dtype {', '.join(SINK_DTYPES)}")]
    return []


def check_row_mask_given(subject: str, setting: CombineSetting, empty_row: str,
                         given: bool, *, empty_out_unsafe: str | None = None) -> list[Finding]:
    """``AC025``: a call without a row mask where the plan needs one (the setting says so, the
    record's empty rows are undefined: what the kernel leaves there is garbage, or
    ``empty_out_unsafe`` says why the mode's kernel would read an empty row's output under
    weight 0: its output holds NaN or garbage and the mode multiplies by the weight)."""
    if given or not (setting.row_mask or empty_row == "undefined" or empty_out_unsafe):
        return []
    why = ("its empty rows are undefined (lse.empty_row = 'undefined')"
           if empty_row == "undefined" else empty_out_unsafe if empty_out_unsafe
           else "the plan was made with row_mask=True")
    return [Finding(Code.AC025, subject, f"a call without a row mask, but {why}",
                    hint="pass row_mask= (which rows each shard holds keys for: the engine's local "
                    "seq_lens > 0 per query row) or lens= (local lengths per request)",
                    field="row_mask", found=None, allowed="a bool row mask or local lengths")]


def check_workspace_call(subject: str, *, same_plan: bool, same_group: bool) -> list[Finding]:
    """``AC027``: a workspace is made for one (plan, process group): its buffers are sized and
    typed by that plan, and (``a2a_direct``) its symmetric memory is shared with that group."""
    out: list[Finding] = []
    if not same_plan:
        out.append(_call(subject, "workspace", "this workspace belongs to another plan (its "
                         "buffers are sized and typed for that plan's setting)", "another plan",
                         "the plan the workspace was made for",
                         "create one workspace per (plan, group)"))
    if not same_group:
        out.append(_call(subject, "group", "this workspace belongs to another process group; "
                         "create one per (plan, group)", "another group",
                         "the group the workspace was made for"))
    return out


def check_rank(subject: str, rank: object, world: int) -> list[Finding]:
    """``AC027``: ``rank`` is an int in ``0..world-1`` (a bool or a float is refused, not read
    as one)."""
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world:
        return [_call(subject, "rank", f"rank {rank!r} ({type(rank).__name__}) is not a rank of "
                      f"the {world} gathered LSEs", rank, f"an int in 0..{world - 1}")]
    return []


#: LSE dtypes a call may pass (the kernels load them as fp32)
LSE_DTYPES = ("float32", "bfloat16", "float16", "float64")


def check_call_lse(subject: str, *, shape: tuple[int, ...], layout: str, dims: int | None = None,
                   heads: int | None = None, slots: int | None = None, padded: bool = False,
                   dtype: str | None = None, rows: int | None = None,
                   tokens: int | None = None) -> list[Finding]:
    """``AC027``: an LSE not in its record's layout (``layout``, as text): another number of axes
    than the layout has (``dims``); ``heads`` entries on its head axis where the layout has
    ``slots`` (H, or the record's ``padded`` head slots); a dtype outside :data:`LSE_DTYPES`; or
    ``rows`` rows where the partials have ``tokens``. Each part is checked where given."""
    if dims is not None and len(shape) != dims:
        return [_call(subject, "partial_lse", f"LSE of layout {layout} has {dims} dims, found "
                      f"shape {shape}", shape, f"{dims} dims: {layout}")]
    out: list[Finding] = []
    if heads is not None and slots is not None and heads != slots:
        out.append(_call(subject, "partial_lse", f"LSE head axis has {heads} entries, expected "
                         f"{slots} ({'padded heads' if padded else 'H'}; layout {layout}, found "
                         f"shape {shape})", heads, str(slots)))
    if dtype is not None and dtype not in LSE_DTYPES:
        out.append(_call(subject, "partial_lse", f"partial_lse dtype {dtype} is not a float dtype "
                         f"(shape {shape})", dtype, ", ".join(LSE_DTYPES)))
    if rows is not None and tokens is not None and rows != tokens:
        out.append(_call(subject, "partial_lse", f"partial_lse has {rows} rows (shape {shape}, "
                         f"layout {layout}), partial_out has T={tokens}", rows, f"T={tokens}"))
    return out


def check_call_row_mask(subject: str, *, shape: tuple[int, ...] | None, dtype: str | None,
                        want: tuple[int, ...], lens: bool = False) -> list[Finding]:
    """``AC027``: a row mask (``shape`` None: none given) that is not bool of shape ``want``, or
    one given together with ``lens`` (either says which rows are empty, not both)."""
    if shape is None:
        return []
    if lens:
        return [_call(subject, "row_mask", "pass a row mask or local lengths, not both (found "
                      "row_mask= and lens=)", "row_mask and lens", "one of row_mask, lens")]
    if dtype != "bool" or shape != want:
        return [_call(subject, "row_mask", f"row_mask must be bool {list(want)}, found {dtype} "
                      f"{shape}", (dtype, shape), f"bool, shape {want}")]
    return []


def check_call_device(subject: str, name: str, *, found: str, want: str,
                      of: str = "the partials") -> list[Finding]:
    """``AC027``: tensor ``name`` on device ``found`` where the call works on ``want`` (the
    device of ``of``)."""
    if found == want:
        return []
    return [_call(subject, name, f"{name} is on {found} but {of} are on {want}", found, want)]


def check_workspace_step(subject: str, *, slot: int, slots: int, tokens: int, max_tokens: int,
                         device: str, workspace_device: str) -> list[Finding]:
    """``AC027``: a step a workspace cannot hold: a slot it does not have, more tokens than it was
    made for (it never grows: captured CUDA graphs hold its addresses), another device."""
    out: list[Finding] = []
    if not 0 <= slot < slots:
        out.append(_call(subject, "slot", f"slot {slot} is outside the workspace's {slots} "
                         f"slot(s)", slot, f"0..{slots - 1}"))
    if tokens > max_tokens:
        out.append(_call(subject, "max_tokens", f"a step of {tokens} tokens exceeds the "
                         f"workspace's max_tokens={max_tokens}", tokens, f"<= {max_tokens}",
                         "create the workspace for the largest step (it never grows: captured "
                         "CUDA graphs hold its addresses)"))
    out += check_call_device(subject, "workspace", found=workspace_device, want=device,
                             of="the inputs")
    return out


def check_workspace_buffer(subject: str, *, runs: str, buffer: str, has: bool) -> list[Finding]:
    """``AC027``: a step that needs a buffer its workspace's mode does not make (``ag_rs``'s head
    chunks, ``a2a``'s messages, ``a2a_direct``'s symmetric buffer)."""
    if has:
        return []
    return [_call(subject, "workspace", f"this workspace runs {runs}, which has no {buffer}",
                  runs, f"a workspace whose mode has {buffer}")]


# --- edges: producer → consumer --------------------------------------------------------------------
def _edge(code: Code, producer: CapabilityRecord, consumer: ConsumerRecord, field: str,
          message: str, found: object, allowed: str, hint: str = "",
          escalation: str | None = None) -> Finding:
    return Finding(code, f"{producer.name} -> {consumer.name}",
                   f"{producer.name} feeds {consumer.name}: {message}", hint=hint, field=field, found=found,
                   allowed=allowed, escalation=escalation)


def _edge_base(p: CapabilityRecord, spec: LseSpec, c: ConsumerRecord,
               keyword_value: str | None) -> list[Finding]:
    if isinstance(c.base, FixedBase):
        if c.base.base == spec.base:
            return []
        return [_edge(Code.AC016, p, c, "base", f"the producer emits base-{spec.base} LSE, the "
                      f"consumer assumes base {c.base.base}", spec.base, f'"{c.base.base}"',
                      "use a consumer of the producer's base, or convert the LSE first "
                      "(× ln 2 for base 2 → e, × log2 e for e → 2)")]
    kb: KeywordBase = c.base
    literal = keyword_value if keyword_value is not None else kb.default
    if literal is None:
        # A required keyword nobody named: the call site decides, so nothing here is wrong, but
        # nothing was checked either. A note, not an error: correct engine code passes it.
        need = kb.keyword_for(spec.base)
        how = (f"pass the literal the call site passes (--consumer \"{c.name}={need}\" in "
               f"validate, consumers=[(\"{c.name}\", \"{need}\")] at startup); the call needs "
               f"{kb.keyword}={need}" if need else
               f"{c.name} cannot take base-{spec.base} LSE; convert it first")
        return [_edge(Code.AC016, p, c, f"base.{kb.keyword}", f"the consumer's base is its "
                      f"{kb.keyword} keyword, which has no default and was not given here, so "
                      "the base of this edge is left to the call site and was not checked",
                      None, f"{kb.keyword}={need}" if need else "no value fits", how,
                      escalation="left-to-call-site")]
    chosen = kb.base_of(literal)
    if chosen == spec.base:
        return []
    need = kb.keyword_for(spec.base)
    how = "passes" if keyword_value is not None else "omits it and gets the default"
    hint = (f"pass {kb.keyword}={need}" if need else
            f"{c.name} cannot take base-{spec.base} LSE; convert it first")
    # a literal the record does not list selects no base: say which ones it takes
    what = (f"base {chosen}" if chosen is not None else "a value the consumer does not take; "
            f"allowed: {', '.join(lit for lit, _ in kb.values)}")
    return [_edge(Code.AC016, p, c, f"base.{kb.keyword}", f"the producer emits base-{spec.base} "
                  f"LSE, the call {how} {kb.keyword}={literal} ({what})", literal,
                  f"{kb.keyword}={need}" if need else "no value fits", hint)]


def _edge_empty(p: CapabilityRecord, spec: LseSpec, c: ConsumerRecord) -> list[Finding]:
    out: list[Finding] = []
    policy = c.empty
    if spec.empty_row == "undefined" and not policy.accepts_row_mask:
        out.append(_edge(Code.AC018, p, c, "empty.accepts_row_mask", "the producer leaves empty "
                         "rows undefined (garbage) and the consumer takes no row mask",
                         "undefined", "a consumer that masks rows by the engine's lengths",
                         "combine with a plan given row_mask=True", escalation="from-records"))
    elif spec.empty_row != "undefined" and spec.empty_row not in policy.reads_as_empty:
        out.append(_edge(Code.AC018, p, c, "empty.reads_as_empty", f"empty rows carry LSE "
                         f"{spec.empty_row}, which the consumer does not read as empty",
                         spec.empty_row, ", ".join(policy.reads_as_empty) or "(nothing)",
                         "sanitise the LSE first (NaN/+inf → -inf) or use a consumer that does",
                         escalation="from-records"))
    if policy.all_empty == "nan":
        out.append(_edge(Code.AC018, p, c, "empty.all_empty", "a row empty on every shard (a "
                         "padded CUDA-graph row, a zero-length request) comes out as 0/0 = NaN",
                         "nan", "zero", "mask those rows or use a consumer that yields 0",
                         escalation="from-records"))
    if spec.empty_row in ("nan", "undefined") and not policy.zero_weight_nan_safe:
        out.append(_edge(Code.AC018, p, c, "empty.zero_weight_nan_safe", "empty shards may hold "
                         "NaN partials and the consumer multiplies them by a zero weight "
                         "(0 · NaN = NaN)", False, "true", escalation="from-records"))
    else:
        out += _edge_empty_out(p, spec, c)
    return out


def _edge_empty_out(p: CapabilityRecord, spec: LseSpec, c: ConsumerRecord) -> list[Finding]:
    """``AC030``: the LSE of an empty row says "empty" (weight 0), but its *output* holds NaN
    or whatever the buffer held, and the consumer multiplies partials by their weight: 0 · NaN
    is NaN in the merged row. A consumer that takes the engine's row mask selects those rows
    away (the call is then refused without one, ``AC025``); a record that does not say what
    its output holds is read as ``undefined`` (``LseSpec.empty_output``)."""
    policy, held = c.empty, spec.empty_output
    if held == "zero" or policy.zero_weight_nan_safe or policy.accepts_row_mask:
        return []
    what = {"nan": "NaN (the kernel writes 0/0 there)",
            "undefined": "whatever the output buffer held (the kernel does not write it)"}[held]
    if spec.empty_out is None:
        what = ("an undeclared value (lse.empty_out is absent, read as 'undefined': the kernel "
                "may leave the buffer's garbage there)")
    return [_edge(Code.AC030, p, c, "lse.empty_out", f"an empty row's LSE is {spec.empty_row} "
                  f"(weight 0), but its output holds {what}, and the consumer multiplies "
                  "partials by their weight (0 · NaN = NaN in the merged row)", held,
                  "a producer that writes 0 there (lse.empty_out = 'zero'), or a consumer that "
                  "is NaN-safe at weight 0 or takes a row mask",
                  "zero those rows first (o.masked_fill(~has_keys, 0), as SGLang's fix-up kernel "
                  "after trtllm-gen does), or combine with a plan (row_mask=True): it selects "
                  "weight-0 partials away")]


def _edge_limits(p: CapabilityRecord, c: ConsumerRecord, s: CombineSetting) -> list[Finding]:
    lim, out = c.limits, []
    heads, d, n = s.heads_per_launch, s.head_dim, s.world_size

    def limit(field: str, message: str, found: object, allowed: str) -> None:
        out.append(_edge(Code.AC019, p, c, f"limits.{field}", message, found, allowed,
                         escalation="from-records"))

    if lim.head_dims is not None and d not in lim.head_dims:
        limit("head_dims", f"head_dim={d} is not one it takes", d,
              ", ".join(map(str, lim.head_dims)))
    if lim.pow2_head_dim and d & (d - 1):
        limit("pow2_head_dim", f"head_dim={d} is not a power of two", d, "a power of two")
    if lim.pow2_states and n & (n - 1):
        limit("pow2_states", f"{n} partials is not a power of two", n, "a power of two")
    if lim.max_states is not None and n > lim.max_states:
        limit("max_states", f"{n} partials exceed its maximum", n, f"<= {lim.max_states}")
    if lim.max_heads_x_head_dim is not None and heads * d > lim.max_heads_x_head_dim:
        limit("max_heads_x_head_dim", f"heads × head_dim = {heads} × {d} = {heads * d}",
              heads * d, f"<= {lim.max_heads_x_head_dim}")
    if lim.out_dtypes is not None and s.out_dtype not in lim.out_dtypes:
        limit("out_dtypes", f"partial outputs of {s.out_dtype} are not a dtype it takes",
              s.out_dtype, ", ".join(lim.out_dtypes))
    if lim.row_bytes_multiple is not None and (d * s.out_dtype_bytes) % lim.row_bytes_multiple:
        limit("row_bytes_multiple", f"a row of head_dim {d} × {s.out_dtype_bytes} bytes "
              f"({s.out_dtype}) = {d * s.out_dtype_bytes} bytes is not a multiple of "
              f"{lim.row_bytes_multiple}", d,
              f"head_dim a multiple of {lim.row_bytes_multiple // s.out_dtype_bytes or 1} "
              f"for {s.out_dtype}")
    if lim.threads is not None:
        threads = lim.threads.threads(heads, d, s.out_dtype_bytes)
        if threads > lim.threads.max_threads:
            limit("threads", f"{heads} heads × head_dim {d} ({s.out_dtype}) needs a block of "
                  f"{threads} threads (the launch fails)", threads,
                  f"<= {lim.threads.max_threads}")
    return out


def _edge_layout_dtype(p: CapabilityRecord, spec: LseSpec, c: ConsumerRecord,
                       s: CombineSetting | None) -> list[Finding]:
    out: list[Finding] = []
    layouts = c.lse.layouts
    if spec.layout not in layouts:
        out.append(_edge(Code.AC017, p, c, "lse.layouts", f"the producer writes LSE as "
                         f"{spec.layout}, the consumer reads {', '.join(layouts)}", spec.layout,
                         ", ".join(layouts), "transpose the LSE (a strided view is not enough "
                         "for a kernel that assumes contiguity) or use a consumer of that layout"))
    dtype = spec.dtype if spec.dtype != "query" else (s.out_dtype if s else None)
    if dtype is not None and dtype not in c.lse.dtypes:
        out.append(_edge(Code.AC020, p, c, "lse.dtypes", f"the producer's LSE is {dtype}",
                         dtype, ", ".join(c.lse.dtypes), "cast the LSE to float32 first",
                         escalation="from-records"))
    return out


def check_edge(producer: CapabilityRecord, consumer: ConsumerRecord,
               setting: CombineSetting | None = None, *,
               keyword_value: str | None = None) -> list[Finding]:
    """Every mismatch on the edge ``producer → consumer`` (``AC016``-``AC020``), all at once.

    ``keyword_value``: the literal the engine passes for a keyword-selected base (``"False"``);
    None means the call omits it (the consumer's default applies). ``setting``: checks the
    consumer's launch limits and resolves ``dtype = "query"``."""
    spec = producer.lse
    if not isinstance(spec, LseSpec):
        return _needs_lse(producer, f"combining by {consumer.name}",
                          "choose a backend that returns LSE")
    findings = _edge_base(producer, spec, consumer, keyword_value)
    findings += _edge_layout_dtype(producer, spec, consumer, setting)
    findings += _edge_empty(producer, spec, consumer)
    if setting is not None:
        findings += _edge_limits(producer, consumer, setting)
    return findings


def call_keys(record: CapabilityRecord) -> tuple[str, ...]:
    """The keyword arguments of the engine's call that a record reads, sorted: those its calls
    need for an LSE (``when``), choose the base by (keyword, default, dispatch) and the layout
    by. A key outside them changes nothing the checks read."""
    keys: set[str] = set()
    for c in record.calls:
        keys.update(k for k, _ in c.when)
        if c.base is not None:
            keys.update(k for k in (c.base.keyword, c.base.default_by) if k)
            keys.update(k for k, _ in c.base.picked_by)
        if c.layout is not None:
            keys.add(c.layout.keyword)
    return tuple(sorted(keys))


def check_call_turns_off_lse(record: CapabilityRecord, call: Mapping[str, object],
                             needed_by: str) -> list[Finding]:
    """``AC006`` where the engine's call (its keyword arguments, as Python values) turns off the
    LSE that ``needed_by`` (a consumer, the DCP world size) needs: every call of the record that
    returns an LSE only when given some literals (``when``: ``return_lse=True``) is passed
    another value for one of them (a flag by its truth, as the kernel's ``if`` reads it:
    ``return_lse=1`` returns the LSE)."""
    if not record.returns_lse or not record.calls:
        return []
    given = {k: literal_key(repr(v)) for k, v in call.items()}
    off: dict[str, str] = {}  # keyword → the literal the LSE needs
    for c in record.calls:
        wrong = {k: v for k, v in c.when if k in call and _differs(call[k], v)}
        if not wrong:
            return []  # this call still returns the LSE
        off.update(wrong)
    passed = ", ".join(f"{k}={given[k]}" for k in sorted(off))
    needs = ", ".join(f"{k}={v}" for k, v in sorted(off.items()))
    return [Finding(
        Code.AC006, record.name,
        f"{needed_by} needs the LSE, but the call passes {passed}: {record.name} then returns "
        f"no LSE (it returns one with {needs})", hint=f"pass {needs} to the kernel",
        field=next(iter(sorted(off))), found=passed, allowed=needs)]


def _differs(value: object, required: str) -> bool:
    """Whether a call's argument is not the literal ``required`` (``"True"``): a flag by its
    truth, anything else by its value."""
    want = literal_key(required)
    if want in ("True", "False"):
        return bool(value) is not (want == "True")
    return literal_key(repr(value)) != want


def resolve_call(record: CapabilityRecord, call: Mapping[str, object] | None,
                 ) -> tuple[CapabilityRecord, list[Finding]]:
    """The record with the LSE base *and* layout the engine's call chooses
    (:func:`resolve_call_base`, then :func:`resolve_call_layout`), and both's findings. No call
    (``None``) is ``AC028`` where the call chooses the base (:func:`resolve_call_base`); the
    record's own layout then stands (the one its kernel returns when no keyword selects)."""
    record, findings = resolve_call_base(record, call)
    if call is None:
        return record, findings
    record, more = resolve_call_layout(record, call)
    return record, findings + more


def resolve_call_layout(record: CapabilityRecord, call: Mapping[str, object],
                        ) -> tuple[CapabilityRecord, list[Finding]]:
    """The record with the LSE layout the engine's call chooses (``call``: the keyword
    arguments as Python values, ``{"lse_layout": "HN"}``), as :func:`resolve_call_base` does
    for the base; a value the kernel does not take is ``AC017`` (it raises at run time, or a
    newer release reads it as something the record does not know)."""
    chosen = next((c.layout for c in record.calls if c.layout is not None), None)
    if chosen is None or not isinstance(record.lse, LseSpec):
        return record, []
    literals = {k: repr(v) for k, v in call.items()}
    layout = chosen.resolve(literals)
    if layout is None:
        given = literals.get(chosen.keyword, "omitted")
        return record, [Finding(
            Code.AC017, record.name,
            f"{record.name}: the call passes {chosen.keyword}={given}, which is no LSE layout "
            f"the record lists (allowed: {chosen.pass_hint()})",
            hint=f"pass {chosen.pass_hint()}", field=chosen.keyword, found=given,
            allowed=chosen.pass_hint())]
    if layout == record.lse.layout:
        return record, []
    return record.model_copy(update={"lse": record.lse.model_copy(update={"layout": layout})}), []


def resolve_call_base(record: CapabilityRecord, call: Mapping[str, object] | None,
                      ) -> tuple[CapabilityRecord, list[Finding]]:
    """The record with the LSE base the engine's call chooses (``call``: the keyword arguments
    the engine passes its kernel, as Python values: ``{"backend": "auto", "return_lse_base":
    None}``). A record whose calls choose no base is returned as it is; a call that leaves the
    base to run-time dispatch is ``AC028``, naming what to pass, and so is no call at all
    (``None``) for a record whose base its call chooses: which kernel runs, and so the base, is
    then unknown."""
    chosen = next((c.base for c in record.calls if c.base is not None), None)
    if chosen is None or not isinstance(record.lse, LseSpec):
        return record, []
    if call is None:
        chooses = ", ".join(k for k in (chosen.keyword, chosen.default_by) if k)
        return record, [Finding(
            Code.AC028, record.name,
            f"its LSE base is chosen by the call's arguments ({chooses}: base "
            f"{' or '.join(chosen.bases())}), and the engine did not say which call it makes",
            hint=f"give the keyword arguments the engine passes the kernel (producer_call={{...}}; "
            f"validate --call KEY=VALUE), e.g. {chosen.pass_hint()}", escalation="unplanned-call",
            field="producer_call",
            found=None, allowed=f"the call's {chooses}")]
    literals = {k: repr(v) for k, v in call.items()}
    base = chosen.resolve(literals)
    if base is None:
        given = ", ".join(f"{k}={literals.get(k, 'omitted')}"
                          for k in (chosen.keyword, chosen.default_by) if k)
        return record, [Finding(
            Code.AC028, record.name,
            f"{record.name}: the call leaves its LSE base to dispatch ({given}): the kernel picked "
            f"at run time returns base {' or '.join(chosen.bases())}, and the combine cannot be "
            "planned for both", hint=f"select an explicit base for stable units: pass "
            f"{chosen.pass_hint()} to the kernel and the same here", escalation="unplanned-call",
            field=chosen.keyword,
            found=literals.get(chosen.keyword), allowed=chosen.pass_hint())]
    if base == record.lse.base:
        return record, []
    return record.model_copy(update={"lse": record.lse.model_copy(update={"base": base})}), []
