#!/usr/bin/env bash
# Where the project's tests spend their time on a GPU machine, and the sequential gate live on the
# held-out suite: each line of pytest's verbose output stamped with the wall clock, so a run cut at
# its limit still says which tests took the time. Everything under $OUT/work, packed into
# $OUT/diagnose.tgz at the end.
#   OUT=out bash studies/gpu_diagnose.sh
set -u
OUT=${OUT:-out}
W=$OUT/work
mkdir -p "$W"
export PYTHONUNBUFFERED=1
trap 'tar czf "$OUT/diagnose.tgz" -C "$W" .' EXIT
stamp() { python3 -c "import sys, time
for line in sys.stdin: print(f'{time.time():.2f} {line}', end='', flush=True)"; }
nvidia-smi -L | tee "$W/card.txt"
date -u +%FT%TZ | tee -a "$W/card.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$W/install.log" 2>&1
if [ -n "${GATE_S:-}" ]; then
  timeout $((GATE_S + 40)) python3 studies/sequential_gate_study.py "$W/gate" --suite studies/holdout_kernels \
    --budget-s "$GATE_S" --gate-s 40 2>&1 | stamp >"$W/gate.log"
  tail -40 "$W/gate.log"
fi
timeout "${TIER_S:-150}" python3 -m pytest -v -n 8 -p no:cacheprovider --durations=80 2>&1 | stamp >"$W/default_tier_xdist.log"
tail -90 "$W/default_tier_xdist.log" | cut -c1-160
timeout "${GPU_TIER_S:-150}" python3 -m pytest -v -p no:cacheprovider -m "" --durations=40 tests/test_gpu.py \
  tests/test_gpu_pinning.py tests/test_profile_gpu.py tests/test_roofline.py tests/test_faults.py 2>&1 | stamp >"$W/gpu_tier.log"
tail -50 "$W/gpu_tier.log" | cut -c1-160
