"""One Triton cache folder for a timed run, whichever test compiles first.

Triton keeps compiled kernels in TRITON_CACHE_DIR, or in `.triton/cache` under TRITON_HOME (the home
folder) when it is unset. torch.compile's inductor sets TRITON_CACHE_DIR to a folder of its own the
first time it loads a compiled kernel in a process, where it is unset
(torch/_inductor/runtime/triton_heuristics.py). So a Triton kernel compiled after a torch.compile
test is cached in one folder, and the same kernel compiled in a run without that test (`-k`, one
file, another order) in another: on an H200 (2026-12-02), a run of the scoring suite's matmul and
small-kernel tests alone compiled each of their Triton kernels again (0.4-1.1 s each) that the full
run had cached, and with the torch.compile test first found them all (0.002-0.13 s). A timed run
therefore sets TRITON_CACHE_DIR to Triton's own default where it is unset, for the run's processes
(xdist workers and child processes inherit it), and takes it back at the end. A folder the user set
is left alone.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

CACHE_VARIABLE = "TRITON_CACHE_DIR"


def triton_default_cache_dir(environ: MutableMapping[str, str]) -> str:
    """Where Triton caches when TRITON_CACHE_DIR is unset (triton.knobs.cache)."""
    home = environ.get("TRITON_HOME", os.path.expanduser("~/"))
    return os.path.join(home, ".triton", "cache")


class TritonCacheHeld:
    """Holds TRITON_CACHE_DIR at Triton's default for the run (`hold`), then gives it back."""

    def __init__(self, environ: MutableMapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self._held: str | None = None

    def hold(self) -> str | None:
        """The folder now held, or None where the user's environment already names one."""
        if CACHE_VARIABLE in self._environ:
            return None
        self._held = triton_default_cache_dir(self._environ)
        self._environ[CACHE_VARIABLE] = self._held
        return self._held

    def pytest_unconfigure(self) -> None:
        self.release()

    def release(self) -> None:
        """Unset the variable again, unless something else has changed it since."""
        if self._held is not None and self._environ.get(CACHE_VARIABLE) == self._held:
            del self._environ[CACHE_VARIABLE]
        self._held = None
