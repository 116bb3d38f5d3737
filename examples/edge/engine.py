"""Engine code: split-KV decode over two shards, merged. Linted, never imported by the linter."""

from __future__ import annotations

import mylib


def decode_two_shards(q, k1, v1, k2, v2):
    o1, lse1 = mylib.decode(q, k1, v1, return_lse=True)
    o2, lse2 = mylib.decode(q, k2, v2, return_lse=True)
    out, _ = mylib.merge(o1, lse1, o2, lse2)
    return out
