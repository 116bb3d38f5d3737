"""Measure, on a GPU with FlashInfer, the facts the consumer catalog read from FlashInfer's code:
what paged decode leaves in a zero-length request's row, how the three merges treat -inf/+inf/NaN
and all-empty rows. (Where the merge's one-block launch stops is measured by `attn-contracts verify
--consumer --probe-limits`, in child processes: a failed launch poisons this process's context.)

    python bench/probe_flashinfer_empty.py      # prints one line per probe; needs CUDA + flashinfer
"""

from __future__ import annotations

import torch


def _decode_zero_length(use_tensor_cores: bool) -> str:
    import flashinfer

    dev, page, h, d = "cuda", 16, 8, 128
    lens = [23, 0, 5]  # the middle request has no pages at all
    pages = [(n + page - 1) // page for n in lens]
    indptr = torch.tensor([0, *torch.tensor(pages).cumsum(0).tolist()], dtype=torch.int32, device=dev)
    indices = torch.arange(int(indptr[-1]), dtype=torch.int32, device=dev)
    last = torch.tensor([(n - 1) % page + 1 if n else 0 for n in lens], dtype=torch.int32, device=dev)
    k = torch.randn(int(indptr[-1]), page, h, d, dtype=torch.float16, device=dev)
    v = torch.randn_like(k)
    q = torch.randn(len(lens), h, d, dtype=torch.float16, device=dev)
    ws = torch.zeros(128 << 20, dtype=torch.uint8, device=dev)
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", use_tensor_cores=use_tensor_cores)
    w.plan(indptr, indices, last, h, h, d, page, q_data_type=torch.float16,
           kv_data_type=torch.float16)
    o, lse = w.run(q, (k, v), return_lse=True)
    torch.cuda.synchronize()
    row_o, row_lse = o[1].float(), lse[1]
    return (f"decode tensor_cores={use_tensor_cores}: empty row o max|.|={row_o.abs().max():.3g} "
            f"nan={bool(row_o.isnan().any())} lse={row_lse[:3].tolist()}")


def _merges() -> list[str]:
    import flashinfer

    dev, t, h, d = "cuda", 4, 2, 128
    inf, nan = float("inf"), float("nan")
    va = torch.randn(t, h, d, dtype=torch.float16, device=dev)
    vb = torch.randn_like(va)
    # rows: (-inf, finite), (-inf, -inf), (+inf, finite), (nan, finite)
    sa = torch.tensor([[-inf] * h, [-inf] * h, [inf] * h, [nan] * h], device=dev)
    sb = torch.tensor([[0.5] * h, [-inf] * h, [0.5] * h, [0.5] * h], device=dev)
    out = []
    vm, sm = flashinfer.merge_state(va, sa, vb, sb)
    for i, what in enumerate(["-inf+fin", "-inf+-inf", "+inf+fin", "nan+fin"]):
        ok = torch.allclose(vm[i].float(), vb[i].float(), atol=1e-2)
        out.append(f"merge_state {what}: o==v_b {ok} o_nan {bool(vm[i].isnan().any())} "
                   f"o_zero {bool((vm[i] == 0).all())} s={sm[i, 0].item()}")
    vs = torch.stack([va, vb], dim=1)  # [T, N=2, H, D]
    ss = torch.stack([sa, sb], dim=1)
    vm2, sm2 = flashinfer.merge_states(vs, ss)
    out.append(f"merge_states all-empty row: o_zero {bool((vm2[1] == 0).all())} "
               f"o_nan {bool(vm2[1].isnan().any())} s={sm2[1, 0].item()}")
    sbf = sb.to(torch.bfloat16)
    before = sbf.clone()
    flashinfer.merge_state_in_place(va.clone(), sbf, vb, sa.to(torch.bfloat16))
    out.append(f"merge_state_in_place bf16 s updated: {not torch.equal(before, sbf)}")
    return out


def main() -> None:
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, {torch.cuda.get_device_name()}")
    for tc in (False, True):
        try:
            print(_decode_zero_length(tc))
        except Exception as err:  # report and go on: one probe must not hide the others
            print(f"decode tensor_cores={tc}: {type(err).__name__}: {str(err)[:120]}")
    for line in _merges():
        print(line)


if __name__ == "__main__":
    main()
