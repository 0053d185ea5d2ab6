"""One set of compile caches for every process of a run.

A later recording process, an isolated test's child and a Nsight Compute child each call their
kernels for the first time again: cheap where they find what this process compiled (Triton's
kernels, inductor's graphs and autotuning results, torch's CUDA extension builds), minutes where
they compile it all again. A child inherits this process's environment, but it runs in the
project's root folder, not where pytest was started: a cache folder given as a relative path
(`TRITON_CACHE_DIR=.triton`) would be another folder there. So each child gets every cache
variable as the absolute folder this process uses: the one its environment names (made absolute
here), or, for inductor where this process loaded it, the folder inductor reports. Triton's own
default is held for the run by triton_cache.py. Unset variables whose default only the library
itself computes (TORCH_EXTENSIONS_DIR appends the Python and CUDA versions) are left unset: the child
computes the same default from the same environment.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

CACHE_VARIABLES = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "CUDA_CACHE_PATH")
INDUCTOR_VARIABLE = "TORCHINDUCTOR_CACHE_DIR"


def shared_caches(environ: Mapping[str, str], cwd: Path) -> dict[str, str]:
    """The cache variables a child's environment should hold: each set one as an absolute folder
    (relative to `cwd`, this process's folder), and inductor's folder where inductor is loaded."""
    # `~` is the library's to expand, if it does: such a value is passed on as it is.
    caches = {
        name: value if value.startswith("~") else str(cwd / value)
        for name in CACHE_VARIABLES
        if (value := environ.get(name))
    }
    if INDUCTOR_VARIABLE not in caches and (folder := _inductor_cache_dir()) is not None:
        caches[INDUCTOR_VARIABLE] = folder
    return {name: os.path.normpath(folder) for name, folder in caches.items()}


def _inductor_cache_dir() -> str | None:
    """The folder inductor caches in, asked of inductor where this process imported it."""
    utils = sys.modules.get("torch._inductor.runtime.cache_dir_utils")
    cache_dir = getattr(utils, "cache_dir", None)
    if cache_dir is None:
        return None
    try:
        folder = cache_dir()
    except Exception:  # a private API: never fail a run for it
        return None
    return folder if isinstance(folder, str) and folder else None
