"""Which findings of an engine backend's report the configuration being started reaches.

A report judges an impl class's declarations (vLLM's ``lse_base_on_e``) against the kernels the impl
calls. A declaration is wrong *for a run* only if something in that run reads it: vLLM 0.32's
``FlashInferImpl`` inherits ``lse_base_on_e = True`` over base-2 kernels, but its own combine is
given ``is_lse_base_on_e=False`` at the call, so a FLASHINFER + DCP engine combines correctly and
must start. At startup the gate refuses what the configuration reaches (a base that reaches a
combine wrong, a declaration a combine of this configuration reads); a declaration nothing here
reads is latent: one warning naming the class and where the engine would read it, so it is fixed
before a configuration that reads it ships. The static report (``attn-contracts engine``) keeps
every contradiction an error: it audits the code, not one run.

Engine-agnostic: the engine's mapping says which attributes a configuration reads and where else
the engine reads them; this module only sorts the findings.
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Sequence
from dataclasses import replace

from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Severity

__all__ = ["split_by_reach"]


def split_by_reach(findings: Sequence[Finding], *, impl: str, declared: Collection[str],
                   reads: Collection[str], readers: Sequence[str]
                   ) -> tuple[list[Finding], list[Finding]]:
    """``(live, latent)`` for one backend's findings in the configuration being started.

    ``declared``: the impl's declaration attributes (a finding about one has it as its
    ``field``); ``reads``: those this configuration reads; ``readers``: where else the engine
    reads them (``file:line (what)``). A finding about a declared attribute this configuration
    does not read is latent, and the latent findings of one attribute fold into one warning
    (the code of the first contradiction, ``AC008`` before ``AC002``); every other finding is
    live, unchanged."""
    live: list[Finding] = []
    latent: dict[str, list[Finding]] = {}
    for f in findings:
        if f.field in declared and f.field not in reads and f.severity is Severity.ERROR:
            latent.setdefault(f.field, []).append(f)
        else:
            live.append(f)
    return live, [_fold(impl, attr, group, readers) for attr, group in latent.items()]


def _fold(impl: str, attr: str, group: list[Finding], readers: Sequence[str]) -> Finding:
    first = next((f for f in group if f.code is Code.AC008), group[0])
    where = "; ".join(readers) if readers else "nowhere the mapping knows of"
    what = " | ".join(dict.fromkeys(f"{f.code} {f.message}" for f in group))
    return replace(
        first.escalated("latent"),
        message=f"{impl}.{attr} is latent: nothing in this configuration reads it, so it is not "
                f"refused; the engine would read it at {where}. {what}")
