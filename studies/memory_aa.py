"""A/A of the device-memory verdict, from run JSON files of fresh processes (no GPU).

Every process's peak device memory of each measurement is judged by the package's `judge_memory`
against every other process's as its baseline (what a baseline recorded in that process would
have said), at the default memory threshold. Memory is nearly deterministic; this counts how often
that "nearly" fails a test that did not change. The ordered pairs share their readings, so they are
not independent judgements: the evidence is the readings themselves, and how far they spread.

    python studies/memory_aa.py FOLDER [FOLDER ...]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from itertools import permutations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.memory import judge_memory
from studies.study_common import run_files


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folders", type=Path, nargs="+")
    args = parser.parse_args()
    peaks: dict[str, list[int]] = defaultdict(list)
    cards, processes = set(), 0
    for folder in args.folders:
        for path, run in run_files(folder):
            processes += 1
            cards.add(path.parent.name)
            for result in run.get("results", []):
                peak = (result.get("memory") or {}).get("peak_bytes")
                if peak is not None:
                    peaks[result["test_id"]].append(peak)
    threshold = DEFAULTS["memory_threshold"]
    judged = grew = 0
    for test_id, values in sorted(peaks.items()):
        exceeded = sum(
            judge_memory(now, before, threshold).exceeded for now, before in permutations(values, 2)
        )
        judged += len(values) * (len(values) - 1)
        grew += exceeded
        spread = (
            f"{min(values)}-{max(values)} bytes"
            if min(values) != max(values)
            else f"{values[0]} bytes, every process"
        )
        print(f"{test_id}: {len(values)} processes, peak {spread}, exceeded {exceeded}")
    print(
        f"{processes} processes ({len(cards)} folders of cards), {sum(map(len, peaks.values()))} peaks of "
        f"{len(peaks)} measurements; each judged against every other process's: {grew} exceeded "
        f"the {threshold:.0%} memory threshold in {judged} ordered pairs (not independent)"
    )


if __name__ == "__main__":
    main()
