#!/usr/bin/env bash
# The GPU session's runs, as they were made for bench/results/ (one H200; see README "GPU runs").
#   bash bench/h200.sh checks   # GPU tests, verify (producers, consumers), FlashInfer probes  (~9 min)
#   bash bench/h200.sh speed    # tile sweep of the shapes behind a peer, then the combine table (~9 min)
#   bash bench/h200.sh goals DIR  # issue 22's goals beside FlashInfer and vLLM's kernels (~2 min);
#                                 # DIR holds vllm/v1/attention/ops/dcp.py from the vLLM 0.33 wheel
#   bash bench/h200.sh fused    # issue 29: both empty-row facts of FlashInfer's records, and its
#                               # fused DCP combine (fi_a2a) tested and timed beside a2a (~6 min;
#                               # needs the bundle's csrc/dcp_lse_reduce.cu, see README "GPU runs")
# Each step has its own time limit, so a slow step cannot take the others' output with it; logs
# and results go to $OUT (the device tool's result folder) or ./h200-out.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-h200-out}
mkdir -p "$out"
source .whl/device-prelude.sh || exit 3
export PYTHONSAFEPATH=1
step() {  # step NAME SECONDS CMD...: run with a limit, log to $out/NAME.log, print its tail
  local name=$1 limit=$2; shift 2
  echo "=== $name (limit ${limit}s): $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "=== $name: exit $? after $((SECONDS - t0)) s"
  tail -n 25 "$out/$name.log"
}
case "${1:-}" in
  checks)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    step gpu-tests 270 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE tests/test_gpu.py
    step verify-producers 120 python3 -m attn_contracts.cli verify --all --device cuda
    step verify-consumers 100 python3 bench/verify_consumers.py --device cuda --probe-limits \
      --out "$out/verify-consumers-h200.md" flashinfer.merge_state flashinfer.merge_state_in_place \
      flashinfer.merge_states attn_contracts.plan.merge
    step probe-flashinfer 50 python3 bench/probe_flashinfer_empty.py
    step empty-rows 120 python3 bench/empty_rows.py --device cuda --out "$out/empty-rows-h200.md"
    ;;
  fused)  # issue 29 (one GPU: world size 1; on a multi-GPU kind the tests take every GPU, up to 4)
    step empty-rows 150 python3 bench/empty_rows.py --device cuda --out "$out/empty-rows-h200.md"
    step gpu-fused-tests 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE tests/test_gpu.py \
      -k "empty_row_facts or fi_a2a"
    n=$(python3 -c "import torch; print(min(torch.cuda.device_count(), 4))")
    step fi-a2a 240 torchrun --nproc-per-node "$n" bench/fi_a2a.py --out "$out"
    ;;
  graphs)  # the graph tests alone (after a fix)
    step gpu-graph-tests 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE tests/test_gpu.py \
      -k "graph or larger_eager"
    ;;
  direct)  # the direct all-to-all's kernels on one GPU (multi-GPU kinds: bench/dcp_nccl.py)
    step gpu-direct-tests 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE tests/test_gpu.py \
      -k "direct or a2a_best or graph or larger_eager"
    ;;
  speed)
    step sweep 300 python3 bench/combine.py --sweep targets --budget-s 240 --out "$out/sweep"
    step combine 250 python3 bench/combine.py --bases 2 --no-study --out "$out/combine"
    ;;
  goals)
    export GOALS_COMMAND="bash bench/h200.sh goals ${2:-.peers}"
    step goals 300 python3 bench/goals.py --vllm "${2:-.peers}" --out "$out"
    cat "$out/goals-h200.md"
    ;;
  *) echo "usage: bash bench/h200.sh checks|graphs|direct|speed|goals [VLLM_DIR]|fused" >&2; exit 2 ;;
esac
