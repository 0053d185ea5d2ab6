"""What the revision's code leaves armed in the process that judges it: found, undone and refused.

probe.py and containment.py watch the revision's code while it runs; what an import leaves behind
acts later, once they are gone, and could decide the run: a shutdown hook outside atexit
(`threading._register_atexit(lambda: os._exit(0))` turns a failed run green), a timer and the
signal handler it fires, a SIGTERM handler (a cancelled CI job passes), a thread (asleep, then
`os._exit(0)`; or one the interpreter waits for at exit), a trace function, a garbage-collection
callback, an exit finalizer, an audit hook, a changed pytest or plugin (patches.py), a plugin
registered with the run or a changed session (run_state.py), a forked copy of the process carrying
on with the run.

`nothing_left_armed(what)` records each of these before its block; after it, whatever changed is put
back and `LeftArmed` says what the block did, so that its module is refused (`incomparable`). A new
thread is stopped (threads.py); one still in a call when the block is checked (asleep) stops when it
comes back to Python, and until then it could still act, so the run ends with its own exit status
(containment.reassert_exit_status). A forked
copy of the process ends where the block returns in it. An audit hook cannot be removed once added,
so its addition is refused while a block runs.

No pytest here, no torch: the standard library only.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pytest_kernelperf.revision import threads
from pytest_kernelperf.revision.containment import keep_exit_status_from
from pytest_kernelperf.revision.patches import CodeState
from pytest_kernelperf.revision.run_state import RunState

_EXIT = os._exit  # the process's own, taken before any guard replaces it
# Mutable holders, not rebound names: their identity is what patches.py compares.
_FORKS = [0]  # os.fork calls this process has made (os.register_at_fork)
_OWN_FORK = [False]  # the probe's fork (probe.py) under way: not counted
_GUARDING = [0]  # blocks under nothing_left_armed now
_AUDIT_INSTALLED = [False]
_AUDIT_REFUSED = [0]  # sys.addaudithook calls refused while a block ran

_CATCHABLE = sorted(signal.valid_signals() - {getattr(signal, name, None) for name in ("SIGKILL", "SIGSTOP")})
_TIMERS = {
    getattr(signal, timer): name
    for timer, name in (
        ("ITIMER_REAL", "SIGALRM"),
        ("ITIMER_VIRTUAL", "SIGVTALRM"),
        ("ITIMER_PROF", "SIGPROF"),
    )
    if hasattr(signal, timer)
}


class LeftArmed(BaseException):
    """The revision's code left something armed that would act on the run later (undone now)."""


def _count_fork() -> None:
    if not _OWN_FORK[0]:
        _FORKS[0] += 1


if hasattr(os, "register_at_fork"):  # after os.fork, in the process that called it
    os.register_at_fork(after_in_parent=_count_fork)


@contextlib.contextmanager
def own_fork() -> Iterator[None]:
    """A fork of the block's caller (the probe's copy of the process), not one of the block's."""
    _OWN_FORK[0] = True
    try:
        yield
    finally:
        _OWN_FORK[0] = False


@contextlib.contextmanager
def nothing_left_armed(
    what: str,
    own_threads: Callable[[], Iterable[threading.Thread]] = tuple,
    *,
    finalizers: bool = True,
    run: object | None = None,
) -> Iterator[None]:
    """Raise LeftArmed after the block (`what`: "importing kern.ops at v1") where it left anything
    armed, after putting it back; `own_threads`: threads of the caller's that the block may start;
    `finalizers`: whether an exit finalizer (weakref.finalize) counts; `run`: the pytest config
    whose plugins, hooks and session are watched too (run_state.py)."""
    pid = os.getpid()
    _refuse_audit_hooks_while_guarding()
    with threads.raw_starts_recorded() as raw:
        before = _Armed.take(finalizers, run)
        _GUARDING[0] += 1
        try:
            yield
        finally:
            if os.getpid() != pid:  # a forked copy carrying on past the revision's code: not the run's
                _EXIT(0)
            _GUARDING[0] -= 1
            own = {t.ident for t in own_threads()}
            started = [i for i in dict.fromkeys([*threads.running(), *raw]) if i not in before.threads]
            acts, running = _undo(before, [i for i in started if i not in own])
    if acts:
        stopped = (
            "" if not running else f"; {threads.counted(running)} still in a call stops once back in Python"
        )
        raise LeftArmed(
            f"{what} {_listed(acts)}: the revision's code may not act on the run once it has returned, "
            f"so it is not compared (undone{stopped})"
        )


def _undo(before: _Armed, started: list[int]) -> tuple[list[str], list[int]]:
    """What the block did, undone (the threads it `started` stopped); and those still running."""
    try:
        return before.undo(started)
    except KeyboardInterrupt:
        raise
    except BaseException:  # a handler of the revision's fired meanwhile: again, without it now
        acts, running = before.undo(started)
        return [*acts, "ran its own code while that was undone"], running


@dataclass
class _Armed:
    signals: _Signals
    hooks: _Hooks
    threads: set[int]
    code: CodeState
    run: RunState

    @classmethod
    def take(cls, finalizers: bool, run: object | None) -> _Armed:
        with _collector_paused():
            code, state = CodeState.take(), RunState.take(run)
        return cls(_Signals.take(), _Hooks.take(finalizers), threads.running(), code, state)

    def undo(self, started: list[int]) -> tuple[list[str], list[int]]:
        # Handlers first (nothing of the revision's fires after), threads before the code they
        # could change again.
        acts = self.signals.undo() + self.hooks.undo()
        named, running = threads.stop(started)
        with _collector_paused():
            acts += named + self.code.undo() + self.run.undo()
        keep_exit_status_from(running)
        return acts, running


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while thousands of namespaces are copied or compared: each would start
    one, and a full collection of a process that holds torch takes tens of milliseconds."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class _Signals:
    handlers: dict[int, Any]
    timers: dict[int, tuple[float, float]]
    blocked: set[int] | None
    taken_at: float

    @classmethod
    def take(cls) -> _Signals:
        handlers: dict[int, Any] = {number: signal.getsignal(number) for number in _CATCHABLE}
        timers = {which: signal.getitimer(which) for which in _TIMERS}
        return cls(handlers, timers, _blocked(), time.monotonic())

    def undo(self) -> list[str]:
        acts = []
        for number, handler in self.handlers.items():
            if signal.getsignal(number) is not handler:
                with contextlib.suppress(ValueError, OSError):  # not the main thread: none was set
                    signal.signal(number, signal.SIG_DFL if handler is None else handler)
                acts.append(f"set a {signal.Signals(number).name} handler")
        elapsed = time.monotonic() - self.taken_at
        for which, (left, interval) in self.timers.items():
            now, now_interval = signal.getitimer(which)
            # A timer runs down: one that fires later than it would have, or with another period,
            # was set again; a running one that stopped early was stopped.
            if now_interval != interval or now > left or (0 < elapsed < left and now == 0):
                signal.setitimer(which, max(left - elapsed, 1e-6) if left else 0.0, interval)
                acts.append(f"armed a {_TIMERS[which]} timer")
        blocked = _blocked()
        if blocked != self.blocked and self.blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.blocked)
            names = sorted(signal.Signals(n).name for n in (blocked or set()) ^ self.blocked)
            acts.append(f"blocked or unblocked {', '.join(names)}")
        return acts


def _blocked() -> set[int] | None:
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, []))


@dataclass
class _Hooks:
    shutdown: list[Any]  # threading._register_atexit's, run at shutdown before atexit's
    gc_callbacks: list[Any]
    trace: Any
    profile: Any
    finalizers: set[Any] | None  # None: not watched
    forks: int
    audit_refused: int

    @classmethod
    def take(cls, finalizers: bool) -> _Hooks:
        return cls(
            list(_shutdown_hooks()),
            list(gc.callbacks),
            sys.gettrace(),
            sys.getprofile(),
            set(_finalizers()) if finalizers else None,
            _FORKS[0],
            _AUDIT_REFUSED[0],
        )

    def undo(self) -> list[str]:
        acts = []
        hooks = _shutdown_hooks()
        if not _same(hooks, self.shutdown):
            hooks[:] = self.shutdown
            acts.append("registered a shutdown hook (threading._register_atexit)")
        if not _same(gc.callbacks, self.gc_callbacks):
            gc.callbacks[:] = self.gc_callbacks
            acts.append("added a garbage-collection callback (gc.callbacks)")
        if sys.gettrace() is not self.trace:
            sys.settrace(self.trace)
            acts.append("set a trace function (sys.settrace)")
        if sys.getprofile() is not self.profile:
            sys.setprofile(self.profile)
            acts.append("set a profile function (sys.setprofile)")
        known = self.finalizers
        added = [] if known is None else [f for f in _finalizers() if f not in known and f.atexit]
        for finalizer in added:
            finalizer.detach()
        if added:
            acts.append("registered an exit finalizer (weakref.finalize)")
        if _AUDIT_REFUSED[0] != self.audit_refused:
            acts.append("tried to add an audit hook (sys.addaudithook, refused)")
        if _FORKS[0] != self.forks:
            acts.append("forked a copy of the process that went on running it (ended where it returned)")
        return acts


def _same(now: list[Any], before: list[Any]) -> bool:
    return len(now) == len(before) and all(a is b for a, b in zip(now, before, strict=True))


def _shutdown_hooks() -> list[Any]:
    """threading's own list of shutdown hooks (CPython 3.9 on); an empty list where it has none."""
    hooks = getattr(threading, "_threading_atexits", None)
    return hooks if isinstance(hooks, list) else []


def _finalizers() -> list[weakref.finalize]:  # type: ignore[type-arg]
    registry = getattr(weakref.finalize, "_registry", None)
    return list(registry) if isinstance(registry, dict) else []


def _refuse_audit_hooks_while_guarding() -> None:
    """An audit hook runs on every audited event for the rest of the process and cannot be removed:
    one hook of ours, added once, refuses the addition of any other while a block runs."""
    if not _AUDIT_INSTALLED[0]:
        _AUDIT_INSTALLED[0] = True
        sys.addaudithook(_audit)


class _AuditHookRefused(RuntimeError):
    """Raised by a hook on `sys.addaudithook`: Python then drops the new hook (a RuntimeError)."""


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "sys.addaudithook" and _GUARDING[0]:
        _AUDIT_REFUSED[0] += 1
        raise _AuditHookRefused


def _listed(acts: list[str]) -> str:
    return acts[0] if len(acts) == 1 else f"{', '.join(acts[:-1])} and {acts[-1]}"
