#!/usr/bin/env bash
# On one CUDA GPU (an H200): a deliberately out-of-bounds Triton kernel between healthy tests, run
# without and with --kernelperf-isolate, each as a baseline update into a fresh folder. Expected:
#   without isolation: test_before passes, test_out_of_bounds fails naming the kernel, test_after_*
#                      error as "not measured", and no baseline file is written (update refused);
#   with isolation:    only test_out_of_bounds fails, and the others' entries are written.
# Then --kernelperf-require-gpu with the GPUs hidden (must fail), and the write tests that need a
# real Linux /proc (O_TMPFILE, skipped on the CPU CI sandbox). Everything lands in $OUT.
#
#   OUT=out bash studies/gpu_reliability.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SUITE=studies/gpu_faults/gpu_fault_suite.py
WORK=$(mktemp -d)

nvidia-smi --query-gpu=index,name,driver_version --format=csv | tee "$OUT/reliability_gpu.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2

run() {  # run NAME ARGS...: pytest on the suite, log and JUnit XML under $OUT
    local name=$1
    shift
    echo "== $name: pytest $SUITE $*"
    python3 -m pytest "$SUITE" -p no:cacheprovider -rA --junitxml="$OUT/$name.xml" "$@" \
        >"$OUT/$name.log" 2>&1
    echo "   exit code $? (log: $OUT/$name.log)"
    grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|baselines NOT updated|kernelperf baselines updated" -A0 \
        "$OUT/$name.log" | cut -c1-220
}

run plain --kernelperf-update-baselines --kernelperf-baseline-dir="$WORK/plain"
run isolated --kernelperf-update-baselines --kernelperf-isolate --kernelperf-baseline-dir="$WORK/isolated"
CUDA_VISIBLE_DEVICES= run require_gpu --kernelperf --kernelperf-require-gpu -k test_before
cp -r "$WORK/plain" "$OUT/baselines_plain" 2>/dev/null
cp -r "$WORK/isolated" "$OUT/baselines_isolated" 2>/dev/null

python3 - "$OUT" "$WORK" <<'EOF' | tee "$OUT/reliability_summary.txt"
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

out, work = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, ".")
from pytest_kernelperf.baselines.yaml_io import read


def outcomes(name):
    found = {}
    for case in ET.parse(out / f"{name}.xml").getroot().iter("testcase"):
        kind = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                kind = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or "").splitlines()[0][:150] if child.get("message") else ""
                kind += f" ({message})" if message else ""
        found[case.get("name")] = kind
    return found


def entries(folder):
    files = list(folder.rglob("*.yaml")) if folder.exists() else []
    return sorted({key.test for path in files for key in read(path)})


expected = {
    "plain": {"test_before": "passed", "test_out_of_bounds": "failed", "test_after_one": "error",
              "test_after_two": "error"},
    "isolated": {"test_before": "passed", "test_out_of_bounds": "failed", "test_after_one": "passed",
                 "test_after_two": "passed"},
    "require_gpu": {"test_before": "error"},
}
ok = True
for run, wanted in expected.items():
    got = outcomes(run)
    print(f"{run}:")
    for test, outcome in got.items():
        good = outcome.split(" ")[0] == wanted.get(test, outcome.split(" ")[0])
        ok &= good
        print(f"  {'ok ' if good else 'BAD'} {test}: {outcome}")
for run, wanted in (("plain", []), ("isolated", ["test_after_one", "test_after_two", "test_before"])):
    got = entries(work / run)
    good = got == wanted
    ok &= good
    print(f"{'ok ' if good else 'BAD'} baseline entries written by the {run} run: {got or 'none'}")
print("ALL AS EXPECTED" if ok else "SOMETHING UNEXPECTED: read the logs")
EOF

echo "== write tests that need O_TMPFILE and /proc links (skipped on the CPU CI sandbox)"
python3 -m pytest tests/test_baseline_writes.py -p no:cacheprovider -q -rs 2>&1 | tee "$OUT/writes.log" | tail -4
rm -rf "$WORK"
