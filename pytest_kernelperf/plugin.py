"""pytest hooks, options, the `kernelperf` marker and the `kernel_bench` fixture.

Each hook is a few lines that delegate to the run's KernelperfSession, kept in `config.stash`, or to
the plugin objects of plugins/run.py, registered here once this process's role is decided.
Nothing here imports torch: a pytest run that never uses `kernel_bench` never pays for it.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf import hookspec
from pytest_kernelperf.call.context import Devices
from pytest_kernelperf.measure.faults import FaultGuard, kernel_name
from pytest_kernelperf.measure.memory import MemoryReading, MemoryRequest
from pytest_kernelperf.measure.timing import Timer, make_timer
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.plugins.gpus import GpuPlacement
from pytest_kernelperf.plugins.items import uses_kernel_bench
from pytest_kernelperf.plugins.ncu import NcuCollector
from pytest_kernelperf.plugins.progress import Progress
from pytest_kernelperf.plugins.role import ROLE, Role
from pytest_kernelperf.plugins.role import decide as decide_role
from pytest_kernelperf.plugins.run import KernelperfRun
from pytest_kernelperf.plugins.session import KernelperfSession, KernelperfWarning
from pytest_kernelperf.plugins.triton_driver import skipped_without_driver
from pytest_kernelperf.profiling.capture import CallProfile, ProfileRequest
from pytest_kernelperf.settings import MARKER_KEYS, OPTIONS, Settings, SettingsError, merge_markers, resolve

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
    for option in OPTIONS:
        action = "store_true" if option.flag else "store"
        group.addoption(option.cli_name, action=action, default=None, dest=option.dest, help=option.help_text)
        if option.ini:
            parser.addini(option.ini_name, help=option.help_text, default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    cli = {option.field: config.getoption(option.dest) for option in OPTIONS}
    ini = {option.field: config.getini(option.ini_name) for option in OPTIONS if option.ini}
    try:
        settings = resolve(
            cli,
            ini,
            rootdir=Path(config.rootpath),
            invocation_dir=Path(config.invocation_params.dir),
            ini_file=str(config.inipath or "the ini file"),
        )
    except SettingsError as exc:
        raise pytest.UsageError(f"pytest-kernelperf: {exc}") from None
    role = config.stash[ROLE] = decide_role(config)
    against = None
    if settings.against is not None:  # imported only then: its loader adds to every start-up
        from pytest_kernelperf.plugins.against import against_revision

        against = against_revision(
            settings.against,
            Path(config.rootpath),
            limit_s=settings.against_timeout or None,
            started_by_run=role is not Role.MAIN,
        )
        config.pluginmanager.register(against, "kernelperf-against")
    faults = FaultGuard()
    # The parent of isolated tests measures nothing itself: its children pin their GPUs.
    gpus = GpuPlacement(settings, runs_kernels_here=role is Role.CHILD or not settings.isolate)
    session = config.stash[SESSION] = KernelperfSession(
        settings,
        devices=Devices(
            make_timer=lambda s, device: gpus.wrap_timer(_make_timer(config, s, device)),
            device_info=lambda kind: _device_info(config, kind),
            profile=lambda request: _profile_call(config, request),
            peak_memory=lambda request: _peak_memory(config, request),
            # Costs nothing until a call asks (--kernelperf-ncu, or a test's marker).
            ncu=NcuCollector(config, _warn),
        ),
        fail=_fail,
        guard=lambda nodeid: (
            lambda fn, name: skipped_without_driver(
                faults.around_call(nodeid, fn, name), kernel_name(fn, name)
            )
        ),
        later_recording=role is Role.RECORDER,
        # Only the main process writes to the terminal: never an xdist worker or a child process.
        progress=Progress(config, enabled=role is Role.MAIN),
        against=against,
    )
    KernelperfRun(config, session, role, faults, gpus).register()
    if against is not None and role is Role.MAIN:
        against.share()  # one export for the run's workers and children too


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None and session.against is not None:
        session.against.close()  # the revision's exported files


def _warn(message: str) -> None:
    warnings.warn(KernelperfWarning(message), stacklevel=2)


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


def _peak_memory(config: pytest.Config, request: MemoryRequest) -> MemoryReading | None:
    reading: MemoryReading | None = config.hook.pytest_kernelperf_peak_memory(
        config=config, memory_request=request
    )
    return reading


@pytest.hookimpl(trylast=True)
def pytest_kernelperf_peak_memory(
    config: pytest.Config, memory_request: MemoryRequest
) -> MemoryReading | None:
    from pytest_kernelperf.measure.memory import peak_memory

    return peak_memory(memory_request)


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
    BenchResult (``level_ms``, ``samples_ms``, ``baseline_level_ms``, ``verdict``, ...). Call it several
    times with distinct ``name=`` to time several implementations in one test.
    ``max_ratio=1.1`` also times the reference in the same run and fails ("ratio") when fn's
    level is more than 1.1x the reference's: a check that needs no baseline. ``bytes=`` and
    ``flops=`` give GB/s, TFLOP/s and the fraction of the device's copy bandwidth in the reports
    (without ``bytes=``, the bytes of the input and output tensors are counted).
    ``restore_inputs=True`` puts an in-place kernel's inputs back before every timed call (outside
    the timing); ``fn_kwargs={...}`` passes keywords whose names kernel_bench uses itself.
    ``kernel_bench.check(...)`` checks without timing. ``kernel_bench.device`` is "cuda" when a
    CUDA device is usable, else "cpu". Per-test settings: ``@pytest.mark.kernelperf(threshold=...)``.
    """
    try:
        from pytest_kernelperf.measure.device import default_device

        device = default_device()
    except ImportError as exc:
        pytest.fail(f"kernel_bench needs PyTorch ({exc}); install it with `pip install torch`", pytrace=False)
    markers = list(request.node.iter_markers("kernelperf"))  # the test's own first, then outwards
    for marker in markers:
        if marker.args:
            pytest.fail(
                f"@pytest.mark.kernelperf takes keyword arguments only, "
                f"got {marker.args!r} on {request.node.nodeid}",
                pytrace=False,
            )
    try:
        return request.config.stash[SESSION].bench(
            request.node.nodeid, merge_markers(marker.kwargs for marker in markers), device
        )
    except SettingsError as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)  # outside the except block: no chained traceback


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None]:
    """Fail the test at its end with every regression and mismatch its kernel_bench calls found."""
    __tracebackhide__ = True
    state = item.config.stash[SESSION]
    try:
        outcome = yield
    except BaseException:
        failures = state.take_deferred(item.nodeid)
        if failures:  # the test raised on its own: keep ours beside its traceback
            item.add_report_section("call", "kernelperf", "\n\n".join(failures))
        raise
    failures = state.take_deferred(item.nodeid)
    if len(failures) == 1:
        pytest.fail(failures[0], pytrace=False)
    if failures:
        listed = "\n\n".join(f"{number}. {text}" for number, text in enumerate(failures, start=1))
        pytest.fail(f"{len(failures)} kernel_bench failures in {item.nodeid}:\n\n{listed}", pytrace=False)
    return outcome


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Before -k, -m or --lf deselect: a test re-run alone counts the tests of the full run in the
    # paired mode's number of judgements (alpha / m), which plain unit tests never join.
    config.stash[SESSION].kernel_tests = [item.nodeid for item in items if uses_kernel_bench(item)]
