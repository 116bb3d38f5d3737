"""The split of the combine's launch path: tiles read the SM count from the device (a CPU default
where there is none), and the direct all-to-all's kernels launch through the same Launcher as the
others (here a world of one on a plain CPU buffer, under the interpreter)."""

from __future__ import annotations

import math

import torch

from attn_contracts.combine.direct import DirectBuffers
from attn_contracts.combine.direct import DirectLayout
from attn_contracts.combine.direct import direct_merge
from attn_contracts.combine.direct import direct_send
from attn_contracts.combine.launch import launcher
from attn_contracts.combine.message import A2AMessage
from attn_contracts.combine.tiles import CPU_SMS
from attn_contracts.combine.tiles import default_config
from attn_contracts.combine.tiles import sm_count


def test_the_sm_count_comes_from_the_device_with_a_cpu_default() -> None:
    assert sm_count(torch.device("cpu")) == CPU_SMS == 132
    # 560 programs: one wave (4 per SM, PDL on) on a 148-SM B200 but not on a 132-SM H200
    shape = (8, 1, 128, 512)
    assert default_config(*shape, "rescale", sms=132) == default_config(*shape, "rescale")
    # an 8-way merge of 560 programs: at most 4 per SM (PDL mode 2, the trigger before the wait)
    # on a B200's 148 SMs, more on an H200's 132 (mode 1: at most 32 per SM)
    few = default_config(8, 70, 16, 128, "merge", sms=132)
    many = default_config(8, 70, 16, 128, "merge", sms=148)
    assert (few.pdl, many.pdl) == (1, 2)


def test_direct_kernels_launch_through_the_launcher() -> None:
    assert not launcher("direct_merge_kernel").has_pdl and launcher("merge_kernel").has_pdl
    t, h, d = 3, 2, 16
    msg = A2AMessage(1, t, h, d, 4)
    bufs = DirectBuffers.local(DirectLayout(1, msg.piece, msg.o_bytes), torch.device("cpu"))
    for step in range(2):  # both halves of the double buffer
        o, lse = torch.randn(t, h, d), torch.randn(t, h) * 2
        keep = torch.tensor([True, step == 0, True])
        out, lse_out = torch.full((t, h, d), math.nan), torch.full((t, h), math.nan)
        direct_send(bufs, o, lse, keep.view(torch.uint8), block_h=2, block_d=16, num_warps=1)
        direct_merge(bufs, out, lse_out, None, in_scale=1.0, out_scale=1.0,
                     sink_scale=1.0 / math.log(2.0), block_h=2, block_d=16, num_warps=1)
        want_o = torch.where(keep[:, None, None], o, 0.0)
        want_lse = torch.where(keep[:, None], lse, -math.inf)
        torch.testing.assert_close(out, want_o)
        torch.testing.assert_close(lse_out, want_lse)
    assert bufs.error() is None
