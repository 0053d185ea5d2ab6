#!/usr/bin/env bash
# The GPU runs behind the figures in docs/, in two calls of under ten minutes each:
#   OUT=out bash studies/gpu_session.sh examples-aa    # example suite vs committed baselines, re-record,
#                                                      # compare; A/A of the real-kernel suite
#   OUT=out bash studies/gpu_session.sh schedules      # verdicts under other schedules; compile
#                                                      # context demo; xdist throughput
#   OUT=out bash studies/gpu_session.sh aa-sequential  # A/A of the real-kernel suite, one process at a
#                                                      # time; a later call on the same (warm) machine
#                                                      # adds processes against the same baselines
#   OUT=out bash studies/gpu_session.sh history        # a real run history of a demo repository
#   OUT=out bash studies/gpu_session.sh first-measurement  # the one-time costs of a first measurement;
#                                                      # what moves the first profiler session's
#   OUT=out bash studies/gpu_session.sh placement      # placement study; scoring-suite verdicts under
#                                                      # every schedule (JUDGE_ALSO: another card's baselines)
#   OUT=out bash studies/gpu_session.sh record-judge   # example baselines recorded in 3 processes;
#                                                      # scoring-suite verdicts as in `placement`
#   OUT=out bash studies/gpu_session.sh final          # GPU tests both orders; examples with costs and
#                                                      # memory; scoring suite vs JUDGE_ONLY; memory growth
#   OUT=out bash studies/gpu_session.sh cross-card     # committed example baselines judged on this card;
#                                                      # the scoring suite against JUDGE_ONLY's baselines
#   OUT=out bash studies/gpu_session.sh against        # the scoring suite's cost, cold and warm, against
#                                                      # COST_BASELINES; A/A' of --kernelperf-against on it,
#                                                      # as many fresh processes as fit; then its figures
#   OUT=out bash studies/gpu_session.sh round-cost     # what a round's pieces cost, shorter rounds' noise;
#                                                      # a compiled call's first run; the scoring suite's
#                                                      # cost against COST_BASELINES (GPU_TESTS: the tests)
#   OUT=out bash studies/gpu_session.sh cost-verdicts  # tests/test_gpu.py; the scoring suite's cost against
#                                                      # COST_BASELINES; its verdicts recorded and judged here
#   OUT=out bash studies/gpu_session.sh throttle       # power-capped rounds, the MLP's weights, a
#                                                      # cProfiled judged run (COST_BASELINES)
#   OUT=out bash studies/gpu_session.sh verdicts       # example baselines recorded and judged; power-capped
#                                                      # GEMMs (studies/power_capped.py); the verdict study
#   OUT=out bash studies/gpu_session.sh first-call-probe  # Triton first calls in kernel_bench: alone,
#                                                      # after the compiled test (COST_BASELINES)
#   OUT=out bash studies/gpu_session.sh counters       # Nsight Compute: metric names, a raw CSV, three
#                                                      # planted regressions (studies/ncu_study.py); the
#                                                      # example baselines recorded and judged once
#   OUT=out bash studies/gpu_session.sh churn-verdicts # committed example baselines judged here; kernels'
#                                                      # levels after memory churn (studies/churn_placement.py);
#                                                      # the verdict study
#   OUT=out bash studies/gpu_session.sh aa-defaults    # the scoring suite recorded and judged at the defaults
#                                                      # (3 recording processes, 64x rounds); power-capped
#                                                      # GEMMs at +10% (studies/power_capped.py --plants)
#   OUT=out bash studies/gpu_session.sh examples-gemms # committed example baselines judged here; power-capped
#                                                      # GEMMs at +10%, as in aa-defaults
#   OUT=out bash studies/gpu_session.sh pages          # committed example baselines judged here; whether
#                                                      # rounds sample physical placement (studies/physical_placement.py)
# Everything lands under $OUT/work as it is measured and is packed into $OUT/<part>.tgz at the end (or
# when a step runs out of time), with each step's last lines in $OUT/<part>.txt.
set -u
part=${1:?examples-aa or schedules}
OUT=${OUT:-out}
W=$OUT/work
mkdir -p "$W"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || python3 -m pip install --no-deps --no-build-isolation -e .
SUMMARY=$OUT/$part.txt
log() { echo "$*" | tee -a "$SUMMARY"; }
pack() { tar czf "$OUT/$part.tgz" -C "$W" . 2>/dev/null; }
trap pack EXIT
step() {  # step NAME SECONDS COMMAND...: run with a time limit, keep its output and exit status
    local name=$1 limit=$2
    shift 2
    local began=$SECONDS
    timeout "$limit" "$@" >"$W/$name.log" 2>&1
    local status=$?
    log "== $name: exit $status in $((SECONDS - began)) s"
    tail -n 8 "$W/$name.log" >>"$SUMMARY"
}
judged_runs() {  # judged_runs LIMIT NAME...: the scoring suite against COST_BASELINES, once per name
    local limit=$1 when
    shift
    for when in "$@"; do
        step "cost_$when" "$limit" python3 -m pytest --kernelperf studies/scoring_kernels $P \
            --kernelperf-baseline-dir="${COST_BASELINES:?a baseline folder}" --kernelperf-durations=0 \
            --kernelperf-json="$W/cost_$when.json"
    done
}
gpu_tests() {  # the project's GPU tests in file order and reversed (no fake left behind for the next)
    local G="tests/test_gpu.py tests/test_profile_gpu.py tests/test_roofline.py tests/test_gpu_pinning.py tests/test_faults.py tests/test_placement.py"
    # 70 s per order was too little on an H200 (2026-12-01: both orders cut off).
    step gpu_tests "${TESTS_LIMIT_S:-200}" python3 -m pytest -q -n 0 -p no:cacheprovider -rs $G
    step gpu_tests_reversed "${TESTS_LIMIT_S:-200}" python3 -m pytest -q -n 0 -p no:cacheprovider -rs \
        $(echo $G | tr ' ' '\n' | tac)
}
log "$(date -u +%FT%TZ) $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tr '\n' ';')"
log "torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda)'), triton $(python3 -c 'import triton; print(triton.__version__)')"
P="-p no:cacheprovider -v -rs"
case $part in
examples-aa)
    # The committed baselines (recorded before rounds) judge this run; then record anew and compare.
    step examples_vs_committed 200 python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_vs_committed.json"
    step examples_record 100 python3 -m pytest --kernelperf-update-baselines example_kernels $P \
        --kernelperf-json="$W/examples_record.json"
    cp baselines/example_kernels/test_gelu.yaml "$W/test_gelu.yaml"
    step examples_compare 90 python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_compare.json" --kernelperf-markdown="$W/examples.md"
    # Two processes at a time on one GPU, as for docs/results/aa_real_kernels.md; they disturb each
    # other's timings, so the verdict's values come from the aa-sequential part instead.
    step aa 330 python3 studies/aa_study.py --out "$W" --runs 24 --jobs 2 --budget-s 220 --grace-s 50
    ;;
schedules)
    # The committed baselines (recorded fresh, in rounds) judge this run; then the compiled GELU in
    # the process's shared compile context against the same baselines.
    step examples_compare 90 python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_compare.json"
    step examples_shared_context 60 python3 -m pytest --kernelperf example_kernels -k compiled $P \
        -o kernelperf_compile_context=shared
    step schedules 280 python3 studies/schedule_study.py --out "$W" --budget-s 190 --grace-s 60
    step compile_context_demo 90 env OUT="$W/compile_context" python3 studies/compile_context_demo.py
    step xdist_throughput 130 python3 studies/xdist_throughput.py --out "$W" --copies 1 --workers 0,2 \
        --budget-s 80 --grace-s 40
    ;;
aa-sequential)
    # Baselines kept in an ignored folder that survives between calls on a warm machine.
    keep=out/aa-sequential-baselines
    skip=""
    [ -d "$keep" ] && skip=--skip-record
    step aa "${AA_LIMIT_S:-560}" python3 studies/aa_study.py --out "$W" --runs 40 --jobs 1 \
        --baseline-dir "$keep" $skip --budget-s "${AA_BUDGET_S:-490}" --grace-s 50
    cp -r "$keep" "$W/aa/baselines"
    ;;
placement)
    # Where buffers land: rounds at fresh placements against the process's one, per kernel; then
    # the scoring suite recorded in 3 processes and judged by fresh processes under every schedule.
    nvidia-smi -L | tee -a "$SUMMARY"
    step placement_study "${PLACEMENT_LIMIT_S:-150}" python3 studies/placement_study.py --out "$W" --rounds 12
    step verdicts "${VERDICT_LIMIT_S:-420}" python3 studies/verdict_study.py --out "$W" \
        --budget-s "${VERDICT_BUDGET_S:-380}" ${JUDGE_ALSO:+--judge-also "$JUDGE_ALSO"}
    ;;
record-judge)
    # The example baselines recorded anew in 3 processes (committed from here, judged on another
    # card later); then the scoring suite recorded in 3 processes and judged under every schedule
    # (JUDGE_ALSO: another card's baselines, judged too).
    nvidia-smi -L | tee -a "$SUMMARY"
    step examples_record "${EXAMPLES_LIMIT_S:-200}" python3 -m pytest --kernelperf-update-baselines \
        --kernelperf-record-processes=3 example_kernels $P --kernelperf-json="$W/examples_record.json"
    mkdir -p "$W/baselines" && cp -r baselines/example_kernels "$W/baselines/"
    step verdicts "${VERDICT_LIMIT_S:-420}" python3 studies/verdict_study.py --out "$W" \
        --budget-s "${VERDICT_BUDGET_S:-380}" ${JUDGE_ALSO:+--judge-also "$JUDGE_ALSO"}
    ;;
cross-card)
    # Another card: the committed example baselines judged here; then the scoring suite judged
    # against the first card's baselines (JUDGE_ONLY) under every schedule, nothing recorded.
    nvidia-smi -L | tee -a "$SUMMARY"
    step examples_vs_committed "${EXAMPLES_LIMIT_S:-150}" python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_vs_committed.json" --kernelperf-markdown="$W/examples.md"
    step verdicts "${VERDICT_LIMIT_S:-420}" python3 studies/verdict_study.py --out "$W" \
        --budget-s "${VERDICT_BUDGET_S:-380}" --judge-only "${JUDGE_ONLY:?a baseline folder}"
    ;;
final)
    # The project's GPU tests in file order and reversed (no fake left behind by one for the next);
    # the example suite with the cost breakdown and device memory; the scoring suite against another
    # card's baselines (JUDGE_ONLY) with the known-spread rounds; a planted 64 MiB workspace.
    nvidia-smi -L | tee -a "$SUMMARY"
    gpu_tests
    step examples "${EXAMPLES_LIMIT_S:-60}" python3 -m pytest --kernelperf example_kernels -k "not cuda" $P \
        --kernelperf-durations=0 --kernelperf-json="$W/examples.json"
    step scoring_other "${SCORING_LIMIT_S:-60}" python3 -m pytest --kernelperf studies/scoring_kernels $P \
        --kernelperf-baseline-dir="${JUDGE_ONLY:?a baseline folder}" --kernelperf-durations=5 \
        --kernelperf-json="$W/scoring_other.json"
    step memory_record "${MEMORY_LIMIT_S:-40}" python3 -m pytest --kernelperf-update-baselines studies/demo/test_memory_growth.py $P \
        --kernelperf-baseline-dir="$W/memory_baselines"
    step memory_growth "${MEMORY_LIMIT_S:-40}" env KERNELPERF_DEMO_WORKSPACE_MIB=64 python3 -m pytest --kernelperf \
        studies/demo/test_memory_growth.py $P --kernelperf-baseline-dir="$W/memory_baselines"
    ;;
against)
    # Where a judged run's time goes, cold and then warm (COST_BASELINES: another card's scoring
    # baselines, as for the figure in docs/results.md "Where the time goes"); then A/A' of --kernelperf-against.
    nvidia-smi -L | tee -a "$SUMMARY"
    if [ -n "${COST_BYTECODE:-}" ]; then
        # Whether this Python caches bytecode; then the judged run with the cache in a writable
        # folder (cold: it fills), without it (warm caches of Triton and inductor), and with it, warm.
        python3 -c 'import importlib.util as u, os, sys, torch; print("dont_write_bytecode", sys.flags.dont_write_bytecode, "torch folder writable", os.access(os.path.dirname(torch.__file__), os.W_OK), "torch bytecode cached", os.path.exists(u.cache_from_source(torch.__file__)))' | tee -a "$SUMMARY"
        for when in prefix_cold plain_warm prefix_warm; do
            prefix=""
            [ "${when#prefix}" != "$when" ] && prefix=/tmp/kernelperf-pycache
            step "cost_$when" "${COST_LIMIT_S:-90}" env ${prefix:+PYTHONPYCACHEPREFIX=$prefix} python3 -m pytest \
                --kernelperf studies/scoring_kernels $P --kernelperf-baseline-dir="$COST_BYTECODE" \
                --kernelperf-durations=0 --kernelperf-json="$W/cost_$when.json"
        done
        export PYTHONPYCACHEPREFIX=/tmp/kernelperf-pycache  # the study's processes start faster too
    fi
    if [ -n "${COST_BASELINES:-}" ]; then
        judged_runs "${COST_LIMIT_S:-90}" cold warm
        # COST_PROFILE=1: the warm run once more under cProfile, to see where its seconds go.
        [ -n "${COST_PROFILE:-}" ] && step cost_profiled "${COST_LIMIT_S:-90}" python3 -m cProfile \
            -o "$W/cost_profiled.pstats" -m pytest --kernelperf studies/scoring_kernels $P \
            --kernelperf-baseline-dir="$COST_BASELINES" --kernelperf-json="$W/cost_profiled.json"
    fi
    [ -n "${GPU_TESTS:-}" ] && gpu_tests
    step against "${AGAINST_LIMIT_S:-480}" python3 studies/against_study.py --out "$W" \
        --budget-s "${AGAINST_BUDGET_S:-400}"
    step against_figures 60 python3 studies/against_study.py --analyse "$W/against"
    ;;
round-cost)
    nvidia-smi -L | tee -a "$SUMMARY"
    [ -n "${GPU_TESTS:-}" ] && step gpu_test "${TESTS_LIMIT_S:-120}" python3 -m pytest -q -n 0 -p no:cacheprovider \
        -rs tests/test_gpu.py
    step round_cost "${ROUND_LIMIT_S:-300}" python3 studies/round_cost.py --out "$W/round_cost" \
        --processes "${ROUND_PROCESSES:-2}"
    [ -z "${SKIP_COMPILE_STUDY:-}" ] && step compile_first_call 120 python3 studies/compile_first_call.py --processes 3
    if [ -n "${COST_BASELINES:-}" ]; then
        judged_runs "${COST_LIMIT_S:-90}" first second
    fi
    ;;
cost-verdicts)
    nvidia-smi -L | tee -a "$SUMMARY"
    step gpu_test "${TESTS_LIMIT_S:-120}" python3 -m pytest -q -n 0 -p no:cacheprovider -rs tests/test_gpu.py
    judged_runs "${COST_LIMIT_S:-60}" first second
    # TRITON_PROBE=1: each Triton kernel's first call in fresh processes, Triton's cache now warm.
    [ -n "${TRITON_PROBE:-}" ] && step triton_first_call 120 python3 studies/triton_first_call.py
    step verdicts "${VERDICT_LIMIT_S:-300}" python3 studies/verdict_study.py --out "$W" \
        --budget-s "${VERDICT_BUDGET_S:-260}"
    ;;
throttle)
    # Whether power-capped rounds read slower (studies/throttle_rounds.py), whether the MLP block's
    # level follows its weights' placement, then where a warm judged run's seconds go (cProfile).
    nvidia-smi -L | tee -a "$SUMMARY"
    step throttle_rounds "${THROTTLE_LIMIT_S:-200}" python3 studies/throttle_rounds.py --out "$W/throttle" \
        --measurements "${THROTTLE_MEASUREMENTS:-16}"
    for process in 0 1; do
        step "param_placement_$process" 120 python3 studies/param_placement.py --out "$W/param_placement_$process" \
            --measurements "${PARAM_MEASUREMENTS:-16}" --seed "$process"
    done
    if [ -n "${COST_BASELINES:-}" ]; then
        judged_runs "${COST_LIMIT_S:-90}" first second
        step cost_profiled "${COST_LIMIT_S:-90}" python3 -m cProfile -o "$W/cost_profiled.pstats" -m pytest \
            --kernelperf studies/scoring_kernels $P --kernelperf-baseline-dir="$COST_BASELINES" \
            --kernelperf-durations=0 --kernelperf-json="$W/cost_profiled.json"
    fi
    ;;
first-call-probe)
    # Triton kernels' first calls in kernel_bench: alone, after the compiled test, with the shared
    # compile context, and under cProfile (COST_BASELINES). The first run fills the caches;
    # PROBE_RUNS names more whole judged runs before the probes (e.g. "first second third").
    S=studies/scoring_kernels
    judged_runs "${COST_LIMIT_S:-90}" ${PROBE_RUNS:-warm}
    probe() {  # probe NAME PYTEST-ARGUMENTS...
        local name=$1
        shift
        step "probe_$name" 60 python3 -m pytest --kernelperf $P --kernelperf-baseline-dir="$COST_BASELINES" \
            --kernelperf-durations=0 --kernelperf-json="$W/probe_$name.json" "$@"
    }
    probe alone $S/test_sk_small.py $S/test_sk_matmul.py
    probe after_compile $S/test_sk_compiled.py $S/test_sk_small.py $S/test_sk_matmul.py
    probe after_compile_shared $S/test_sk_compiled.py $S/test_sk_small.py $S/test_sk_matmul.py \
        --kernelperf-compile-context=shared
    step probe_profiled 90 python3 -m cProfile -o "$W/probe_profiled.pstats" -m pytest --kernelperf $P \
        --kernelperf-baseline-dir="$COST_BASELINES" --kernelperf-durations=0 \
        --kernelperf-json="$W/probe_profiled.json" $S/test_sk_compiled.py $S/test_sk_small.py $S/test_sk_matmul.py
    ;;
first-measurement)
    step first_measurement 120 python3 studies/first_measurement.py
    step profiler_start 200 python3 studies/profiler_start.py
    ;;
history)
    step real_history "${HISTORY_LIMIT_S:-300}" python3 studies/history/real_history.py --out "$W" \
        --commits 16 --budget-s "${HISTORY_BUDGET_S:-230}"
    ;;
verdicts)
    # The example baselines recorded on this card and judged once; power-capped GEMMs unchanged and
    # slowed; the scoring suite recorded (one process, the default) and judged by fresh processes
    # (JUDGE_ONLY: judge another card's baselines as well, in studies/verdict_study.py's way).
    nvidia-smi -L | tee -a "$SUMMARY"
    step examples_record "${EXAMPLES_LIMIT_S:-130}" python3 -m pytest --kernelperf-update-baselines \
        example_kernels $P --kernelperf-json="$W/examples_record.json"
    cp baselines/example_kernels/test_gelu.yaml "$W/test_gelu.yaml"
    step examples_compare 40 python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_compare.json"
    step power_capped "${POWER_LIMIT_S:-120}" python3 studies/power_capped.py --out "$W" \
        --budget-s "${POWER_BUDGET_S:-100}"
    step verdict_study "${VERDICT_LIMIT_S:-290}" python3 studies/verdict_study.py --out "$W" \
        --record-processes 1 --budget-s "${VERDICT_BUDGET_S:-260}"
    ;;
verdicts-judge)
    # As `verdicts`, on another card, with the example baselines the first card recorded judged here.
    nvidia-smi -L | tee -a "$SUMMARY"
    step examples_compare "${EXAMPLES_LIMIT_S:-130}" python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_compare.json"
    step power_capped "${POWER_LIMIT_S:-120}" python3 studies/power_capped.py --out "$W" \
        --budget-s "${POWER_BUDGET_S:-100}"
    step verdict_study "${VERDICT_LIMIT_S:-290}" python3 studies/verdict_study.py --out "$W" \
        --record-processes 1 --budget-s "${VERDICT_BUDGET_S:-260}"
    ;;
counters)
    nvidia-smi -L | tee -a "$SUMMARY"
    step ncu "${NCU_LIMIT_S:-330}" python3 studies/ncu_study.py "$W/ncu" --timeout-s "${NCU_TIMEOUT_S:-150}"
    step examples_record "${EXAMPLES_LIMIT_S:-150}" python3 -m pytest --kernelperf-update-baselines \
        example_kernels $P --kernelperf-json="$W/examples_record.json"
    cp baselines/example_kernels/test_gelu.yaml "$W/test_gelu.yaml"
    step examples_compare 45 python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_compare.json"
    ;;
churn-verdicts)
    nvidia-smi -L | tee -a "$SUMMARY"
    step examples_compare "${EXAMPLES_LIMIT_S:-130}" python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_compare.json" --kernelperf-markdown="$W/examples.md"
    step churn_placement "${CHURN_LIMIT_S:-130}" python3 studies/churn_placement.py --out "$W" \
        --budget-s "${CHURN_BUDGET_S:-115}"
    step verdict_study "${VERDICT_LIMIT_S:-290}" python3 studies/verdict_study.py --out "$W" \
        --record-processes "${RECORD_PROCESSES:-1}" --budget-s "${VERDICT_BUDGET_S:-260}"
    ;;
pages)
    nvidia-smi -L | tee -a "$SUMMARY"
    step examples_compare "${EXAMPLES_LIMIT_S:-130}" python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_compare.json" --kernelperf-markdown="$W/examples.md"
    # The histogram (placement-sensitive) recorded and judged with HIST_MAX_ROUNDS x the planned
    # rounds, in verdict_study.py's layout (planted slowdowns are then judged offline).
    H="$W/verdicts/histogram_$(nvidia-smi --query-gpu=uuid --format=csv,noheader | cut -c1-12)"
    mkdir -p "$H"
    HP="studies/scoring_kernels/test_sk_histogram.py $P --kernelperf-max-rounds=${HIST_MAX_ROUNDS:-64} --kernelperf-baseline-dir=$H/baselines"
    step hist_record 150 python3 -m pytest $HP --kernelperf-update-baselines --kernelperf-json="$H/record.json"
    for i in $(seq 0 $((${HIST_RUNS:-4} - 1))); do
        step "hist_$i" 90 python3 -m pytest $HP --kernelperf --kernelperf-json="$H/0${i}_forward_here.json"
    done
    step physical_placement "${PAGES_LIMIT_S:-300}" python3 studies/physical_placement.py --out "$W" \
        --budget-s "${PAGES_BUDGET_S:-270}"
    ;;
aa-defaults)
    # The stored-baseline design the README tells users, at the plugin's defaults: every schedule
    # but the process-placement contrast; then the power-capped GEMMs, mostly slowed by 10%.
    nvidia-smi -L | tee -a "$SUMMARY"
    step verdict_study "${VERDICT_LIMIT_S:-440}" python3 studies/verdict_study.py --out "$W" \
        --without process_placement --budget-s "${VERDICT_BUDGET_S:-420}"
    step power_capped "${POWER_LIMIT_S:-120}" python3 studies/power_capped.py --out "$W" \
        --plants 1.10,1.00,1.10 --budget-s "${POWER_BUDGET_S:-105}"
    ;;
examples-gemms)
    nvidia-smi -L | tee -a "$SUMMARY"
    step examples_compare "${EXAMPLES_LIMIT_S:-150}" python3 -m pytest --kernelperf example_kernels $P \
        --kernelperf-json="$W/examples_compare.json" --kernelperf-markdown="$W/examples.md"
    step power_capped "${POWER_LIMIT_S:-240}" python3 studies/power_capped.py --out "$W" \
        --plants 1.10,1.00,1.10 --budget-s "${POWER_BUDGET_S:-220}"
    ;;
*)
    echo "unknown part $part" >&2
    exit 2
    ;;
esac
