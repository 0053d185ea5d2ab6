#!/usr/bin/env bash
# Where the project's tests spend their time on a GPU machine, and the sequential gate live on the
# held-out suite (studies/holdout_kernels): each line of pytest's verbose output stamped with the
# wall clock, so a run cut at its limit still says which tests took the time. Each step runs where
# its limit is set: GATE_S (the gate study's budget), TESTS_S (the README's `pytest`, serially),
# TIER_S (the default tier under -n 8), GPU_TIER_S (the GPU tier serially, every mark). Bytecode is
# cached where the image forbids writing it. Everything under $OUT/work, packed into
# $OUT/diagnose.tgz at the end.
#   OUT=out GATE_S=190 TESTS_S=170 bash studies/gpu_diagnose.sh
set -u
OUT=${OUT:-out}
W=$OUT/work
mkdir -p "$W"
export PYTHONUNBUFFERED=1
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=/tmp/kernelperf-pycache
trap 'tar czf "$OUT/diagnose.tgz" -C "$W" .' EXIT
stamp() { python3 -c "import sys, time
for line in sys.stdin: print(f'{time.time():.2f} {line}', end='', flush=True)"; }
{ nvidia-smi -L; date -u +%FT%TZ; } | tee "$W/card.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$W/install.log" 2>&1
if [ -n "${GATE_S:-}" ]; then
  timeout $((GATE_S + 50)) python3 studies/sequential_gate_study.py "$W/gate" --suite studies/holdout_kernels \
    --budget-s "$GATE_S" --gate-s 30 2>&1 | stamp >"$W/gate.log"
  tail -45 "$W/gate.log" | cut -c1-200
fi
if [ -n "${TESTS_S:-}" ]; then
  timeout "$TESTS_S" python3 -m pytest -v -p no:cacheprovider --durations=40 2>&1 | stamp >"$W/tests.log"
  grep -E "FAILED|ERROR" "$W/tests.log" | cut -c1-200 | head
  tail -45 "$W/tests.log" | cut -c1-180
fi
if [ -n "${TIER_S:-}" ]; then
  timeout "$TIER_S" python3 -m pytest -v -n 8 -p no:cacheprovider --durations=80 2>&1 | stamp >"$W/default_tier_xdist.log"
  tail -90 "$W/default_tier_xdist.log" | cut -c1-160
fi
if [ -n "${GPU_TIER_S:-}" ]; then
  timeout "$GPU_TIER_S" python3 -m pytest -v -p no:cacheprovider -m "" --durations=40 tests/test_gpu.py \
    tests/test_gpu_pinning.py tests/test_profile_gpu.py tests/test_roofline.py tests/test_faults.py 2>&1 | stamp >"$W/gpu_tier.log"
  tail -50 "$W/gpu_tier.log" | cut -c1-160
fi
