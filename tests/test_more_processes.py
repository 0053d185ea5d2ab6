"""--kernelperf-record-processes auto: every test timed on a GPU in two processes, a third only for
those whose first two disagree or would leave a judging run undetermined, said in the summary."""

from __future__ import annotations

import math
import random
import re
import textwrap
from pathlib import Path

import pytest
from conftest import SCRIPTED_CONFTEST, Project, seed_peak_cache

from pytest_kernelperf.baselines.store import BaselineStore
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.plugins import recording
from pytest_kernelperf.settings import Settings
from pytest_kernelperf.verdict.more_processes import Judgeable, another_process
from pytest_kernelperf.verdict.prior import NoisePrior

DEVICE = "Fake H200"
# As a suite of 18 judged at the default alpha and threshold, a run planning 5 rounds to 8 recorded.
JUDGED = Judgeable(DEVICE, NoisePrior(), level=0.05 / 18, threshold=0.005, judging_share=5 / 8)


def recorded(levels: tuple[float, ...], round_sd: float, seed: int = 1, rounds: int = 8) -> MetricRecord:
    """An entry's device time from len(levels) processes of `rounds` rounds each, around each level."""
    rng = random.Random(seed)
    values = tuple(level * math.exp(rng.gauss(0, round_sd)) for level in levels for _ in range(rounds))
    ordered = sorted(values)
    quantiles = tuple(ordered[i * (len(ordered) - 1) // 31] for i in range(32))
    return MetricRecord(
        "cupti",
        ordered[len(ordered) // 2],
        (ordered[0], ordered[-1]),
        50 * len(values),
        quantiles,
        values,
        1e-6,
        process_rounds=(rounds,) * len(levels),
    )


def test_processes_apart_beyond_their_rounds_and_the_class_prior_get_a_third() -> None:
    # A 2 us kernel (rounds 0.5% apart, 0.35% between processes built in): 1.5% apart is beyond both.
    assert another_process(recorded((0.002, 0.00203), 0.005), JUDGED) == "processes 1.5% apart"
    assert another_process(recorded((0.002, 0.002), 0.005), JUDGED) is None
    # A 200 us kernel's rounds hardly move: 0.6% apart is beyond them, 0.3% is its class's noise.
    assert another_process(recorded((0.2, 0.2012), 0.001), JUDGED) == "processes 0.6% apart"
    assert another_process(recorded((0.2, 0.2006), 0.001), JUDGED) is None


def test_rounds_spread_that_would_leave_a_run_undetermined_get_a_third() -> None:
    # A placement-sensitive 50 us kernel: its rounds 10% apart leave a 5-round run blind below 10%.
    why = another_process(recorded((0.05, 0.05), 0.10), JUDGED)
    assert why is not None and re.fullmatch(r"a run would detect \d+% at best: rounds spread \d+\.\d%", why)
    assert another_process(recorded((0.05, 0.05), 0.02), JUDGED) is None  # 2% rounds: detects a few %
    # The same rounds judged at a 10% threshold (its bar 40%) need no third process.
    assert (
        another_process(recorded((0.05, 0.05), 0.10), Judgeable(DEVICE, NoisePrior(), 0.05 / 18, 0.10, 5 / 8))
        is None
    )


def test_what_one_more_process_cannot_help_gets_none() -> None:
    assert another_process(recorded((0.002,), 0.005), JUDGED) is None  # one process: nothing to weigh
    host = MetricRecord(
        "cuda-event", 0.002, (0.002, 0.0021), 10, (0.002, 0.0021), (0.002, 0.0022), None, (1, 1)
    )
    assert another_process(host, JUDGED) is None  # a host clock's process term spans 30%
    # With --kernelperf-add-occasion an earlier occasion's offset is not this recording's disagreement.
    occasions = recorded((0.002, 0.00203, 0.00203), 0.005)
    assert another_process(occasions, JUDGED) is not None
    assert (
        another_process(MetricRecord(**{**occasions.__dict__, "occasion_processes": (1, 2)}), JUDGED) is None
    )


def test_the_chosen_tests_are_those_whose_staged_entries_call_for_one_more(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "baselines")
    path = store.path_for("t.py")
    results = []
    for test, levels in (("test_apart", (0.002, 0.00203)), ("test_agree", (0.002, 0.002))):
        entry = BaselineEntry(recorded(levels, 0.005), "2026-12-05T00:00:00Z")
        store.stage(path, EntryKey(test, DEVICE, "hot"), entry)
        results.append(BenchResult(f"t.py::{test}", None, DEVICE, Verdict.NEW, entry=entry, device_index=0))
    nodeids = [result.nodeid for result in results]
    chosen = recording.chosen_for_another(results, store, nodeids, Settings())
    assert chosen == {"t.py::test_apart": "processes 1.5% apart"}
    assert recording.chosen_for_another(results, store, ["t.py::test_agree"], Settings()) == {}


def test_the_summary_line_names_the_chosen_tests_and_why() -> None:
    chosen = {
        "t.py::test_x": "processes 1.5% apart",
        "t.py::test_y": "a run would detect 12% at best: rounds spread 4.0%",
    }
    assert recording.choice_line(3, chosen, 18) == (
        "3rd recording process for 2 of 18 tests: t.py::test_x (processes 1.5% apart), "
        "t.py::test_y (a run would detect 12% at best: rounds spread 4.0%)"
    )
    assert (
        recording.choice_line(3, {}, 18) == "3rd recording process for 0 of 18 tests: their processes agree"
    )
    many = {f"t.py::test_{i}": "processes 2.0% apart" for i in range(recording.NAMED_TESTS + 3)}
    assert recording.choice_line(3, many, 30).endswith("(processes 2.0% apart) and 3 more")


# A GPU as the plugin sees it (a CUDA device index), timed by the scripted timer. test_apart's level
# is 2% higher in every later recording process than in the first; test_agree's stays.
FAKE_GPU = (
    SCRIPTED_CONFTEST.replace("ScriptedTimer()", "ScriptedTimer(round_sd=0.002)")
    + """
from pytest_kernelperf.model.device import DeviceInfo

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_device_info(config, kind):
    return DeviceInfo(kind="cpu", name="Fake H200", index=0)
"""
)
APART = """
import os

import torch

LATER = bool(os.environ.get("KERNELPERF_RECORD_OUTPUT"))

def apart(x):
    return x * 2

apart.fake_ms = 0.004 * (1.02 if LATER else 1.0)

def agree(x):
    return x * 2

agree.fake_ms = 0.004

def test_apart(kernel_bench):
    kernel_bench(apart, torch.ones(8))

def test_agree(kernel_bench):
    kernel_bench(agree, torch.ones(8))
"""


@pytest.mark.slow
def test_a_third_process_records_only_the_tests_whose_first_two_disagree(project: Project) -> None:
    project.pytester.makeconftest(FAKE_GPU)
    project.pytester.makepyfile(test_kernels=textwrap.dedent(APART))
    seed_peak_cache(project.pytester.path, "Fake H200")
    result = project.run("--kernelperf-update-baselines", "--kernelperf-durations=0")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "recording process 2 of up to 3 (2 tests)" in out
    assert "recording process 3 of 3 (1 of 2 tests)" in out
    assert "3rd recording process for 1 of 2 tests: test_kernels.py::test_apart (processes 2.0% apart)" in out
    entries = {key.test: entry for key, entry in read(project.baseline_file).items()}
    assert entries["test_apart"].device_time.process_rounds == (8, 8, 8)
    assert entries["test_agree"].device_time.process_rounds == (8, 8)
    # --kernelperf-durations: each recording process with the tests it recorded and its phases.
    table = out[out.index("recording processes (seconds;") :].splitlines()
    assert table[1].split()[:3] == ["process", "recorded", "wall"] and "rounds" in table[1]
    assert [line.split()[:2] for line in table[2:5]] == [["1", "2"], ["2", "2"], ["3", "1"]]
    assert "-" not in table[3].split()  # a later process handed back its start-up, collection, tests
