"""The host's load while a measurement ran: its one-minute load average per core.

The load average counts the runnable tasks (the measurement's own threads among them), so a
figure above one per core means some task always waits for a core. The timers read it after a
measurement's rounds (measure/timing.py), the CPU's copy bandwidth beside its copies
(measure/roofline.py); what it means for a verdict, verdict/busy_host.py says. No torch, no pytest.
"""

from __future__ import annotations

import os


def load_per_core() -> float | None:
    """The one-minute load average over the host's cores; None where the platform reports none."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):  # no load average here (Windows has no getloadavg)
        return None
