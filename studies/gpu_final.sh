#!/usr/bin/env bash
# One call on a GPU machine for the results we ship: the verdict figures, the example suite's
# baselines and reports, the GPU tests, and the demos of max_ratio, faults and profiles, each step
# skipped when too little of BUDGET seconds is left. Logs go to a tarball in $OUT.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"; R=$(mktemp -d); BUDGET=${BUDGET:-480}
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/final.log") 2>&1
step() {  # step NAME NEED_SECONDS COMMAND...: run when NEED seconds remain
  local name=$1 need=$2; shift 2
  if (( BUDGET - SECONDS < need )); then echo "== SKIPPED $name (only $((BUDGET - SECONDS)) s left)"; return; fi
  echo "== $name (at ${SECONDS} s)"; timeout $(( BUDGET - SECONDS )) "$@"; echo "== $name: exit $? (at ${SECONDS} s)"
}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
# The two CUDA extensions build on the CPU while the verdict processes use the GPU (CUPTI device
# time does not see host load).
python3 -c "
import torch
from example_kernels.gelu import cuda_gelu, cuda_gelu_double
x = torch.randn(1024, device='cuda'); cuda_gelu(x); cuda_gelu_double(x); print('extensions built')
" > "$R/build.log" 2>&1 &
BUILD=$!
step verdicts 150 timeout 300 python3 studies/verdicts.py --comparisons 40 --jobs 4 --small-by-work --out "$OUT"
wait $BUILD; tail -1 "$R/build.log"
S=(-p no:cacheprovider --color=no -rs)
step "example suite: record baselines" 60 python3 -m pytest --kernelperf-update-baselines -v example_kernels "${S[@]}" \
  --kernelperf-json="$R/examples_update.json"
cp baselines/example_kernels/test_gelu.yaml "$OUT/"
step "example suite: compare" 40 env GITHUB_STEP_SUMMARY="$R/step_summary.md" python3 -m pytest --kernelperf -v \
  example_kernels "${S[@]}" --kernelperf-json="$OUT/examples.json" --kernelperf-markdown="$R/examples.md" \
  --kernelperf-plot="$R/plots" --junitxml="$R/examples_junit.xml"
step "compare cli" 10 python3 -m pytest_kernelperf compare "$R/examples_update.json" "$OUT/examples.json" --color=no
step "gpu tests" 70 python3 -m pytest tests/test_gpu.py tests/test_profile_gpu.py tests/test_roofline.py "${S[@]}" -q
step "max_ratio and roofline demo" 60 python3 -m pytest --kernelperf -v studies/reports_demo "${S[@]}" \
  --kernelperf-baseline-dir="$R/demo_bl" --kernelperf-json="$R/demo.json" --kernelperf-plot="$R/plots_demo"
step "faults" 60 env OUT="$R/reliability" bash studies/gpu_reliability.sh
step "profile demo" 70 env OUT="$R" python3 studies/profile_demo.py
cp -r .kernelperf "$R/artifacts" 2>/dev/null
tar czf "$OUT/results.tgz" -C "$R" . 2>/dev/null
echo "done at ${SECONDS} s"
