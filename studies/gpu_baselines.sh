#!/usr/bin/env bash
# On a GPU machine: GPU tests, record the example suite's baselines, compare twice, the demos,
# and the accuracy table. Everything lands in $OUT.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -m pytest tests/test_gpu.py -p no:cacheprovider -q 2>&1 | tee "$OUT/gpu_tests.log" | tail -6
python3 -m pytest --kernelperf-update-baselines -rs example_kernels -p no:cacheprovider 2>&1 | tee "$OUT/examples_update.log" | tail -14
for i in 1 2; do python3 -m pytest --kernelperf -rs example_kernels -p no:cacheprovider 2>&1 | tee "$OUT/examples_compare$i.log" | tail -11; done
cp baselines/example_kernels/test_gelu.yaml "$OUT/"
D="--kernelperf-baseline-dir=/tmp/demo -p no:cacheprovider studies/demo"
python3 -m pytest --kernelperf-update-baselines $D 2>&1 | tail -5
KERNELPERF_DEMO_REPEAT=4 python3 -m pytest --kernelperf $D 2>&1 | tee "$OUT/demo_regression.log" | grep -A8 "FAILURES"
KERNELPERF_DEMO_SCALE=1.01 python3 -m pytest $D 2>&1 | tee "$OUT/demo_mismatch.log" | grep -A4 "FAILURES"
timeout 330 python3 studies/accuracy.py --repeats 8 --out "$OUT" 2>&1 | tail -60
