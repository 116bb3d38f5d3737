"""``mylib.merge`` behind the verifier's consumer convention (states axis only)."""

from __future__ import annotations

from typing import Any

import mylib

from attn_contracts.backends.adapter import ConsumerAdapter


def _run(o: Any, lse: Any) -> tuple[Any, Any]:
    return mylib.merge(o[0], lse[0], o[1], lse[1])


merge = ConsumerAdapter(run=_run)
