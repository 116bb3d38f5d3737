"""Laws of the combine (hypothesis), run through the Triton kernels under the interpreter.

Examples are few and shapes small: each example launches interpreted kernels (~ms per program).
"""

from __future__ import annotations

import math

import torch
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from attn_contracts.combine import merge
from fixtures.attention import attention_with_lse
from fixtures.attention import attention_with_sink
from fixtures.attention import split_attention
from fixtures.tensors import partials

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True)
BASES = st.sampled_from(["e", "2"])
LN = {"e": 1.0, "2": math.log(2.0)}


@SETTINGS
@given(base=BASES, s=st.integers(1, 24), n=st.integers(1, 6), data=st.data(),
       seed=st.integers(0, 2**16))
def test_split_then_merge_equals_full_attention(base: str, s: int, n: int, data: st.DataObject,
                                                seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(x, 3, 16, generator=g) * 2 for x in (2, s, s))
    # cuts may repeat or sit at the ends: those shards are empty
    cuts = sorted(data.draw(st.lists(st.integers(0, s), min_size=n - 1, max_size=n - 1)))
    o_parts, lse_parts = split_attention(q, k, v, cuts, base)
    out, lse = merge(o_parts.float(), lse_parts.float(), base=base, return_lse=True)
    full_o, full_lse = attention_with_lse(q, k, v, base)
    torch.testing.assert_close(out.double(), full_o, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lse.double(), full_lse, atol=1e-5, rtol=1e-5)


@SETTINGS
@given(base=BASES, s=st.integers(0, 20), n=st.integers(1, 5), data=st.data(),
       seed=st.integers(0, 2**16), by_mask=st.booleans())
def test_split_then_merge_with_a_sink_equals_full_attention_with_the_sink(
        base: str, s: int, n: int, data: st.DataObject, seed: int, by_mask: bool) -> None:
    """Softmax over [keys..., sink] (the sink's value 0) equals the shards merged with the sink
    added once. Empty shards either hold −inf (``by_mask`` False) or garbage that a row mask
    hides; ``s = 0`` makes every row empty, which must give o = 0 and LSE = s'."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(x, 3, 16, generator=g) * 2 for x in (2, s, s))
    sink = torch.randn(3, generator=g) * 3
    cuts = sorted(data.draw(st.lists(st.integers(0, s), min_size=n - 1, max_size=n - 1)))
    o_parts, lse_parts = split_attention(q, k, v, cuts, base)
    o_parts, lse_parts = o_parts.float(), lse_parts.float()
    mask = None
    if by_mask:
        sizes = torch.tensor([b - a for a, b in zip([0, *cuts], [*cuts, s], strict=True)])
        mask = (sizes > 0).view(n, 1).expand(n, 2)  # [N, T], a stride-0 view
        empty = sizes == 0
        o_parts[empty] = math.nan  # what a kernel that never ran may leave
        lse_parts[empty] = 1e4
    out, lse = merge(o_parts, lse_parts, base=base, return_lse=True, row_mask=mask, sink=sink)
    full_o, full_lse = attention_with_sink(q, k, v, sink, base)
    torch.testing.assert_close(out.double(), full_o, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lse.double(), full_lse, atol=1e-5, rtol=1e-5)


@SETTINGS
@given(base=BASES, n=st.integers(2, 5), seed=st.integers(0, 2**16), perm_seed=st.integers(0, 99))
def test_merge_is_commutative(base: str, n: int, seed: int, perm_seed: int) -> None:
    o, lse = partials(n, 3, 2, 32, torch.float32, seed=seed)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(perm_seed))
    a = merge(o, lse, base=base, return_lse=True)
    b = merge(o[perm], lse[perm], base=base, return_lse=True)
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, atol=1e-6, rtol=1e-6)


@SETTINGS
@given(base=BASES, seed=st.integers(0, 2**16))
def test_merge_is_associative(base: str, seed: int) -> None:
    o, lse = partials(3, 3, 2, 32, torch.float32, seed=seed)
    ab_o, ab_lse = merge(o[:2], lse[:2], base=base, return_lse=True)
    left = merge(torch.stack([ab_o, o[2]]), torch.stack([ab_lse, lse[2]]), base=base,
                 return_lse=True)
    bc_o, bc_lse = merge(o[1:], lse[1:], base=base, return_lse=True)
    right = merge(torch.stack([o[0], bc_o]), torch.stack([lse[0], bc_lse]), base=base,
                  return_lse=True)
    whole = merge(o, lse, base=base, return_lse=True)
    for x, y, z in zip(left, right, whole, strict=True):
        torch.testing.assert_close(x, z, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(y, z, atol=1e-5, rtol=1e-5)


@SETTINGS
@given(base=BASES, empty=st.sampled_from([-math.inf, math.inf, math.nan]),
       seed=st.integers(0, 2**16), at=st.integers(0, 1))
def test_empty_shard_is_the_identity(base: str, empty: float, seed: int, at: int) -> None:
    o, lse = partials(1, 3, 2, 32, torch.float32, seed=seed, specials=False)
    junk = torch.randn(1, 3, 2, 32) * 1e3  # an empty shard's output is garbage: never read
    lse_empty = torch.full((1, 3, 2), empty)
    pair_o = torch.cat([o, junk] if at else [junk, o])
    pair_lse = torch.cat([lse, lse_empty] if at else [lse_empty, lse])
    out, merged = merge(pair_o, pair_lse, base=base, return_lse=True)
    torch.testing.assert_close(out, o[0], atol=0, rtol=0)
    torch.testing.assert_close(merged, lse[0], atol=0, rtol=0)


@SETTINGS
@given(base=BASES, seed=st.integers(0, 2**16))
def test_self_merge_keeps_o_and_adds_log_b_2(base: str, seed: int) -> None:
    o, lse = partials(1, 3, 2, 32, torch.float32, seed=seed, specials=False)
    out, merged = merge(torch.cat([o, o]), torch.cat([lse, lse]), base=base, return_lse=True)
    torch.testing.assert_close(out, o[0], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(merged, lse[0] + math.log(2.0) / LN[base], atol=1e-5, rtol=1e-6)


@SETTINGS
@given(n=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_base2_lse_times_ln2_merged_as_base_e_is_the_same(n: int, seed: int) -> None:
    o, lse2 = partials(n, 3, 2, 32, torch.float32, seed=seed)
    as2 = merge(o, lse2, base="2")
    ase = merge(o, lse2 * math.log(2.0), base="e")
    torch.testing.assert_close(as2, ase, atol=1e-5, rtol=1e-5)
