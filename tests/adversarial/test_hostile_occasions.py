"""--kernelperf-add-occasion adds only the same call measured again: an occasion this very run judged
different, one of a call whose inputs or compile context changed, or one of another timer is
refused, naming the test, the file and why, and the stored entry stays byte for byte; an entry at
the most occasions it keeps is left as it is, saying so."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import KERNEL_MODULE, Project, seed_peak_cache

from pytest_kernelperf.baselines import occasions, processes
from pytest_kernelperf.baselines.store import BaselineStore
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.model.baseline import MAX_OCCASIONS, BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.call import CompileContext, TensorInput
from pytest_kernelperf.model.result import Verdict

ADD = ("--kernelperf-update-baselines", "--kernelperf-add-occasion")


def recorded(project: Project, source: str = KERNEL_MODULE) -> bytes:
    project.module(source)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    return project.baseline_file.read_bytes()


def refused(result: pytest.RunResult, project: Project, why: str) -> None:
    """The test failed, naming itself, the file and why; nothing else failed."""
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    headline = next(line for line in out.splitlines() if line.startswith("not added as another"))
    assert headline.startswith("not added as another recording occasion: test_kernels.py::test_kernel on ")
    assert f"(hot cache) in {project.baseline_file}: {why}" in headline
    assert headline.endswith(
        "An occasion is the same call measured again; the stored entry was left as it was."
    )


def test_an_occasion_this_run_judged_slower_is_refused_and_the_test_stays_judged(project: Project) -> None:
    before = recorded(project)

    result = project.run(*ADD, ms=5.0)

    refused(result, project, "this run judged it slower (+400.0%) against the stored entry")
    assert project.baseline_file.read_bytes() == before
    # The regression is still caught: the test was not switched off by a pooled 5x occasion.
    project.run("--kernelperf", ms=5.0).assert_outcomes(failed=1)
    project.run("--kernelperf", ms=1.0).assert_outcomes(passed=1)


def test_an_occasion_this_run_could_not_judge_is_refused(project: Project) -> None:
    # A busy host makes a slower host-timed call `unreliable`: pooled, +20% would have widened the
    # occasion term until a later +10% read undetermined.
    before = recorded(
        project, KERNEL_MODULE + "\nkernel.fake_load = float(os.environ.get('FAKE_LOAD', '0'))\n"
    )
    project.monkeypatch.setenv("FAKE_LOAD", "1.8")
    result = project.run(*ADD, ms=1.2)
    refused(result, project, "this run judged it unreliable (+20.0%) against the stored entry")
    assert project.baseline_file.read_bytes() == before


STEADY = """

def steady(x):
    return x + 1

steady.fake_ms = 1.0

def test_steady(kernel_bench):
    kernel_bench(steady, torch.ones(8), reference=lambda x: x + 1)
"""


@pytest.mark.slow
def test_a_refused_occasion_is_not_written_by_a_later_recording_process(project: Project) -> None:
    project.module(KERNEL_MODULE + STEADY)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=2)
    before = read(project.baseline_file)
    seed_peak_cache(project.pytester.path)

    result = project.run(*ADD, "--kernelperf-record-processes=2", ms=5.0)

    result.assert_outcomes(passed=1, failed=1)
    assert "recording process 2 of 2 (2 tests)" in result.stdout.str()
    after = {key.test: entry for key, entry in read(project.baseline_file).items()}
    assert after["test_kernel"] == next(e for k, e in before.items() if k.test == "test_kernel")
    assert after["test_steady"].device_time.occasion_processes == (1, 2)  # the other test was added


def test_an_occasion_of_a_call_whose_inputs_changed_is_refused(project: Project) -> None:
    before = recorded(project)
    project.module(KERNEL_MODULE.replace("linspace(-3, 3, 64)", "linspace(-3, 3, 4096)"))

    result = project.run(*ADD)  # the same time: only the inputs tell the calls apart

    refused(
        result, project, "its inputs differ from the stored entry's: x grew 6.3e+03% (64 -> 4096 elements"
    )
    assert project.baseline_file.read_bytes() == before


def test_an_occasion_of_another_timer_is_refused_rather_than_replacing_the_entry(project: Project) -> None:
    recorded(project)
    edited = project.baseline_file.read_text().replace("method: scripted", "method: cupti")
    project.baseline_file.write_text(edited)

    result = project.run(*ADD)

    refused(result, project, "the stored entry was timed with cupti, this run with scripted")
    assert project.baseline_file.read_text() == edited


def test_the_same_call_measured_again_is_added(project: Project) -> None:
    recorded(project)
    project.run(*ADD, ms=1.0).assert_outcomes(passed=1)
    (entry,) = read(project.baseline_file).values()
    assert entry.device_time.occasion_processes == (1, 1)


def record(rounds: tuple[float, ...]) -> MetricRecord:
    low, high = min(rounds) * 0.99, max(rounds) * 1.01
    quantiles = tuple(low + (high - low) * i / 31 for i in range(32))
    return MetricRecord("cupti", sorted(rounds)[len(rounds) // 2], (low, high), 40, quantiles, rounds, 3.2e-5)


STATIC = CompileContext(shapes="static")
DYNAMIC = CompileContext(shapes="dynamic", dynamic=("x: dim 0",))


def test_an_occasion_compiled_otherwise_is_refused() -> None:
    stored = BaselineEntry(record((1.0, 1.0)), "2026-12-04", compile_context=STATIC)
    again = dataclasses.replace(stored, compile_context=DYNAMIC)
    assert occasions.not_the_same_call(stored, again, Verdict.SAME, 0.1) == (
        "the stored entry was compiled with static shapes, this run compiled with dynamic shapes (x: dim 0)"
    )
    assert occasions.not_the_same_call(stored, stored, Verdict.UNDETERMINED, 0.1) is None
    # An entry recorded before inputs were: nothing to tell the calls apart by.
    inputs = (TensorInput("x", (64,), (1,), "float32"),)
    assert (
        occasions.not_the_same_call(stored, dataclasses.replace(stored, inputs=inputs), Verdict.SAME, 0)
        is None
    )


def with_occasions(count: int) -> BaselineEntry:
    entry = BaselineEntry(record((1.0, 1.0)), "2026-12-04")
    for _ in range(count - 1):
        entry = processes.another_occasion(entry, BaselineEntry(record((1.0, 1.0)), "2026-12-04"))
    return entry


def test_an_entry_at_the_most_occasions_it_keeps_is_left_as_it_is(project: Project, tmp_path: Path) -> None:
    recorded(project)
    ((key, measured),) = read(project.baseline_file).items()
    full = measured
    for _ in range(MAX_OCCASIONS - 1):
        full = processes.another_occasion(full, measured)
    store = BaselineStore(project.baseline_file.parent)
    store.stage(project.baseline_file, key, full)
    assert store.write()[0].error is None
    before = project.baseline_file.read_bytes()

    result = project.run(*ADD, "-W", "always")

    result.assert_outcomes(passed=1, warnings=1)
    assert (
        f"not added as another recording occasion of its baseline entry in {project.baseline_file}: it "
        f"holds {MAX_OCCASIONS} recording occasions already, the most an entry keeps"
    ) in result.stdout.str()
    assert project.baseline_file.read_bytes() == before
    assert occasions.beyond_the_cap(with_occasions(MAX_OCCASIONS - 1), measured) is None


def test_a_later_recording_process_never_stages_an_entry_the_first_did_not(tmp_path: Path) -> None:
    """A refused occasion is not staged by the first process; a later process's entry of it, alone,
    would replace the stored entry."""
    store = BaselineStore(tmp_path)
    store.stage_process(tmp_path / "test_k.yaml", EntryKey("t", "d", "hot"), with_occasions(1))
    assert store.staged == {}
