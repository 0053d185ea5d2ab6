"""Run history: every run stored, change points per series, a dashboard, and bisection.

    python -m pytest_kernelperf history import RUN.json ...
    python -m pytest_kernelperf history show
    python -m pytest_kernelperf history detect --since COMMIT
    python -m pytest_kernelperf history report --html history.html
    python -m pytest_kernelperf bisect GOOD BAD -- PYTEST_ARGS

See docs/history.md.
"""

from __future__ import annotations

from .database import HistoryError
from .git import git_info
from .store import HistoryStore

__all__ = ["HistoryError", "HistoryStore", "git_info"]
