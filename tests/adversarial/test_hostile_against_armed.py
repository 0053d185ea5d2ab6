"""`--kernelperf-against REF` with a REF whose import leaves something armed to act later, after the
guards that watch it run: a shutdown hook, a timer and its handler, a delayed thread, a SIGTERM
handler, a non-daemon thread, a patched pytest or plugin, a fork. Each is undone, and its module
refused (`incomparable`, naming what it left), which --kernelperf-strict fails.

The in-process runs give REF's code harmless payloads (a marker file, a no-op), and the `contained`
fixture puts the process back should any of it get through: these runs share this process. The
payloads that end the process for real (os._exit(0)) run in a process of their own."""

from __future__ import annotations

import _thread
import atexit
import gc
import json
import os
import re
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SUBPROCESS_ARGS, seed_peak_cache
from test_hostile_against import a_test, commit, kernel, repo, results, run

from pytest_kernelperf.revision import containment
from pytest_kernelperf.revision.armed import LeftArmed, nothing_left_armed
from pytest_kernelperf.verdict import judge

__all__ = ["repo"]  # the fixture, used by name

# Each test commits a revision to a git repository of its own and runs the paired mode on it, REF's
# import under the guard: about 1.5 s a test, 18 s for the file. The slow tier (which CI runs) holds
# them, so that the default tier stays within two minutes on two cores.
pytestmark = pytest.mark.slow

STRICT = ("--kernelperf-against", "HEAD", "--kernelperf-strict", "-W", "ignore")
CATCHABLE = sorted(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})


@pytest.fixture
def contained(tmp_path: Path) -> Iterator[Path]:
    """The process's hooks, timers, pytest.fail and the judge as they were, after the test whatever
    REF's code did; a marker file that REF's payloads write when they act."""
    handlers = {number: signal.getsignal(number) for number in CATCHABLE}
    hooks = list(threading._threading_atexits)  # type: ignore[attr-defined]
    callbacks = list(gc.callbacks)
    fail, verdict, code = pytest.fail, judge._verdict, judge._verdict.__code__
    running = containment._State.running_threads
    kept = list(running)
    yield tmp_path / "acted"
    signal.setitimer(signal.ITIMER_REAL, 0)
    for number, handler in handlers.items():
        if handler is not None:
            signal.signal(number, handler)
    threading._threading_atexits[:] = hooks  # type: ignore[attr-defined]
    gc.callbacks[:] = callbacks
    pytest.fail, judge._verdict = fail, verdict  # type: ignore[assignment]
    judge._verdict.__code__ = code
    running[:] = kept


def refused(pytester: pytest.Pytester, root: Path, hostile: str) -> tuple[pytest.RunResult, str]:
    """REF's kern/ops.py at 1 ms with `hostile` at its end; this code 5x slower and harmless. The
    run under --kernelperf-strict, and why the call was not compared (it must not have been)."""
    commit(root, {"kern/ops.py": kernel() + hostile, "test_ops.py": a_test("kern.ops")})
    (root / "kern" / "ops.py").write_text(kernel(ms=5.0))
    result = run(pytester, *STRICT)
    found = results(root)["test_kernel"]
    assert found["verdict"] == "incomparable", result.stdout.str()
    return result, str(found["comparison"]["reason"])


def test_a_shutdown_hook_registered_at_import_is_removed_and_refused(
    pytester: pytest.Pytester, repo: Path, contained: Path
) -> None:
    """threading._register_atexit runs before atexit, at shutdown: os._exit(0) there turned a failed
    run green."""
    hooks = list(threading._threading_atexits)  # type: ignore[attr-defined]
    result, reason = refused(
        pytester,
        repo,
        f"import threading, pathlib\nthreading._register_atexit(pathlib.Path({str(contained)!r}).touch)\n",
    )
    result.assert_outcomes(failed=1)
    assert "importing kern.ops at HEAD" in reason
    assert "registered a shutdown hook (threading._register_atexit)" in reason
    assert threading._threading_atexits == hooks  # type: ignore[attr-defined]


def test_a_timer_and_the_handler_it_fires_armed_at_import_are_disarmed_and_refused(
    pytester: pytest.Pytester, repo: Path, contained: Path
) -> None:
    before = signal.getsignal(signal.SIGALRM)
    hostile = (
        "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\n"
        "signal.setitimer(signal.ITIMER_REAL, 60)\n"
    )
    result, reason = refused(pytester, repo, hostile)
    result.assert_outcomes(failed=1)
    assert "set a SIGALRM handler and armed a SIGALRM timer" in reason
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before


# seconds of bounded waiting
def test_a_delayed_thread_started_at_import_is_stopped_before_it_acts(
    pytester: pytest.Pytester, repo: Path, contained: Path
) -> None:
    hostile = (
        "import threading, time, pathlib\n"
        "def _later():\n    time.sleep(1)\n"
        f"    pathlib.Path({str(contained)!r}).touch()\n"
        "threading.Thread(target=_later, name='later', daemon=True).start()\n"
    )
    result, reason = refused(pytester, repo, hostile)
    result.assert_outcomes(failed=1)
    assert "started a thread (later)" in reason
    deadline = time.monotonic() + 10
    while any(t.name == "later" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    assert not contained.exists()  # stopped as it woke, before the line after its sleep


def test_refs_import_replacing_pytest_fail_is_undone_and_refused(
    pytester: pytest.Pytester, repo: Path, contained: Path
) -> None:
    """The plugin fails tests through pytest.fail, looked up when it fails one."""
    fail = pytest.fail
    result, reason = refused(pytester, repo, "import pytest\npytest.fail = lambda *a, **k: None\n")
    result.assert_outcomes(failed=1)
    assert "changed the judging code (pytest.fail)" in reason
    assert pytest.fail is fail


# Found through the garbage collector: the Config of the run that imports REF (the one holding
# this plugin's --kernelperf-against, in its own folder), never that of the run of these tests
# nor one of an earlier test's run still in memory.
FINDS_THE_RUN = """
import gc, os, pytest
from _pytest.config import Config

class _Plugin:
{hooks}
for _found in gc.get_objects():
    if (
        isinstance(_found, Config) and _found.pluginmanager.get_plugin("kernelperf-against")
        and str(_found.rootpath) == os.getcwd()
    ):
{act}"""
REGISTERS = '        _found.pluginmanager.register(_Plugin(), "evil")\n'
PASSES_FAILURES = """
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed:
            report.outcome, report.longrepr = "passed", None
        return report
"""
EXITS_0 = """
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        session.exitstatus = 0
"""
CHANGES_THE_RUN = """
        _found.pluginmanager.get_plugin("session").testsfailed = -1
        _found.option.kernelperf_strict = False
"""


@pytest.mark.parametrize(
    ("hostile", "said"),
    [
        (FINDS_THE_RUN.format(hooks=PASSES_FAILURES, act=REGISTERS), "registered a pytest plugin (evil)"),
        (FINDS_THE_RUN.format(hooks=EXITS_0, act=REGISTERS), "registered a pytest plugin (evil)"),
        (
            FINDS_THE_RUN.format(hooks="    pass\n", act=CHANGES_THE_RUN),
            "changed the pytest run (config.option.kernelperf_strict, session.testsfailed)",
        ),
    ],
    ids=["makereport-wrapper", "sessionfinish-exit-0", "session-and-options"],
)
def test_refs_import_registering_a_plugin_or_changing_the_run_is_undone_and_refused(
    pytester: pytest.Pytester, repo: Path, contained: Path, hostile: str, said: str
) -> None:
    """pytest's plugin manager and session are objects, not code: a plugin registered by REF's
    import would turn the failure into a pass, or the exit status into 0."""
    result, reason = refused(pytester, repo, hostile)
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert said in reason


@pytest.mark.parametrize(
    ("hostile", "said"),
    [
        ("_j._verdict = lambda *a, **k: None\n", "pytest_kernelperf.verdict.judge._verdict"),
        ("_j._verdict.__code__ = (lambda *a, **k: None).__code__\n", "the code of pytest_kernelperf"),
    ],
)
def test_refs_import_rewriting_the_plugins_judge_is_undone_and_refused(
    pytester: pytest.Pytester, repo: Path, contained: Path, hostile: str, said: str
) -> None:
    """pytest_kernelperf is shared with REF's code: its judge is the one that judges the run."""
    verdict, code = judge._verdict, judge._verdict.__code__
    result, reason = refused(pytester, repo, "import pytest_kernelperf.verdict.judge as _j\n" + hostile)
    result.assert_outcomes(failed=1)
    assert said in reason
    assert judge._verdict is verdict and judge._verdict.__code__ is code


def test_a_sigterm_handler_set_at_import_is_restored_and_refused(
    pytester: pytest.Pytester, repo: Path, contained: Path
) -> None:
    """A CI cancel (SIGTERM) that REF's handler would have turned into exit status 0."""
    before = signal.getsignal(signal.SIGTERM)
    result, reason = refused(
        pytester, repo, "import signal, os\nsignal.signal(signal.SIGTERM, lambda *a: None)\n"
    )
    result.assert_outcomes(failed=1)
    assert "set a SIGTERM handler" in reason
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_thread_still_running_keeps_the_exit_status_from_it(
    pytester: pytest.Pytester, repo: Path, contained: Path
) -> None:
    """A non-daemon thread asleep in a call cannot be stopped at once: the run, which the
    interpreter would hold at exit until the thread ends, ends with its own status first."""
    hostile = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(3,), name='holds-the-exit').start()\n"
    )
    result, reason = refused(pytester, repo, hostile)
    result.assert_outcomes(failed=1)
    assert "started a thread (holds-the-exit)" in reason
    assert "a thread still in a call stops once back in Python" in reason
    held = next(t for t in threading.enumerate() if t.name == "holds-the-exit")
    assert held.ident in containment._State.running_threads
    assert any(
        getattr(hook, "func", None) is containment._exit_now and hook.args == (1,)
        for hook in threading._threading_atexits  # type: ignore[attr-defined]
    )


def test_an_import_that_forks_says_the_copy_kept_running(
    pytester: pytest.Pytester, repo: Path, contained: Path
) -> None:
    """Both copies of the process return from the import: the copy is ended where it returns, and
    the module refused for what it did, not as one that ended the process."""
    result, reason = refused(pytester, repo, "import os\nos.fork()\n")
    result.assert_outcomes(failed=1)
    assert "forked a copy of the process that went on running it" in reason
    assert "ended the process" not in reason


# -- for real: os._exit(0) from what REF's import left armed, in a process of its own ------------------

EXITS_LATER = {
    "kern/hook.py": "import threading, os\nthreading._register_atexit(lambda: os._exit(0))\n",
    "kern/alarm.py": (
        "import signal, os\nsignal.signal(signal.SIGALRM, lambda *a: os._exit(0))\n"
        "signal.setitimer(signal.ITIMER_REAL, 1.0)\n"
    ),
    "kern/later.py": (
        "import threading, time, os\n"
        "threading.Thread(target=lambda: (time.sleep(1.0), os._exit(0)), daemon=True).start()\n"
    ),
    "kern/holds.py": "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\n",
    "kern/outlives.py": (  # catches the guard's ThreadStopped, then ends the process
        "import threading, time, os\n"
        "def _outlives():\n    for _ in range(3):\n        try:\n            time.sleep(0.4)\n"
        "        except BaseException:\n            pass\n    os._exit(0)\n"
        "threading.Thread(target=_outlives, daemon=True).start()\n"
    ),
    "kern/plugin.py": FINDS_THE_RUN.format(hooks=EXITS_0, act=REGISTERS),
}


# processes of their own: what got through would end this one
def test_what_refs_import_left_armed_never_turns_the_failed_run_green(
    pytester: pytest.Pytester, repo: Path
) -> None:
    modules = {path: kernel() + hostile for path, hostile in EXITS_LATER.items()}
    tests = {f"test_{Path(path).stem}.py": a_test(f"kern.{Path(path).stem}") for path in modules}
    wait = "import time\n\ndef test_zz_wait():\n    time.sleep(2)\n"  # past the timer and the threads
    commit(repo, {**modules, **tests, "kern/slow.py": kernel(), "test_slow.py": a_test("kern.slow")})
    (repo / "test_zz.py").write_text(wait)
    for path in [*modules, "kern/slow.py"]:
        (repo / path).write_text(kernel(ms=5.0))
    seed_peak_cache(repo)
    began = time.monotonic()
    result = pytester.runpytest_subprocess(
        *SUBPROCESS_ARGS, "--kernelperf-json=run.json", *STRICT, timeout=120
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert time.monotonic() - began < 45  # not held at exit by the 60 s thread
    by_module = {
        r["nodeid"].split("::")[0]: r for r in json.loads((repo / "run.json").read_text())["results"]
    }
    assert by_module["test_slow.py"]["verdict"] == "slower"
    for module in tests:
        assert by_module[module]["verdict"] == "incomparable", module


@pytest.mark.parametrize("how", [("-n", "2"), ("--kernelperf-isolate",)])
def test_a_judge_rewritten_by_refs_import_is_undone_in_workers_and_children(
    pytester: pytest.Pytester, repo: Path, how: tuple[str, ...]
) -> None:
    """Only the workers (-n) or the isolated children import REF: each undoes it and refuses."""
    hostile = "import pytest_kernelperf.verdict.judge as _j\n_j._verdict = lambda *a, **k: _j.Verdict.SAME\n"
    commit(repo, {"kern/ops.py": kernel() + hostile, "test_ops.py": a_test("kern.ops")})
    (repo / "kern" / "ops.py").write_text(kernel(ms=5.0))
    seed_peak_cache(repo)
    result = pytester.runpytest_subprocess(
        *SUBPROCESS_ARGS, "--kernelperf-json=run.json", *STRICT, *how, timeout=300
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    found = results(repo)["test_kernel"]
    assert found["verdict"] == "incomparable"
    assert "pytest_kernelperf.verdict.judge._verdict" in found["comparison"]["reason"]


# -- a thread of REF's that outlives its guard cannot end the process -----------------------------------


def _catching(act: Callable[..., object], *args: object, refused: list[str]) -> None:
    try:
        act(*args)
    except containment.ProcessExitRefused as exc:
        refused.append(str(exc))


def _joined(thread: threading.Thread) -> None:
    thread.start()
    thread.join(5)


def _raw_joined(target: Callable[..., object], args: tuple[object, ...], kwargs: dict[str, Any]) -> None:
    _thread.start_new_thread(target, args, kwargs)
    time.sleep(0.3)


SIGNALS_ITSELF: dict[str, Callable[[list[str]], object]] = {
    "itself": lambda refused: _catching(os.kill, os.getpid(), signal.SIGUSR1, refused=refused),
    "a thread it starts": lambda refused: _joined(
        threading.Thread(
            target=_catching, args=(os.kill, os.getpid(), signal.SIGUSR1), kwargs={"refused": refused}
        )
    ),
    "one of _thread's it starts": lambda refused: _raw_joined(
        _catching, (os.kill, os.getpid(), signal.SIGUSR1), {"refused": refused}
    ),
}


@pytest.mark.parametrize("who", list(SIGNALS_ITSELF))
def test_a_thread_that_catches_its_stop_cannot_end_the_process_later(
    tmp_path: Path, contained: Path, who: str
) -> None:
    """The thread catches ThreadStopped and carries on once the guard has ended: what would end the
    process (os.kill of its own id here, with a harmless handler; os._exit(0) in the slow test)
    is refused to it and to the threads it starts."""
    go, refused, fired = threading.Event(), list[str](), list[object]()
    act = SIGNALS_ITSELF[who]

    def outlives() -> None:
        while True:
            try:
                go.wait()
                break
            except BaseException:  # the guard's ThreadStopped, caught
                pass
        act(refused)

    previous = signal.signal(signal.SIGUSR1, lambda *args: fired.append(args))
    try:
        with (
            containment.no_process_exit("kern.ops at REF", tmp_path),
            pytest.raises(LeftArmed, match="still in a call"),
            nothing_left_armed("importing kern.ops at REF"),
        ):
            survivor = threading.Thread(target=outlives, daemon=True)
            survivor.start()
        go.set()
        survivor.join(5)
        time.sleep(0.05)  # a signal sent is handled in the main thread, at its next line
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert not fired
    assert len(refused) == 1 and "may not end the process" in refused[0]


def test_the_revisions_code_called_after_its_guard_cannot_end_the_process(
    tmp_path: Path, contained: Path
) -> None:
    """A later call of REF's kernel (past its first, guarded one) from the main thread."""
    with containment.no_process_exit("kern.ops at REF", tmp_path):
        pass
    namespace: dict[str, Any] = {}
    source = "import os, signal\ndef later():\n    os.kill(os.getpid(), signal.SIGUSR1)\n"
    exec(compile(source, str(tmp_path / "ops.py"), "exec"), namespace)
    fired: list[object] = []
    previous = signal.signal(signal.SIGUSR1, lambda *args: fired.append(args))
    try:
        refusal = re.escape("os.kill once its guard had ended")
        with pytest.raises(containment.ProcessExitRefused, match=refusal):
            namespace["later"]()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert not fired


def test_the_process_ends_as_ever_for_its_own_threads(tmp_path: Path, contained: Path) -> None:
    """Guarded for the rest of the process, the endings still work for every other caller."""
    with containment.no_process_exit("kern.ops at REF", tmp_path):
        pass
    fired: list[object] = []
    previous = signal.signal(signal.SIGUSR1, lambda *args: fired.append(args))
    try:
        _joined(threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGUSR1)))
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.05)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert len(fired) == 2
    assert os._exit.__wrapped__ is containment._EXIT  # type: ignore[attr-defined]


# -- what modules ordinarily do at import is not refused --------------------------------------------

ORDINARY = """
import dataclasses, enum, functools, logging, tempfile, typing, warnings
import json, pytest
import pytest_kernelperf.testing

warnings.filterwarnings("ignore", category=DeprecationWarning)
log = logging.getLogger(__name__)
typing.get_type_hints(json.JSONDecoder.__init__)
for kind in [k for k in vars(typing).values() if isinstance(k, type) and k.__module__ == "typing"]:
    getattr(kind, "__annotations__", None)  # Python stores an empty dict in a class that has none

class Mode(enum.Enum):
    FAST = 1

class Shaped(typing.Protocol):
    def shape(self) -> tuple[int, ...]: ...

@dataclasses.dataclass(frozen=True)
class Config:
    block: int = 128

@functools.lru_cache(maxsize=None)
def cached(n: int) -> int:
    return n

SCRATCH = tempfile.gettempdir()

@pytest.fixture
def block() -> int:
    return 128

@pytest.mark.parametrize("n", [1, 2])
def test_cached(n: int) -> None:
    assert cached(n) == n
"""


def test_an_import_doing_what_modules_ordinarily_do_is_compared(
    pytester: pytest.Pytester, repo: Path, contained: Path
) -> None:
    """Enums, protocols, dataclasses, caches, a logger, a warnings filter, a first import of a
    module of this plugin, a class's annotations read, a fixture and a parametrized test: nothing
    armed, the 5x regression judged."""
    commit(repo, {"kern/ops.py": kernel() + ORDINARY, "test_ops.py": a_test("kern.ops")})
    (repo / "kern" / "ops.py").write_text(kernel(ms=5.0))
    result = run(pytester, *STRICT)
    assert results(repo)["test_kernel"]["verdict"] == "slower", result.stdout.str()


def test_a_guard_inside_another_keeps_what_the_inner_one_recorded() -> None:
    """An import made inside the first call of REF's kernel is guarded inside the call's guard: the
    record of exit handlers the inner guard could not refuse survives the outer one."""
    register, kept = atexit.register, list(containment._State.unseen_exit_handlers)

    def handler() -> None:
        pass

    try:
        with (
            nothing_left_armed("its first call"),
            pytest.raises(containment.ProcessExitRefused),
            containment.no_process_exit("kern.lazy at REF", Path("/nonexistent")),
        ):
            register(handler)  # a reference taken before the guard: no guard sees it
        assert containment._State.unseen_exit_handlers == [*kept, 1]
    finally:
        atexit.unregister(handler)
        containment._State.unseen_exit_handlers[:] = kept


# -- the other things an import can leave armed, each undone ------------------------------------------

KEPT_ALIVE: list[object] = [object.__new__(type("Held", (), {}))]


def _noop(*args: object) -> None:
    return None


def _asleep() -> None:
    time.sleep(0.3)


def _raw_thread() -> None:
    import _thread

    _thread.start_new_thread(_asleep, ())


@pytest.mark.parametrize(
    ("arm", "said"),
    [
        (lambda: sys.settrace(_noop), "set a trace function (sys.settrace)"),
        (lambda: sys.setprofile(_noop), "set a profile function (sys.setprofile)"),
        (lambda: gc.callbacks.append(_noop), "added a garbage-collection callback (gc.callbacks)"),
        (lambda: weakref.finalize(KEPT_ALIVE[0], _noop), "registered an exit finalizer (weakref.finalize)"),
        (lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1}), "blocked or unblocked SIGUSR1"),
        (lambda: sys.addaudithook(_noop), "tried to add an audit hook (sys.addaudithook, refused)"),
        (_raw_thread, "started a thread (one of _thread.start_new_thread)"),
    ],
)
def test_what_else_an_import_leaves_armed_is_undone(arm: Callable[[], object], said: str) -> None:
    before = (
        sys.gettrace(),
        sys.getprofile(),
        list(gc.callbacks),
        signal.pthread_sigmask(signal.SIG_BLOCK, []),
    )
    finalizers = len(weakref.finalize._registry)  # type: ignore[attr-defined]
    with pytest.raises(LeftArmed, match=re.escape(said)), nothing_left_armed("importing kern.ops at REF"):
        arm()
    after = (
        sys.gettrace(),
        sys.getprofile(),
        list(gc.callbacks),
        signal.pthread_sigmask(signal.SIG_BLOCK, []),
    )
    assert after == before
    assert len(weakref.finalize._registry) == finalizers  # type: ignore[attr-defined]
