#!/usr/bin/env bash
# On a machine with two GPUs (two H200s): the example suite under pytest-xdist.
#   1. real timers, -n 2 then -n 4, updating fresh baseline folders: which GPU each worker used,
#      and (with -n 4 on two GPUs) how often workers waited for a GPU's lock;
#   2. a fixed timer (studies/fixed_timer_plugin.py: the kernels run on the pinned GPU, the figures
#      are fixed), -n 2 twice and -n 4 twice: the files of each pair must be byte-identical, and
#      -n 2 and -n 4 must hold the same entries.
# The CUDA GELU is left out by default (its first build takes a minute per machine); FULL=1 keeps it.
# Everything lands in $OUT.
#
#   OUT=out bash studies/gpu_xdist.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
WORK=$(mktemp -d)
SELECT=(-k "not cuda")
[ "${FULL:-0}" = 1 ] && SELECT=()

nvidia-smi --query-gpu=index,name,uuid --format=csv | tee "$OUT/xdist_gpus.txt"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || echo "WARNING: fewer than two GPUs: every worker shares one"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2

update() {  # update NAME WORKERS FOLDER [ARGS...]
    local name=$1 workers=$2 folder=$3
    shift 3
    echo "== $name: -n $workers, baselines in $folder"
    python3 -m pytest example_kernels -p no:cacheprovider -n "$workers" "${SELECT[@]}" \
        --kernelperf-update-baselines --kernelperf-baseline-dir="$folder" "$@" >"$OUT/$name.log" 2>&1
    echo "   exit code $?"
    sed -n '/= kernelperf GPUs =/,/^=/p' "$OUT/$name.log" | grep -v "^=" | sed 's/^/   /'
    grep -E "passed|failed|error" "$OUT/$name.log" | tail -1 | sed 's/^/   /'
}

update real_n2 2 "$WORK/real_n2"
update real_n4 4 "$WORK/real_n4"

export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
for n in 2 4; do
    update "fixed_n${n}_a" "$n" "$WORK/fixed_n$n" -p fixed_timer_plugin
    cp -r "$WORK/fixed_n$n" "$WORK/fixed_n${n}_first"
    update "fixed_n${n}_b" "$n" "$WORK/fixed_n$n" -p fixed_timer_plugin
done

python3 - "$WORK" <<'EOF' | tee "$OUT/xdist_summary.txt"
import difflib
import sys
from pathlib import Path

work = Path(sys.argv[1])
sys.path.insert(0, ".")
from pytest_kernelperf.baselines.yaml_io import read


def files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.yaml"))}


def entries(folder):
    return {(p, k.test, k.device, k.cache): e.device_time for p in files(folder) for k, e in read(folder / p).items()}


ok = True
for n in (2, 4):
    first, second = files(work / f"fixed_n{n}_first"), files(work / f"fixed_n{n}")
    same = first == second and bool(first)
    ok &= same
    size = sum(len(b) for b in second.values())
    print(f"{'ok ' if same else 'BAD'} -n {n} twice: {len(second)} files, {size} bytes, byte-identical: {same}")
    for name in sorted(set(first) | set(second)):
        old, new = first.get(name, b"").decode().splitlines(), second.get(name, b"").decode().splitlines()
        print("".join(f"      {line[:200]}\n" for line in list(difflib.unified_diff(old, new, lineterm=""))[:12]), end="")
two, four = entries(work / "fixed_n2"), entries(work / "fixed_n4")
same = two == four and bool(two)
ok &= same
print(f"{'ok ' if same else 'BAD'} -n 2 and -n 4 hold the same {len(two)} entries with the same figures: {same}")
for n in (2, 4):
    real = entries(work / f"real_n{n}")
    print(f"    real timers, -n {n}: {len(real)} entries: " + ", ".join(sorted({t for _, t, _, _ in real})))
    ok &= {t for _, t, _, _ in real} == {t for _, t, _, _ in two}
print("ALL AS EXPECTED" if ok else "SOMETHING UNEXPECTED: read the logs")
EOF
for name in real_n2 real_n4 fixed_n2_a fixed_n4_a; do cp -r "$WORK/${name%_a}" "$OUT/baselines_$name" 2>/dev/null; done
rm -rf "$WORK"
