"""The kernel A/B behind issue 22's goals (``python bench/goals.py --experiments``).

Each variant launches through the same ``merge``/``rescale``/``pack_a2a`` argument building as the
library, with the launcher swapped for one that sets the PDL mode (``_kernels.py``: 0 off, 1 wait
then trigger, 2 trigger then wait, 3 trigger after the stores) and, for the A/B of the load order,
the kernels of another file (``--old-kernels``: the previous ``_kernels.py``, whose ``PDL`` is on/off).
Timer: ``_timing.graph_per_launch``, L2-cold rotation for T > 1; two interleaved rounds, best median
each. Inputs and bytes moved come from ``_inputs``, as in the goals' table (this module imports
nothing of ``goals.py``, which imports it for ``--experiments``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _inputs import BYTES
from _inputs import Shape
from _inputs import input_sets
from _inputs import pack_sets
from _inputs import row_mask
from _timing import copies_for_cold_l2
from _timing import copy_bandwidth
from _timing import graph_per_launch

from attn_contracts.combine import _kernels
from attn_contracts.combine import fastpath
from attn_contracts.combine import merge
from attn_contracts.combine import ops
from attn_contracts.combine import pack_a2a
from attn_contracts.combine import rescale
from attn_contracts.combine.ops import KernelConfig
from attn_contracts.combine.ops import default_config

DEVICE = "cuda"
DTYPE = torch.bfloat16
S = 2  # bytes per element of DTYPE


class _ExpLauncher:
    def __init__(self, fn: Any, pdl: int, extra: dict[str, Any]) -> None:
        self.fn, self.pdl, self.extra = fn, pdl, extra

    def __call__(self, grid: tuple[int, int, int], tensors: tuple[torch.Tensor, ...],
                 ints: tuple[int, ...], consts: dict[str, Any], num_warps: int,
                 pdl: bool = False, maxnreg: int = 0) -> None:
        kw = {**consts, "PDL": self.pdl, **({"maxnreg": maxnreg} if maxnreg else {}),
              **self.extra}
        if self.pdl:
            kw["launch_pdl"] = True
        self.fn[grid](*tensors, *ints, **kw, num_warps=num_warps)


def _patch(module: Any, pdl: int, extra: dict[str, Any]) -> None:
    fastpath.OPS.clear()  # no call may skip the launcher under test
    fastpath.PLANS.clear()

    def factory(name: str) -> _ExpLauncher:
        return _ExpLauncher(getattr(module, name), pdl, extra)
    for mod in (ops, sys.modules.get("attn_contracts.combine.launch")):
        if mod is None:
            continue
        for attr in ("_launcher", "launcher"):
            if hasattr(mod, attr):
                setattr(mod, attr, factory)


def _calls(kernel: str, shape: Shape, cfg: KernelConfig, masked: bool,
           sets: list[Any], mask_kind: str = "") -> list[Callable[[], object]]:
    n, t = shape[:2]
    if kernel == "pack":
        keeps = [row_mask((t,), DEVICE, seed=i) if masked else None for i in range(len(sets))]
        return [lambda o=o, lse=lse, send=send, o_bytes=o_bytes, keep=keep: pack_a2a(
            o, lse, send, o_bytes=o_bytes, config=cfg, row_mask=keep)
            for (o, lse, send, o_bytes), keep in zip(sets, keeps, strict=True)]
    out: list[Callable[[], object]] = []
    # mask_kind "shared": one mask for every rotated set (L2-warm, as an engine's per-step mask
    # is); "tn": each set's [N, T] mask a view of a [T, N] buffer (a row's entries adjacent)
    one = row_mask((n, t), DEVICE) if masked and mask_kind == "shared" else None
    for i, (o, lse, y, z) in enumerate(sets):
        m = one if one is not None else row_mask((n, t), DEVICE, seed=i) if masked else None
        if m is not None and mask_kind == "tn":
            m = m.t().contiguous().t()
        if kernel == "merge":
            out.append(lambda o=o, lse=lse, y=y, z=z, m=m: merge(
                o, lse, base="2", out=y, lse_out=z, config=cfg, row_mask=m))
        else:
            out.append(lambda o=o, lse=lse, y=y, z=z, m=m: rescale(
                o[0], lse, 0, base="2", out=y, lse_out=z, config=cfg, row_mask=m))
    return out


def _nbytes(kernel: str, shape: Shape) -> int:
    return BYTES[kernel](*shape, S)


def _finish(name: str, bw: float, lines: list[str], records: list[dict[str, Any]],
            out_dir: Path | None, started: float) -> int:
    """A round's end: its time, and its lines and records as ``<name>.txt``/``<name>.json``."""
    text = "\n".join(lines)
    print(f"experiments took {time.monotonic() - started:.0f} s", flush=True)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{name}.txt").write_text(text + "\n")
        (out_dir / f"{name}.json").write_text(json.dumps(
            {"copy_bandwidth_gbps": bw, "records": records}, indent=1, default=str))
    return 0


def _sets(kernel: str, shape: Shape) -> list[Any]:
    copies = copies_for_cold_l2(_nbytes(kernel, shape), shape[1])
    if kernel == "pack":
        return pack_sets(shape, DTYPE, copies, DEVICE)
    return input_sets(shape, DTYPE, copies, DEVICE)


Variant = tuple[str, Any, int, dict[str, Any], KernelConfig, bool]  # label, module, pdl, extra, cfg, masked


def _time(kernel: str, shape: Shape, variants: list[Variant],
          rounds: int = 2, mask_kinds: dict[str, str] | None = None) -> dict[str, float]:
    sets = _sets(kernel, shape)
    best: dict[str, float] = {}
    for _ in range(rounds):
        for label, module, pdl, extra, cfg, masked in variants:
            _patch(module, pdl, extra)
            try:
                us = graph_per_launch(_calls(kernel, shape, cfg, masked, sets,
                                             (mask_kinds or {}).get(label, "")),
                                      launches=50, replays=11)
            except Exception as err:
                print(f"{kernel} {shape} {label}: {type(err).__name__}: {err}", flush=True)
                us = float("nan")
            best[label] = min(best.get(label, float("inf")), us)
    return best


def _cfg(bh: int, bd: int, w: int) -> KernelConfig:
    return KernelConfig(bh, bd, w)


def _txt(c: KernelConfig) -> str:
    return f"{c.block_h}x{c.block_d} w{c.num_warps}"


def run_experiments(vk: Any, out_dir: Path | None) -> int:
    started = time.monotonic()
    old_path = os.environ.get("OLD_KERNELS")
    old = None
    if old_path:
        spec = importlib.util.spec_from_file_location("_kernels_old", old_path)
        assert spec is not None and spec.loader is not None
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
    bw = copy_bandwidth()
    new = _kernels
    records: list[dict[str, Any]] = []
    lines: list[str] = []

    def report(kernel: str, shape: Shape, res: dict[str, float],
               nbytes: int) -> None:
        best = min((v for v in res.values() if v == v), default=float("nan"))
        for label, us in res.items():
            p = 100 * nbytes / (us * 1e-6) / 1e9 / bw
            mark = " *" if us == best else ""
            lines.append(f"{kernel} {shape} {label}: {us:.3f} µs ({p:.1f} %){mark}")
        records.append({"kernel": kernel, "shape": shape, "us": res, "bytes": nbytes})
        print("\n".join(lines[-len(res):]), flush=True)

    if os.environ.get("EXP_SET") == "2":
        return _round_two(new, bw, report, lines, records, out_dir, started)
    if os.environ.get("EXP_SET") == "3":
        return _round_three(new, bw, report, lines, records, out_dir, started)
    if os.environ.get("EXP_SET") == "4":
        return _round_four(new, bw, report, lines, records, out_dir, started)
    if os.environ.get("EXP_SET") == "5":
        return _round_five(new, bw, report, lines, records, out_dir, started)
    if os.environ.get("EXP_SET") == "6":
        return _round_six(new, bw, report, lines, records, out_dir, started)
    if os.environ.get("EXP_SET") == "7":
        return _round_seven(bw, lines, records, out_dir, started)
    # E1: the load order (old kernels vs new) with and without the mask, N = 8 and N = 4
    e1 = {(8, 1, 16, 512): [_cfg(2, 64, 2), _cfg(4, 64, 2), _cfg(1, 128, 1)],
          (8, 256, 128, 512): [_cfg(4, 128, 2), _cfg(2, 128, 2)],
          (8, 2048, 32, 128): [_cfg(4, 128, 2)],
          (4, 1, 128, 512): [_cfg(2, 128, 2)]}
    for shape, extra_tiles in e1.items():
        dflt = default_config(*shape)
        pdl = 1 if dflt.pdl else 0
        variants: list[Variant] = []
        for masked in (False, True):
            tag = "masked" if masked else "plain"
            if old is not None:
                variants.append((f"old {_txt(dflt)} pdl{pdl} {tag}", old, pdl, {}, dflt, masked))
            for c in [dflt, *extra_tiles]:
                variants.append((f"new {_txt(c)} pdl{pdl} {tag}", new, pdl, {}, c, masked))
        report("merge", shape, _time("merge", shape, variants), _nbytes("merge", shape))
    # E2 + E3: PDL modes and tiles on the small (launch- or ramp-bound) shapes
    e2: list[tuple[str, Shape, list[KernelConfig]]] = [
        ("merge", (4, 1, 128, 512), [_cfg(4, 64, 1), _cfg(1, 128, 1)]),
        ("merge", (8, 1, 16, 512), [_cfg(2, 64, 2)]),
        ("merge", (4, 32, 128, 512), [_cfg(4, 128, 2), _cfg(8, 128, 4), _cfg(2, 256, 2)]),
        ("merge", (4, 512, 32, 128), [_cfg(8, 128, 4), _cfg(16, 128, 4), _cfg(32, 128, 8)]),
        ("merge", (2, 4096, 8, 128), [_cfg(8, 128, 2), _cfg(4, 128, 2), _cfg(8, 128, 8)]),
        ("merge", (2, 1024, 8, 256), [_cfg(2, 256, 1), _cfg(4, 256, 4), _cfg(8, 256, 8)]),
        ("rescale", (4, 256, 128, 512), [_cfg(8, 128, 1), _cfg(8, 128, 4), _cfg(4, 256, 2)]),
        ("rescale", (8, 2048, 32, 128), [_cfg(8, 128, 4), _cfg(32, 128, 4), _cfg(4, 128, 1)]),
        ("rescale", (4, 1, 128, 512), []),
        ("pack", (4, 256, 128, 512), []),
        ("pack", (4, 1, 128, 512), []),
    ]
    for kernel, shape, tiles in e2:
        dflt = default_config(*shape, kernel)
        variants = []
        for c in [dflt, *tiles]:
            for pdl in (0, 1, 2, 3) if shape[1] == 1 else (0, 1, 3):
                variants.append((f"{_txt(c)}{' (default)' if c is dflt else ''} pdl{pdl}", new,
                                 pdl, {}, c, False))
        nbytes = _nbytes(kernel, shape)
        report(kernel, shape, _time(kernel, shape, variants), nbytes)
    return _finish("experiments", bw, lines, records, out_dir, started)


def _round_two(new: Any, bw: float, report: Callable[..., None], lines: list[str],
               records: list[dict[str, Any]], out_dir: Path | None, started: float) -> int:
    """After the first round: PDL 2 on grids of a few waves, PDL 1 where the new tiles turn it on
    unmeasured, and whether the row mask's one-token cost depends on PDL."""
    e: list[tuple[str, Shape, list[int], bool]] = [
        ("merge", (4, 32, 128, 512), [0, 1, 2], False),
        ("merge", (4, 512, 32, 128), [0, 1, 2], False),
        ("merge", (2, 4096, 8, 128), [0, 1, 2], False),
        ("merge", (2, 1024, 8, 256), [0, 1, 2], False),
        ("merge", (3, 100, 40, 128), [0, 1, 2], False),
        ("rescale", (4, 512, 32, 128), [0, 1, 2], False),
        ("rescale", (4, 32, 128, 512), [0, 1, 2], False),
        ("pack", (4, 32, 128, 512), [0, 1, 2], False),
        ("merge", (8, 1, 16, 512), [0, 1, 2], True),
        ("merge", (4, 1, 128, 512), [0, 1, 2], True),
        ("rescale", (4, 1, 128, 512), [0, 1, 2], True),
        ("merge", (2, 1024, 8, 256), [1], True),
        ("merge", (4, 512, 32, 128), [1], True),
    ]
    for kernel, shape, modes, with_mask in e:
        dflt = default_config(*shape, kernel)
        variants: list[Variant] = []
        for masked in ((False, True) if with_mask else (False,)):
            for pdl in modes:
                variants.append((f"{_txt(dflt)} pdl{pdl}{' masked' if masked else ''}", new, pdl,
                                 {}, dflt, masked))
        nbytes = _nbytes(kernel, shape)
        report(kernel, shape, _time(kernel, shape, variants, rounds=3), nbytes)
    return _finish("experiments2", bw, lines, records, out_dir, started)


def _round_three(new: Any, bw: float, report: Callable[..., None], lines: list[str],
                 records: list[dict[str, Any]], out_dir: Path | None, started: float) -> int:
    """``SPLIT`` (the merge's math in its own block) on and off, without and with a row mask."""
    for shape in ((8, 1, 16, 512), (4, 1, 128, 512), (3, 100, 40, 128), (8, 256, 128, 512),
                  (2, 1024, 8, 256), (4, 512, 32, 128), (2, 4096, 8, 128), (8, 2048, 32, 128)):
        dflt = default_config(*shape)
        variants: list[Variant] = []
        for masked in (False, True):
            for split in (0, 1):
                variants.append((f"{_txt(dflt)} pdl{dflt.pdl} split{split}"
                                 f"{' masked' if masked else ''}", new, dflt.pdl,
                                 {"SPLIT": bool(split)}, dflt, masked))
        report("merge", shape, _time("merge", shape, variants, rounds=3), _nbytes("merge", shape))
    return _finish("experiments3", bw, lines, records, out_dir, started)


def _variant_module(name: str, replacements: list[tuple[str, str]]) -> Any:
    """``_kernels.py`` with text replaced (each must occur), imported from a temporary file."""
    import tempfile

    src = Path(_kernels.__file__).read_text()
    for a, b in replacements:
        if a not in src:
            raise ValueError(f"{a!r} not in _kernels.py")
        src = src.replace(a, b)
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _round_four(new: Any, bw: float, report: Callable[..., None], lines: list[str],
                records: list[dict[str, Any]], out_dir: Path | None, started: float) -> int:
    """The row mask's loads through L2 only (``.cg``): at one token the N entries of a row share
    one sector, and N loads of one sector in flight from one warp looked serialised in L1."""
    cg = _variant_module("_kernels_mask_cg", [
        ("vs = vs + (tl.load(mask_n, mask=row_ok, other=0),)",
         "vs = vs + (tl.load(mask_n, mask=row_ok, other=0, cache_modifier=\".cg\"),)"),
        ("return tl.load(mask_n, mask=row_ok, other=0) > 0",
         "return tl.load(mask_n, mask=row_ok, other=0, cache_modifier=\".cg\") > 0")])
    for kernel, shape in (("merge", (8, 1, 16, 512)), ("merge", (4, 1, 128, 512)),
                          ("rescale", (4, 1, 128, 512)), ("merge", (2, 1024, 8, 256)),
                          ("merge", (8, 256, 128, 512)), ("merge", (4, 512, 32, 128)),
                          ("rescale", (8, 2048, 32, 128)), ("pack", (4, 1, 128, 512))):
        dflt = default_config(*shape, kernel)
        variants: list[Variant] = []
        for masked in (False, True):
            for label, mod in (("default", new), ("mask .cg", cg)):
                if not masked and mod is cg:
                    continue
                variants.append((f"{_txt(dflt)} pdl{dflt.pdl} {label}"
                                 f"{' masked' if masked else ''}", mod, dflt.pdl, {}, dflt,
                                 masked))
        nbytes = _nbytes(kernel, shape)
        report(kernel, shape, _time(kernel, shape, variants, rounds=3), nbytes)
    return _finish("experiments4", bw, lines, records, out_dir, started)



#: how the kernels choose the row mask's select or addition (``_kernels.py``, "Row mask"), and
#: the variants that use one of them everywhere
_MASK_CHOICE = [("SINK_SCALE, N <= 4)", "SINK_SCALE, {select})"),  # merge_kernel
                ("SINK_SCALE, False)", "SINK_SCALE, {select})")]  # rescale_kernel


def _round_five(new: Any, bw: float, report: Callable[..., None], lines: list[str],
                records: list[dict[str, Any]], out_dir: Path | None, started: float) -> int:
    """How the row mask reaches the LSE: the kernels' choice (a select in merges of up to 4
    shards, else 0 or −inf added), the select everywhere, the addition everywhere; and the
    kernels' choice with one mask shared by every rotated set (L2-warm) and with each row's
    entries adjacent (a ``[T, N]`` buffer viewed as ``[N, T]``: one load per program)."""
    mods = {label: _variant_module(f"_kernels_mask_{label}",
                                   [(a, b.format(select=flag)) for a, b in _MASK_CHOICE])
            for label, flag in (("select", "True"), ("add", "False"))}
    for kernel, shape in (("merge", (8, 1, 16, 512)), ("merge", (4, 1, 128, 512)),
                          ("merge", (4, 32, 128, 512)), ("merge", (4, 512, 32, 128)),
                          ("merge", (2, 1024, 8, 256)), ("merge", (8, 256, 128, 512)),
                          ("merge", (8, 2048, 32, 128)), ("merge", (2, 4096, 8, 128)),
                          ("merge", (2, 16384, 32, 128)),
                          ("rescale", (4, 1, 128, 512)), ("rescale", (8, 2048, 32, 128)),
                          ("rescale", (4, 256, 128, 512))):
        dflt = default_config(*shape, kernel)
        head = f"{_txt(dflt)} pdl{dflt.pdl}"
        variants: list[Variant] = [(f"{head} plain", new, dflt.pdl, {}, dflt, False),
                                   (f"{head} masked", new, dflt.pdl, {}, dflt, True),
                                   (f"{head} masked, shared mask", new, dflt.pdl, {}, dflt, True),
                                   (f"{head} masked, [T, N] mask", new, dflt.pdl, {}, dflt, True)]
        variants += [(f"{head} masked, {k} everywhere", m, dflt.pdl, {}, dflt, True)
                     for k, m in mods.items()]
        kinds = {f"{head} masked, shared mask": "shared", f"{head} masked, [T, N] mask": "tn"}
        report(kernel, shape, _time(kernel, shape, variants, rounds=3, mask_kinds=kinds),
               _nbytes(kernel, shape))
    return _finish("experiments5", bw, lines, records, out_dir, started)


def _round_six(new: Any, bw: float, report: Callable[..., None], lines: list[str],
               records: list[dict[str, Any]], out_dir: Path | None, started: float) -> int:
    """``maxnreg`` on the merges of 3-4 shards with four-warp tiles: without it ptxas (Triton 3.6
    build) issues two of the four partials' loads only after the weights (40 registers); with any
    cap from 48 up it issues all four first, at the same 40 (SASS, compiled on the CPU machine)."""
    for shape in ((4, 32, 128, 512), (4, 512, 32, 128), (3, 100, 40, 128), (4, 256, 32, 128),
                  (4, 2048, 8, 128), (3, 32, 128, 512)):
        dflt = dataclasses.replace(default_config(*shape), maxnreg=0)  # the tiles before the cap
        head = f"{_txt(dflt)} pdl{dflt.pdl}"
        variants: list[Variant] = []
        for masked in (False, True):
            tag = " masked" if masked else ""
            variants += [(f"{head}{tag}", new, dflt.pdl, {}, dflt, masked),
                         (f"{head} maxnreg 64{tag}", new, dflt.pdl, {"maxnreg": 64}, dflt, masked),
                         (f"{head} maxnreg 48{tag}", new, dflt.pdl, {"maxnreg": 48}, dflt, masked)]
        report("merge", shape, _time("merge", shape, variants, rounds=3), _nbytes("merge", shape))
    return _finish("experiments6", bw, lines, records, out_dir, started)


def _round_seven(bw: float, lines: list[str], records: list[dict[str, Any]],
                 out_dir: Path | None, started: float) -> int:
    """The one-token timer's spread: the same unmasked call timed as two labels (an A/A test) and
    the masked call, each median of every one of 7 interleaved rounds kept, for the one-token
    rescale and merge, whose masked cost is a few hundredths of a µs."""
    for kernel, shape in (("rescale", (4, 1, 128, 512)), ("merge", (4, 1, 128, 512)),
                          ("merge", (8, 1, 16, 512))):
        cfg = default_config(*shape, kernel)
        sets = _sets(kernel, shape)
        runs = {"plain A": False, "plain B": False, "masked": True}
        us: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(7):
            for label, masked in runs.items():
                us[label].append(graph_per_launch(_calls(kernel, shape, cfg, masked, sets),
                                                  launches=50, replays=11))
        for label, xs in us.items():
            lines.append(f"{kernel} {shape} {label}: min {min(xs):.3f} median "
                         f"{sorted(xs)[3]:.3f} max {max(xs):.3f} µs over 7 rounds")
        a, b, m = (min(us[k]) for k in runs)
        lines.append(f"{kernel} {shape}: best of 7, B over A {100 * (b / a - 1):+.1f} %, masked "
                     f"over A {100 * (m / a - 1):+.1f} %")
        records.append({"kernel": kernel, "shape": shape, "us": us})
        print("\n".join(lines[-4:]), flush=True)
    return _finish("experiments7", bw, lines, records, out_dir, started)
