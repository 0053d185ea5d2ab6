#!/usr/bin/env bash
# First look on a GPU machine: install, GPU tests, the example suite, a short accuracy table.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"
python3 -m pytest tests/test_gpu.py -v -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
time python3 -m pytest --kernelperf-update-baselines -rs example_kernels -p no:cacheprovider --kernelperf-baseline-dir=/tmp/bl 2>&1 | tee "$OUT/examples_update.log" | tail -25
time python3 -m pytest --kernelperf -rs example_kernels -p no:cacheprovider --kernelperf-baseline-dir=/tmp/bl 2>&1 | tee "$OUT/examples_compare.log" | tail -25
cp /tmp/bl/example_kernels/test_gelu.yaml "$OUT/" 2>/dev/null
timeout 200 python3 bench/accuracy.py --repeats 2 --sizes 16,24 --skip-pytest-benchmark --out "$OUT" 2>&1 | tail -30
