"""pytest hooks, options, the `kernelperf` marker and the `kernel_bench` fixture.

Each hook is a few lines that delegate to the run's KernelperfSession, kept in `config.stash`.
Nothing here imports torch: a pytest run that never uses `kernel_bench` never pays for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf import hookspec
from pytest_kernelperf.measure.device import DeviceInfo
from pytest_kernelperf.measure.timing import Timer, make_timer
from pytest_kernelperf.plugins.reliability import Reliability
from pytest_kernelperf.plugins.session import KernelperfSession
from pytest_kernelperf.profiling.capture import CallProfile, ProfileRequest
from pytest_kernelperf.settings import MARKER_KEYS, OPTIONS, Settings, SettingsError, resolve

SESSION = pytest.StashKey[KernelperfSession]()

MARKER = (
    "kernelperf("
    + ", ".join(f"{key}={getattr(Settings(), key)!r}" for key in MARKER_KEYS)
    + "): per-test settings of kernel_bench"
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kernelperf", "kernel performance regression testing (pytest-kernelperf)")
    group.addoption(
        "--kernelperf",
        action="store_true",
        default=False,
        help="time kernel_bench calls and compare them with the stored baselines",
    )
    group.addoption(
        "--kernelperf-update-baselines",
        action="store_true",
        default=False,
        help="time kernel_bench calls and write their baselines (entries of tests that did not run are kept)",
    )
    for option in OPTIONS:
        dest = f"kernelperf_{option.field}"
        if option.flag:
            group.addoption(option.cli_name, action="store_true", default=None, dest=dest, help=option.help)
        else:
            group.addoption(option.cli_name, action="store", default=None, dest=dest, help=option.help)
        if option.ini:
            parser.addini(option.ini_name, help=option.help, default=None)
    # Reliability (reliability.py): pruning, isolation, and GPU CI that must not pass without a GPU.
    group.addoption(
        "--kernelperf-prune",
        action="store_true",
        default=False,
        help="with --kernelperf-update-baselines, remove baseline entries of tests that no longer exist "
        "(entries whose test id was not collected; deselected tests keep theirs)",
    )
    group.addoption(
        "--kernelperf-isolate",
        action="store_true",
        default=False,
        help="run each test that uses kernel_bench in a fresh Python process, so that a kernel that "
        "crashes or poisons the CUDA context fails only its own test",
    )
    group.addoption(
        "--kernelperf-require-gpu",
        action="store_true",
        default=False,
        help="tests using kernel_bench fail when no CUDA device is usable (for GPU CI jobs)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    cli = {option.field: config.getoption(f"kernelperf_{option.field}") for option in OPTIONS}
    ini = {option.field: config.getini(option.ini_name) for option in OPTIONS}
    try:
        settings = resolve(
            cli,
            ini,
            timing=bool(config.getoption("kernelperf")),
            update=bool(config.getoption("kernelperf_update_baselines")),
            rootdir=Path(config.rootpath),
            ini_file=str(config.inipath or "the ini file"),
        )
    except SettingsError as exc:
        raise pytest.UsageError(f"pytest-kernelperf: {exc}") from None
    reliability = Reliability(config, settings)
    config.stash[SESSION] = KernelperfSession(
        settings,
        make_timer=lambda s, device: reliability.wrap_timer(_make_timer(config, s, device)),
        device_info=lambda kind: _device_info(config, kind),
        fail=_fail,
        profile=lambda request: _profile_call(config, request),
        guard=reliability.guard,
    )
    reliability.attach(config.stash[SESSION])
    config.pluginmanager.register(reliability, "kernelperf-reliability")
    from pytest_kernelperf.plugins.reporting import (
        Reports,  # the -v words, JUnit properties, summary table and report files
    )

    config.pluginmanager.register(Reports(config, config.stash[SESSION]), "kernelperf-reports")


def _fail(message: str) -> Any:
    __tracebackhide__ = True
    pytest.fail(message, pytrace=False)


def _make_timer(config: pytest.Config, settings: Settings, device: DeviceInfo) -> Timer:
    timer: Timer = config.hook.pytest_kernelperf_make_timer(config=config, settings=settings, device=device)
    return timer


def _device_info(config: pytest.Config, kind: str) -> DeviceInfo:
    info: DeviceInfo = config.hook.pytest_kernelperf_device_info(config=config, kind=kind)
    return info


@pytest.hookimpl(trylast=True)
def pytest_kernelperf_make_timer(config: pytest.Config, settings: Settings, device: DeviceInfo) -> Timer:
    return make_timer(settings.timer, device)


def _profile_call(config: pytest.Config, request: ProfileRequest) -> CallProfile:
    profiled: CallProfile = config.hook.pytest_kernelperf_profile_call(config=config, profile_request=request)
    return profiled


@pytest.hookimpl(trylast=True)
def pytest_kernelperf_profile_call(config: pytest.Config, profile_request: ProfileRequest) -> CallProfile:
    from pytest_kernelperf.profiling.capture import capture

    return capture(profile_request)


@pytest.hookimpl(trylast=True)
def pytest_kernelperf_device_info(config: pytest.Config, kind: str) -> DeviceInfo:
    from pytest_kernelperf.measure.device import fingerprint

    return fingerprint(kind)


@pytest.fixture
def kernel_bench(request: pytest.FixtureRequest) -> Any:
    """Time a kernel, check it against a reference, and compare it with its stored baseline.

        def test_gelu(kernel_bench):
            x = torch.randn(1 << 24, device=kernel_bench.device)
            kernel_bench(triton_gelu, x, reference=pytorch_gelu)

    ``kernel_bench(fn, *args, reference=None, rtol=None, atol=None, name=None, bytes=None,
    flops=None, max_ratio=None, **kwargs)`` calls ``fn(*args, **kwargs)``, compares its output with
    ``reference(*args, **kwargs)`` (assert_close semantics, dtype-aware tolerances; a wrong answer
    fails with "mismatch"), and with ``--kernelperf`` times it and compares the times with the
    baseline (a significant slowdown beyond the threshold fails with "regression"). Returns a
    BenchResult (``median_ms``, ``samples_ms``, ``baseline_ms``, ``verdict``, ...). Call it several
    times with distinct ``name=`` to time several implementations in one test.
    ``max_ratio=1.1`` also times the reference in the same run and fails ("ratio") when fn's
    median is more than 1.1x the reference's: a check that needs no baseline. ``bytes=`` and
    ``flops=`` give GB/s, TFLOP/s and the fraction of the device's copy bandwidth in the reports
    (without ``bytes=``, the bytes of the input and output tensors are counted).
    ``kernel_bench.check(...)`` checks without timing. ``kernel_bench.device`` is "cuda" when a
    CUDA device is usable, else "cpu". Per-test settings: ``@pytest.mark.kernelperf(threshold=...)``.
    """
    try:
        from pytest_kernelperf.measure.device import default_device

        device = default_device()
    except ImportError as exc:
        pytest.fail(f"kernel_bench needs PyTorch ({exc}); install it with `pip install torch`", pytrace=False)
    marker = request.node.get_closest_marker("kernelperf")
    if marker is not None and marker.args:
        pytest.fail(
            f"@pytest.mark.kernelperf takes keyword arguments only, "
            f"got {marker.args!r} on {request.node.nodeid}",
            pytrace=False,
        )
    try:
        return request.config.stash[SESSION].bench(
            request.node.nodeid, dict(marker.kwargs) if marker else None, device
        )
    except SettingsError as exc:
        pytest.fail(str(exc), pytrace=False)


def pytest_collection_finish(session: pytest.Session) -> None:
    # The tests that will run: their baseline entries set the run's number of judgements (alpha / m).
    session.config.stash[SESSION].planned_tests = [item.nodeid for item in session.items]


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash[SESSION]
    state.finish()
    if any(update.error for update in state.updates) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a baseline file could not be written
