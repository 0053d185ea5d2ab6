"""Names the dead-code check (vulture) cannot see used. pytest hooks (`pytest_*`) are ignored by
name in .ci/run; everything else is listed here with the reason it stays."""
# ruff: noqa: B018

from vulture.whitelist_utils import Whitelist

from pytest_kernelperf import atomic, plugin, testing
from pytest_kernelperf.baselines.yaml_io import _Dumper
from pytest_kernelperf.history import bisect, browser, portable
from pytest_kernelperf.history.store import HistoryStore
from pytest_kernelperf.kernel_bench import KernelBench
from pytest_kernelperf.measure.placement import Placed
from pytest_kernelperf.verdict.stats import Summary

_ = Whitelist()

plugin.kernel_bench  # the fixture, found by pytest
testing.ScriptedTimer  # public test doubles for users' own plugin tests
testing.FakeProfiler
testing.sampling_plan  # the default plan for tests and studies that drive a timer directly
_Dumper.ignore_aliases  # a yaml.SafeDumper override
_.outcome  # pytest report attributes the plugin sets
_.longrepr
_.tb  # __exit__'s signature
_.nextitem  # a hook's signature
# The full summary of a sample set, kept for the verdict and report code to choose from.
Summary.q1_ms
Summary.q3_ms
Summary.min_ms
Summary.max_ms
KernelBench.__call__  # the fixture's value is called by tests
bisect.judge_main  # run by `git bisect run` through a generated script
_.binary_location  # selenium's ChromeOptions attribute
browser.console_errors  # used by the dashboard's browser test and demo
browser.wait_ready
# The screenshot helpers of the dashboard's browser test (tests/history/test_dashboard_browser.py).
browser.Screenshot.colours
browser.element_png
browser.reddish
browser.greenish
browser.png_size
portable.portable_note  # called by the session for "new" results and by the history CLI
HistoryStore.append_run  # --kernelperf-history
atomic.GITIGNORE_LINE  # the .gitignore line docs/ci.md gives, checked by a test
Placed.moved_arguments  # whether a round's arguments were copied: checked by the placement tests
testing.FakeMemoryProbe  # a public test double, like ScriptedTimer
# Phases of CallCost and RunCost, read by name (model/result.py CALL_PHASES, results/cost.py RUN_PHASES).
_.first_call
_.baseline_io
_.startup
_.collection
_.recording_processes
_.baseline_writes
_.peak_bandwidth
# Columns of the history's rows, written by name (history/rows.py MEASUREMENT_COLUMNS, RUN_COLUMNS).
_.against_commit
_.against_ms
_.peak_gb_per_s
_.commit_sha
# Held, never read: a round's memory pool stays alive until the next round (measure/placement.py).
_._last_pool
