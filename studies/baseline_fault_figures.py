"""The figures of docs/reliability.md for damaged baseline files: every truncation of a real file,
and seeded random damage (bytes replaced, inserted, deleted).

    python studies/baseline_fault_figures.py [--damaged 2000] [--seed 0]

Counts what the loader made of each damaged file: a clear BaselineError (naming the file and the
regenerating flag), a file that still validates, or anything else (a crash). Also checks that
reading never changed a file.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from baseline_samples import sample_entries, sample_text

from pytest_kernelperf.baselines.yaml_io import BaselineError, read

NOISE = b" \t\n\r:-[],{}#&*!|>'\"%@`.0123456789eE+\x00\xff\xc3yn~"


def classify(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    try:
        entries = read(path)
    except BaselineError as exc:
        clear = str(path) in str(exc) and "--kernelperf-update-baselines" in str(exc)
        outcome = "clear error" if clear else "unclear error"
    except Exception as exc:
        outcome = f"crash ({type(exc).__name__})"
    else:
        outcome = "whole file" if entries == sample_entries() else "valid, different"
    if path.read_bytes() != data:
        outcome += ", file changed"
    return outcome


def damage(rng: random.Random, text: bytes) -> bytes:
    data = bytearray(text)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data))
        kind = rng.choice(("replace", "insert", "delete"))
        if kind == "replace":
            data[at] = rng.choice(NOISE)
        elif kind == "insert":
            data.insert(at, rng.choice(NOISE))
        else:
            del data[at]
    return bytes(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--damaged", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    text = sample_text().encode()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "test_gelu.yaml"
        start = time.perf_counter()
        cuts = Counter(classify(path, text[:offset]) for offset in range(len(text)))
        print(f"file: {len(text)} bytes, {len(sample_entries())} entries")
        print(f"truncations tried: {len(text)} in {time.perf_counter() - start:.1f} s: {dict(cuts)}")
        rng = random.Random(args.seed)
        start = time.perf_counter()
        damaged = Counter(classify(path, damage(rng, text)) for _ in range(args.damaged))
        took = time.perf_counter() - start
        print(f"randomly damaged (seed {args.seed}): {args.damaged} in {took:.1f} s: {dict(damaged)}")


if __name__ == "__main__":
    main()
