"""A demonstration history and its dashboard, with a screenshot for docs/history.md.

    python studies/history/dashboard_demo.py [--out DIR] [--screenshot docs/images/history_dashboard.png]

Made-up runs of a small suite on an NVIDIA H200 and an A100 over 60 commits, with round noise as
measured on the H200 (0.8% of a round for a 2 us kernel, 0.08% for a 30 us one) and planted events:
a slowdown whose generated code changed, a drift, a speed-up from a new autotune choice and a
slowdown at a Triton upgrade. Needs the `history` and `dashboard` extras (ruptures, vl-convert-python);
the screenshot needs headless Chromium (studies/history/install_browser.sh) and selenium.
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pytest_kernelperf import cli  # noqa: E402
from pytest_kernelperf.history import synthetic_runs as rf  # noqa: E402
from pytest_kernelperf.history.store import HistoryStore  # noqa: E402

COMMITS = 60
A100 = "NVIDIA A100-SXM4-80GB"


def series_ms(test: str, i: int, device: str) -> float:
    """The planted level of each series at commit i."""
    if test == "gelu[2^20]":
        return 0.0022 * (1.041 if i >= 34 else 1.0)
    if test == "softmax[4096]":
        return 0.030 * (1 + 0.005 * min(max(i - 20, 0), 8))
    if test == "layernorm[8192]":
        return 0.041 * (0.94 if i >= 45 else 1.0)
    if test == "matmul[4096]":
        return (0.52 if device == rf.H200 else 1.31) * (1.03 if i >= 12 else 1.0)
    return 0.0087


def make_run(i: int, rng: random.Random) -> dict[str, Any]:
    triton = "3.6.0" if i < 12 else "3.7.0"
    results = []
    for device in (rf.H200, A100):
        tests = ["gelu[2^20]", "softmax[4096]", "layernorm[8192]", "matmul[4096]", "add[2^24]"]
        for test in tests if device == rf.H200 else ["matmul[4096]", "add[2^24]"]:
            ms = series_ms(test, i, device)
            rsd = 0.008 if ms < 0.005 else 0.0008
            rounds = [ms * (1 + rng.gauss(0, rsd)) for _ in range(3)]
            name = test.split("[")[0]
            code = {"gelu": "3f2a1c09" if i < 34 else "9be471d2"}.get(name, f"{len(name):04x}00aa")
            block = 1024 if i < 45 else 2048
            config = f"BLOCK_SIZE={block}, num_warps=4"
            autotune = {"triton_red_fused_layernorm_0": config} if name == "layernorm" else None
            results.append(
                rf.result(
                    f"tests/test_kernels.py::test_{name}",
                    sorted(rounds)[1],
                    name=test,
                    device=device,
                    rounds=rounds,
                    kernels=[(f"triton_poi_fused_{name}_0", code)],
                    autotune=autotune,
                    nbytes=1 << 24,
                )
            )
    env = {**rf.DEVICE_ENV, "triton": triton}
    return rf.run(
        results, created=rf.created(i * 7), device_env=env, devices=[rf.H200, A100], peaks={rf.H200: 4020.0}
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--screenshot", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="kernelperf-history-demo-"))
    out.mkdir(parents=True, exist_ok=True)
    db = out / "history.sqlite"
    db.unlink(missing_ok=True)
    commit_rng, rng = random.Random(11), random.Random(12)
    with HistoryStore(db) as store:
        for i in range(COMMITS):
            commit = "".join(commit_rng.choice("0123456789abcdef") for _ in range(40))
            store.append_run(make_run(i, rng), commit=commit, branch="main")
    text = io.StringIO()
    cli.main(["history", "--db", str(db), "show"], out=text)
    print(text.getvalue())
    page = out / "history.html"
    title = "kernelperf history: demo"
    cli.main(["history", "--db", str(db), "report", "--html", str(page), "--title", title])
    if args.screenshot is None:
        return 0
    from studies.history.screenshot import screenshot

    screenshot(page, args.screenshot)
    print(f"wrote {args.screenshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
