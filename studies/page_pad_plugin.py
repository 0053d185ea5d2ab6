"""A pytest plugin for studies/physical_placement.py: each round's large pad spans up to 64 MiB, so
that it is a segment of its own, a random number of 2 MiB pages, before the round's arguments.

    python -m pytest -p studies.page_pad_plugin ...
"""

from pytest_kernelperf.measure import placement

placement.LARGE_PAD_MAX = 64 << 20
