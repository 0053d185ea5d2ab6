#!/usr/bin/env bash
# The reports on a GPU machine, in one command (results under $OUT, default ./out):
#
#   OUT=out bash studies/gpu_reports.sh
#
# 1. the example suite: baselines recorded (JSON kept), then a compare run writing the terminal
#    table, JSON, markdown, PNG plots and JUnit XML, and appending to a step summary file;
# 2. studies/reports_demo: GELU roofline at 2^28 elements, a bf16 matmul's TFLOP/s, and max_ratio
#    on a deliberately slow kernel (test_slow_kernel_fails_its_ratio is EXPECTED to fail);
# 3. compare: the run's JSON against itself (all same, exit 0), and the update run's JSON against
#    the compare run's (must reproduce the compare run's verdicts; checked below);
# 4. this branch's GPU tests of the reports (peak copy bandwidth on CUDA).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
BL=$(mktemp -d)
COMMON=(-p no:cacheprovider --color=no --kernelperf-baseline-dir="$BL" --kernelperf-artifacts="$OUT/artifacts")

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
# Plots need matplotlib; without it (no network on the GPU host) render them later from the JSON:
#   python -m pytest_kernelperf report $OUT/examples.json --plot $OUT/plots
if python3 -c "import matplotlib" 2>/dev/null; then
  PLOTS=(--kernelperf-plot="$OUT/plots"); DEMO_PLOTS=(--kernelperf-plot="$OUT/plots_demo")
else
  echo "matplotlib missing: no plots here; render them from the JSON files afterwards"; PLOTS=(); DEMO_PLOTS=()
fi

echo "== 1. example suite"
python3 -m pytest --kernelperf-update-baselines -rs example_kernels "${COMMON[@]}" \
  --kernelperf-json="$OUT/examples_update.json" 2>&1 | tee "$OUT/examples_update.log" | tail -25
GITHUB_STEP_SUMMARY="$OUT/step_summary.md" python3 -m pytest --kernelperf -v -rs example_kernels "${COMMON[@]}" \
  --kernelperf-json="$OUT/examples.json" --kernelperf-markdown="$OUT/examples.md" \
  "${PLOTS[@]}" --junitxml="$OUT/examples_junit.xml" 2>&1 | tee "$OUT/examples.log" | tail -35
cp "$BL/example_kernels/test_gelu.yaml" "$OUT/" 2>/dev/null

echo "== 2. demo (expect: test_slow_kernel_fails_its_ratio FAILED with 'ratio to reference exceeded')"
python3 -m pytest --kernelperf -v studies/reports_demo "${COMMON[@]}" \
  --kernelperf-json="$OUT/demo.json" --kernelperf-markdown="$OUT/demo.md" \
  "${DEMO_PLOTS[@]}" 2>&1 | tee "$OUT/demo.log" | tail -45

echo "== 3. compare"
python3 -m pytest_kernelperf compare "$OUT/examples.json" "$OUT/examples.json" --color=no | tee "$OUT/compare_self.txt"
echo "compare with itself: exit ${PIPESTATUS[0]} (expected 0)"
python3 -m pytest_kernelperf compare "$OUT/examples_update.json" "$OUT/examples.json" --color=no \
  --json "$OUT/compare.json" --markdown "$OUT/compare.md" | tee "$OUT/compare.txt"
echo "compare update -> run: exit ${PIPESTATUS[0]} (1 only if the run had a slower verdict)"
python3 - "$OUT" <<'PY' | tee "$OUT/compare_check.txt"
import sys
from pathlib import Path
from pytest_kernelperf.results import runfile
out = Path(sys.argv[1])
run = {r.label: r for r in runfile.load(out / "examples.json").results}
again = {r.label: r for r in runfile.load(out / "compare.json").results}
bad = [(k, str(r.verdict), str(again[k].verdict)) for k, r in run.items() if again[k].verdict != r.verdict
       or (r.comparison and again[k].comparison and r.comparison.p_value != again[k].comparison.p_value)]
print("compare reproduces the run's verdicts and p-values:", "OK" if not bad else f"MISMATCH {bad}")
PY

echo "== 4. GPU tests of the reports"
python3 -m pytest tests/test_roofline.py -v -p no:cacheprovider 2>&1 | tail -12
ls -la "$OUT"; ls "$OUT"/plots* 2>/dev/null
