"""`python -m pytest_kernelperf ...`: see pytest_kernelperf.cli."""

from __future__ import annotations

import sys

from pytest_kernelperf.cli import entry_point, main

sys.exit(entry_point(main))
