"""Rounds taken in turn: a function and the others timed beside it (its reference, its counterpart at
another revision), one single round each, so that drift and the place in the order hit all alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from pytest_kernelperf.measure.timing import SamplingPlan, Target, Timer, Timing, merge_rounds


def interleaved(
    timer: Timer,
    fn: Target,
    others: Sequence[Target],
    plan: SamplingPlan,
    more: Callable[[list[Timing], list[list[Timing]]], bool] | None = None,
) -> tuple[Timing, list[Timing]]:
    """fn and other functions (its reference, its counterpart at another revision) in single rounds
    taken in turn, the order rotating from one group of rounds to the next (fn first, then second,
    ...), so that drift over the measurement and any advantage of a place in the order hit all
    alike; the others prefer fn's method. Whether another group is drawn is decided here, so all
    have as many rounds: fn's plan wants more (a placement-sensitive fn), or `more` does, given the
    single rounds so far of fn and of each other. Each single round is exactly one. Without
    others, fn's measurement as planned. An error of another function's round raises OtherFailed
    with its index."""
    if not others:
        return timer.measure(fn, plan), []
    fn_rounds: list[Timing] = []
    other_rounds: list[list[Timing]] = [[] for _ in others]
    single = replace(plan, rounds=1, max_rounds=None, known_round_sd=0.0)
    while plan.wants_more([t.device_time.round_locations_ms[-1] for t in fn_rounds]) or (
        more is not None and more(fn_rounds, other_rounds)
    ):
        one = replace(single, warm=bool(fn_rounds))
        group = len(fn_rounds)
        order = [-1, *range(len(others))]  # -1: fn, the first of the first group (its method leads)
        shift = group % len(order)
        for index in order[shift:] + order[:shift]:
            if index < 0:
                fn_rounds.append(timer.measure(fn, one))
                continue
            method = fn_rounds[0].device_time.method if fn_rounds else None
            try:
                other_rounds[index].append(timer.measure(others[index], replace(one, prefer_method=method)))
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # SystemExit, pytest.fail and pytest.skip included
                raise OtherFailed(index, exc) from exc
    return merge_rounds(fn_rounds), [merge_rounds(rounds) for rounds in other_rounds]


class OtherFailed(Exception):
    """A round of a function timed beside fn raised `error`."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error
