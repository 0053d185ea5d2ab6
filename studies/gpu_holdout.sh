#!/usr/bin/env bash
# The sequential gate on the held-out suite (studies/holdout_kernels: kernels no study tuned on), then
# the README's test command with each line stamped (where its time goes on a GPU machine), bytecode
# cached where the image forbids writing it. Everything under $OUT/w, packed into $OUT/holdout.tgz.
#   OUT=out GATE_S=190 TESTS_S=170 bash studies/gpu_holdout.sh
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export PYTHONUNBUFFERED=1
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=/tmp/kernelperf-pycache
trap 'tar czf "$OUT/holdout.tgz" -C "$W" .' EXIT
stamp() { python3 -c "import sys, time
for line in sys.stdin: print(f'{time.time():.2f} {line}', end='', flush=True)"; }
{ nvidia-smi -L; date -u +%FT%TZ; } | tee "$W/card.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$W/install.log" 2>&1
timeout $((${GATE_S:-190} + 50)) python3 studies/sequential_gate_study.py "$W/gate" --suite studies/holdout_kernels \
  --budget-s "${GATE_S:-190}" --gate-s 30 2>&1 | stamp >"$W/gate.log"
tail -45 "$W/gate.log" | cut -c1-200
date -u +%FT%TZ >>"$W/card.txt"
timeout "${TESTS_S:-170}" python3 -m pytest -v -p no:cacheprovider --durations=40 2>&1 | stamp >"$W/tests.log"
grep -c PASSED "$W/tests.log"; grep -E "FAILED|ERROR" "$W/tests.log" | cut -c1-200 | head; tail -45 "$W/tests.log" | cut -c1-180
