"""How fast the history is at scale, on this machine: ingest, `history show`, and the dashboard.

    python studies/history/performance.py [--series 500] [--runs 200] [--results 1000] [--out DIR]

1. Ingest of one run file with RESULTS results (timed over a few runs, median).
2. A history of SERIES series x RUNS runs (one run file of SERIES results per commit, each result
   with three rounds and a one-kernel inventory; a few series with planted steps), then
   `history show` on it twice as a command in a fresh process: the first run detects change points
   in every series (Otava, when installed) and caches them, the second reads the cache.
3. `history report --html` of the same, and the page's load in headless Chromium (from navigation
   start to the page's script having built the table and the charts in view).
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pytest_kernelperf.history import synthetic_runs as rf  # noqa: E402
from pytest_kernelperf.history.changepoints import analyse_store  # noqa: E402
from pytest_kernelperf.history.store import HistoryStore  # noqa: E402


def make_run(i: int, series: int, rng: random.Random) -> dict[str, Any]:
    results = []
    for s in range(series):
        base = 0.002 + 0.03 * (s % 7) / 6
        step = 1.03 if s % 50 == 0 and i >= 120 else 1.0
        rounds = [base * step * (1 + rng.gauss(0, 0.002)) for _ in range(3)]
        results.append(
            rf.result(
                f"tests/test_m{s // 50}.py::test_k[{s}]",
                statistics.median(rounds),
                rounds=rounds,
                kernels=[(f"triton_poi_fused_{s}", "aaaa1111" if step == 1 else "bbbb2222")],
                nbytes=1 << 24,
                samples=8,
            )
        )
    return rf.run(results, created=rf.created(i), peaks={rf.H200: 4000.0})


def cli(db: Path, *args: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest_kernelperf", "history", "--db", str(db), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"history {' '.join(args)} failed: {done.stderr}")
    return took, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--series", type=int, default=500)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--results", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None, help="keep the database and page here")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="kernelperf-history-perf-"))
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(3)

    # 1. ingest of one large run
    big = [make_run(i, args.results, rng) for i in range(3)]
    times: list[float] = []
    with HistoryStore(out / "ingest.sqlite") as store:
        for run in big:
            start = time.perf_counter()
            store.append_run(run, commit=f"{len(times):040x}")
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"ingest of a run with {args.results} results: median {median:.3f} s of {len(times)}")

    # 2. a large history
    db = out / "history.sqlite"
    db.unlink(missing_ok=True)
    start = time.perf_counter()
    with HistoryStore(db) as store:
        for i in range(args.runs):
            store.append_run(make_run(i, args.series, rng), commit=f"{i + 1:040x}")
    print(f"built {args.series} series x {args.runs} runs in {time.perf_counter() - start:.1f} s")
    cold, text = cli(db, "show")
    # The reading commands cache nothing; `history import` detects and caches after storing runs.
    start = time.perf_counter()
    with HistoryStore(db) as store:
        analyse_store(store, require=False)
    filled = time.perf_counter() - start
    warm, _ = cli(db, "show")
    print(
        f"`history show` (a fresh process): {cold:.2f} s before the cache is filled (detects), "
        f"{filled:.2f} s to detect and cache as `import` does, then {warm:.2f} s"
    )
    from pytest_kernelperf.history import cli as history_cli

    wall, cpu = time.perf_counter(), time.process_time()
    history_cli.main(["history", "--db", str(db), "show"], out=io.StringIO())
    print(
        f"`history show` in this process (cached): {time.perf_counter() - wall:.2f} s, "
        f"of which CPU {time.process_time() - cpu:.2f} s"
    )
    print("\n".join(text.splitlines()[:4]))

    # 3. the dashboard
    page = out / "history.html"
    took, _ = cli(db, "report", "--html", str(page))
    print(f"`history report --html`: {took:.2f} s, {page.stat().st_size / 1e6:.1f} MB")
    sys.path.insert(0, str(ROOT / "tests" / "history"))
    from pytest_kernelperf.history import browser

    found = browser.find()
    if isinstance(found, str):
        print(f"no browser load time: {found}")
        return 0
    driver = browser.start(1280, 1000)
    try:
        loads = []
        for _ in range(3):
            start = time.perf_counter()
            driver.get(page.as_uri())
            browser.wait_ready(driver, 60)
            loads.append(time.perf_counter() - start)
        nav = driver.execute_script(
            "const t = performance.getEntriesByType('navigation')[0];"
            " return [t.domContentLoadedEventEnd, t.loadEventEnd];"
        )
        errors = browser.console_errors(driver)
    finally:
        driver.quit()
    print(
        f"dashboard load in headless Chromium: median {statistics.median(loads):.2f} s of 3 "
        f"(navigation timing of the last: DOMContentLoaded {nav[0] / 1000:.2f} s, "
        f"load {nav[1] / 1000:.2f} s); "
        f"console errors: {len(errors)}"
    )
    print(f"files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
