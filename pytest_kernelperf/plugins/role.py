"""Which part this pytest process plays in a run, decided once at configure time.

Only the main process (a plain run, or the pytest-xdist controller, or the parent of isolated
tests) writes anything the user reads: baseline files, the JSON, markdown, plots, the GitHub step
summary, the terminal table and the peak-bandwidth cache. An xdist worker, an isolated test's
child and a later recording process hand what they measured to that process instead (a child and a
later recording process in the JSON file their parent named). Every process writes the artefacts
of its own measurements under --kernelperf-artifacts: per-GPU lock files and profiled calls'
folders. Every writer of the user's files asks the role kept in `config.stash[ROLE]`;
plugins/run.py calls the writers only where the role writes.
"""

from __future__ import annotations

import enum
import os

import pytest

# Set by the parent of an isolated test in its child's environment (see isolate.py).
ISOLATED_NODEID = "KERNELPERF_ISOLATE_NODEID"
ISOLATED_OUTPUT = "KERNELPERF_ISOLATE_OUTPUT"
# Set by the first recording process in a later one's environment (see recording.py).
RECORD_OUTPUT = "KERNELPERF_RECORD_OUTPUT"
RECORD_NODEIDS = "KERNELPERF_RECORD_NODEIDS"


class Role(enum.Enum):
    MAIN = "main"  # writes baselines and reports
    WORKER = "xdist worker"  # hands its results to the xdist controller
    CHILD = "isolated child"  # runs one test for its parent (--kernelperf-isolate)
    RECORDER = "later recording process"  # records the tests again (--kernelperf-record-processes)

    @property
    def writes(self) -> bool:
        return self is Role.MAIN


ROLE = pytest.StashKey[Role]()


def decide(config: pytest.Config) -> Role:
    # A child of an xdist worker is still a child: it reports to the worker that started it.
    if os.environ.get(ISOLATED_NODEID) and os.environ.get(ISOLATED_OUTPUT):
        return Role.CHILD
    if os.environ.get(RECORD_OUTPUT) and os.environ.get(RECORD_NODEIDS):
        return Role.RECORDER
    if hasattr(config, "workerinput"):
        return Role.WORKER
    return Role.MAIN
