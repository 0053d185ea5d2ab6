"""The generated code of the kernels a call launched: Triton PTX/SASS and CUDA extension SASS.

A slower kernel whose generated code changed since its baseline (a new BLOCK_SIZE, a new Triton, a
`tanh` where `tanhf` was) is a different story from one whose code is the same on a slower GPU.
For each kernel name of an inventory this module finds the code and a short hash of it:

* Triton kernels: the compiled kernel's `asm` dict (what the lecture prints with
  `compiled.asm["ptx"]`). Compiled kernels are found among live objects (triton's `CompiledKernel`,
  torch.compile's statically launched kernels) by name; kernels launched through Triton's own
  launcher are also seen by a `triton.knobs.runtime.launch_enter_hook` during the profiled calls,
  whose function handle picks the right one when several specialisations share a name (a kernel
  run with BLOCK_SIZE 1024 and 2048 in one process); for torch.compile's kernels, which inductor
  launches itself, the one its autotuner kept. The hash is of the PTX without its debug
  information (file paths and line numbers), so that moving a checkout does not change it.
* CUDA extensions (`load_inline`, `setup.py`): the SASS of the kernel's function, disassembled with
  `cuobjdump` from the shared objects mapped into this process that carry device code and name
  the kernel, apart from torch's and NVIDIA's own libraries. Disassembling a large binary takes
  seconds to minutes: a baseline's inventory gives it the time left of its budget (capture.py),
  and a binary that took longer is not tried again in the process with no more time than that.

Everything here is best effort: what cannot be found is skipped with a reason, never an error.
torch and triton are imported inside functions.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_kernelperf.ids import unique_file_part

HASH_CHARS = 12
# Shared objects bigger than this are libraries (cuDNN, flash-attention builds), not the kernel
# under test, and cuobjdump would take minutes on them.
MAX_BINARY_BYTES = 256 * 1024 * 1024
_NOT_USER_CODE = re.compile(
    r"/(site|dist)-packages/(torch|triton|nvidia|jaxlib|cupy\w*|tensorrt\w*)/"
    r"|/cuda[^/]*/(lib|lib64|targets)/"
    r"|/lib(cuda|cudart|cublas|cudnn|cufft|curand|cusparse|cusolver|nccl|nv)[\w.-]*\.so"
)
_SUBPROCESS_TIMEOUT_S = 120


@dataclass(frozen=True)
class GeneratedCode:
    """The code of one kernel: its hash, and texts to keep as artefacts (suffix -> text)."""

    name: str
    hash: str
    origin: str  # "triton" or the shared object the SASS came from
    texts: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CodeReport:
    codes: dict[str, GeneratedCode] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


# --- PTX -------------------------------------------------------------------------------------


def normalize_ptx(ptx: str) -> str:
    """PTX without what changes when nothing but the source location did: `.file`/`.loc`
    directives, comments and the DWARF `.section .debug_*` blocks (which spell out file paths)."""
    out: list[str] = []
    depth = 0
    skipping = opened = False
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if skipping:
            depth += line.count("{") - line.count("}")
            opened = opened or "{" in line
            skipping = not (opened and depth <= 0)
            continue
        if line.startswith(".section") and ".debug" in line:
            # The block's brace opens on this line or the next; `{ }` on one line is already closed.
            depth = line.count("{") - line.count("}")
            opened = "{" in line
            skipping = not opened or depth > 0
            continue
        if line and not line.startswith((".file", ".loc")):
            out.append(line)
    return "\n".join(out) + "\n"


def ptx_hash(ptx: str) -> str:
    return short_hash(normalize_ptx(ptx))


# --- SASS ------------------------------------------------------------------------------------

_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
_ARCH = re.compile(r"^\s*code for (sm_\w+)")
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;")


def split_sass(listing: str) -> dict[tuple[str, str], str]:
    """`cuobjdump -sass` output split by (architecture, function): each function's listing."""
    functions: dict[tuple[str, str], list[str]] = {}
    arch = ""
    current: list[str] | None = None
    for line in listing.splitlines():
        if match := _ARCH.match(line):
            arch, current = match[1], None
            continue
        if match := _FUNCTION.match(line):
            current = functions.setdefault((arch, match[1]), [])
            continue
        if current is not None:
            current.append(line)
    return {key: "\n".join(lines).strip("\n") + "\n" for key, lines in functions.items()}


def sass_hash(sass: str) -> str:
    """Hash of the instructions only: not the addresses' layout, encodings or header flags."""
    instructions = [m[1] for line in sass.splitlines() if (m := _INSTRUCTION.match(line))]
    return short_hash("\n".join(instructions) if instructions else sass)


def base_identifier(name: str) -> str:
    """The bare function name of a demangled kernel name: `void ns::k<4>(int)` -> `k`."""
    depth = 0
    cut = len(name)
    for i, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0 and i > 0:
            cut = i
            break
    head = name[:cut]
    head = re.sub(r"<.*>$", "", head.strip())
    head = head.split()[-1] if head.split() else head
    return head.rsplit("::", 1)[-1]


_WEST_CONST = re.compile(r"\bconst\s+([A-Za-z_][\w:]*)")


def canonical_signature(name: str) -> str:
    """A demangled C++ name in one spelling: demanglers differ in `const float *` against
    `float const*` (cu++filt against the profiler's) and in the `void ` of a kernel's return type."""
    return "".join(_WEST_CONST.sub(r"\1 const", name.removeprefix("void ")).split())


def matches_mangled(name: str, mangled: str, demangled: str | None) -> bool:
    """Whether the profiler's (demangled) kernel name is the SASS function `mangled`."""
    if demangled is not None:
        return canonical_signature(demangled) == canonical_signature(name)
    if mangled == name:
        return True
    ident = base_identifier(name)
    return bool(ident) and mangled.startswith("_Z") and f"{len(ident)}{ident}" in mangled


# --- finding Triton kernels ------------------------------------------------------------------


@contextlib.contextmanager
def triton_launches() -> Iterator[dict[str, set[int]]]:
    """Record name -> function handles of the kernels launched through Triton's launcher."""
    seen: dict[str, set[int]] = {}
    knobs = _triton_knobs()
    chain = getattr(getattr(knobs, "runtime", None), "launch_enter_hook", None)
    if chain is None or not hasattr(chain, "add"):
        yield seen  # triton absent, or too old to chain hooks: fall back on names alone
        return

    def hook(metadata: Any) -> None:
        data = getattr(metadata, "data", None)
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            handle = data.get("function")
            seen.setdefault(data["name"], set()).update({int(handle)} if isinstance(handle, int) else set())

    chain.add(hook)
    try:
        yield seen
    finally:
        chain.remove(hook)


def _triton_knobs() -> Any:
    if "triton" not in sys.modules:
        return None  # nothing imported triton: no Triton kernel can have run
    try:
        from triton import knobs
    except Exception:
        return None
    return knobs


def _compiled_kernel_types() -> tuple[type, ...]:
    types: list[type] = []
    compiler = sys.modules.get("triton.compiler.compiler")
    if compiler is not None and isinstance(getattr(compiler, "CompiledKernel", None), type):
        types.append(compiler.CompiledKernel)
    static = sys.modules.get("torch._inductor.runtime.static_triton_launcher")
    if static is not None and isinstance(getattr(static, "StaticallyLaunchedTritonKernel", None), type):
        types.append(static.StaticallyLaunchedTritonKernel)
    return tuple(types)


def live_compiled_kernels() -> list[Any]:
    """Triton compiled kernels alive in this process (a scan of the garbage collector's objects:
    about a second in a large process, paid only when a call is profiled)."""
    types = _compiled_kernel_types()
    if not types:
        return []
    # type(), not isinstance(): isinstance consults __class__, which some lazy objects of torch's
    # answer with a deprecation warning.
    return [obj for obj in gc.get_objects() if issubclass(type(obj), types)]


def autotuner_choices() -> set[int | str]:
    """Marks of the compiled kernels torch.compile's autotuners settled on: the id of a
    launcher's kernel object (`launcher.bin`), or, for inductor's static launchers, which keep
    none, the cache key of its kernel (`launcher.cache_hash`).

    Inductor compiles a kernel once per candidate config, all under one name, benchmarks them and
    keeps one launcher; the losers stay alive until collected. A scan of live objects, like
    live_compiled_kernels, paid only when a name is ambiguous.
    """
    heuristics = sys.modules.get("torch._inductor.runtime.triton_heuristics")
    tuner = getattr(heuristics, "CachingAutotuner", None)
    if not isinstance(tuner, type):
        return set()
    chosen: set[int | str] = set()
    for obj in gc.get_objects():
        if issubclass(type(obj), tuner):
            launchers = getattr(obj, "launchers", None)
            if isinstance(launchers, list) and len(launchers) == 1:
                binary = getattr(launchers[0], "bin", None)
                if binary is not None:
                    chosen.add(id(binary))
                key = getattr(launchers[0], "cache_hash", None)
                if isinstance(key, str):
                    chosen.add(key)
    return chosen


def _cache_key(kernel: Any) -> str | None:
    """The key inductor's launchers name a kernel by (`cache_hash`), where inductor is loaded."""
    utils = sys.modules.get("torch._inductor.runtime.runtime_utils")
    digest = getattr(kernel, "hash", None)
    if utils is None or not isinstance(digest, str):
        return None
    with contextlib.suppress(Exception):
        return str(utils.triton_hash_to_path_key(digest))
    return None


def _which_ran(candidates: list[Any], handles: Collection[int], chosen: Collection[int | str]) -> list[Any]:
    """The candidates that may have run, narrowed by each clue in turn where it tells any apart:
    the function handle a launch reported, an autotuner's choice, being loaded on a device."""
    clues: tuple[Callable[[Any], bool], ...] = (
        lambda k: getattr(k, "function", None) in handles,
        lambda k: id(k) in chosen or _cache_key(k) in chosen,
        lambda k: getattr(k, "function", None) is not None,
    )
    for clue in clues:
        candidates = [k for k in candidates if clue(k)] or candidates
    return candidates


def _ptx_of(kernel: Any, name: str) -> str | None:
    asm = getattr(kernel, "asm", None)
    if isinstance(asm, Mapping) and isinstance(asm.get("ptx"), str):
        return str(asm["ptx"])
    for folder in _cache_folders(kernel):
        candidate = folder / f"{name}.ptx"
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8", errors="replace")
    return None


def _cache_folders(kernel: Any) -> Iterator[Path]:
    """Where Triton's cache keeps a compiled kernel's files (torch.compile's static launcher keeps
    only the cubin in memory; the PTX stays in the cache folder beside it)."""
    cubin = getattr(kernel, "cubin_path", None)
    if isinstance(cubin, str) and cubin:
        yield Path(cubin).parent
    digest = getattr(kernel, "hash", None)
    if not isinstance(digest, str):
        return
    with contextlib.suppress(Exception):
        from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
        from torch._inductor.runtime.runtime_utils import triton_hash_to_path_key

        key = triton_hash_to_path_key(digest)
        # Inductor keeps one cache folder per device index (`.../triton/<index>/<key>`).
        yield Path(triton_cache_dir(0)) / key
        yield from Path(triton_cache_dir(0)).parent.glob(f"*/{key}")
    with contextlib.suppress(Exception):
        from triton.runtime.cache import get_cache_manager

        yield Path(get_cache_manager(digest).cache_dir)


def _sass_of(kernel: Any) -> str | None:
    asm = getattr(kernel, "asm", None)
    if asm is None or not hasattr(asm, "__getitem__"):
        return None
    try:
        sass = asm["sass"]  # triton disassembles the cubin with its cuobjdump on first use
    except Exception:
        return None
    return sass if isinstance(sass, str) else None


def triton_code(
    names: Sequence[str],
    launched: Mapping[str, set[int]],
    kernels: Sequence[Any] | None = None,
    chosen: Collection[int | str] | None = None,
    sass: bool = True,
) -> CodeReport:
    """PTX (and, with `sass`, SASS) of the Triton kernels among `names`.

    Where several compiled kernels share a name, _which_ran tells them apart (`chosen`: ids of
    autotuners' choices, by default autotuner_choices()). The hash is the PTX's; the SASS, which
    Triton disassembles with a cuobjdump per kernel, is only an artefact to read.
    """
    live = live_compiled_kernels() if kernels is None else list(kernels)
    codes: dict[str, GeneratedCode] = {}
    notes: list[str] = []
    for name in names:
        handles = launched.get(name, set())
        candidates = [k for k in live if getattr(k, "name", None) == name]
        if len(candidates) > 1 and chosen is None:
            chosen = autotuner_choices()
        candidates = _which_ran(candidates, handles, chosen or set())
        by_hash: dict[str, tuple[Any, str]] = {}
        for kernel in candidates:
            ptx = _ptx_of(kernel, name)
            if ptx is not None:
                by_hash.setdefault(ptx_hash(ptx), (kernel, ptx))
        if len(by_hash) > 1:
            notes.append(
                f"{len(by_hash)} different compiled Triton kernels are named {name} in this process "
                "and neither its launch nor an autotuner told which ran: its code hash is left out"
            )
            continue
        if not by_hash:
            if candidates or name in launched:
                notes.append(f"no PTX found for the Triton kernel {name}")
            continue
        digest, (kernel, ptx) = next(iter(by_hash.items()))
        texts = {"ptx": ptx}
        listing = _sass_of(kernel) if sass else None
        if listing:
            texts["sass"] = listing
        codes[name] = GeneratedCode(name=name, hash=digest, origin="triton", texts=texts)
    return CodeReport(codes, tuple(notes))


# --- finding CUDA extension kernels ----------------------------------------------------------


def cuobjdump() -> str | None:
    """A cuobjdump: on the PATH, under CUDA_HOME, or the one Triton ships."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and Path(home, "bin", "cuobjdump").is_file():
        return str(Path(home, "bin", "cuobjdump"))
    with contextlib.suppress(Exception):
        from triton import knobs

        return str(knobs.nvidia.cuobjdump.path)
    return None


def mapped_objects(maps: str | None = None) -> list[Path]:
    """Shared objects mapped into this process (Linux), in the order first mapped."""
    if maps is None:
        try:
            maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
    seen: dict[str, None] = {}
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in Path(parts[5]).name:
            seen.setdefault(parts[5].removesuffix(" (deleted)"), None)
    return [Path(p) for p in seen]


def has_device_code(path: Path) -> bool:
    """Whether an ELF64 file has a `.nv_fatbin` section (CUDA device code), reading its headers."""
    try:
        with path.open("rb") as handle:
            header = handle.read(64)
            if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                return False
            (shoff,) = struct.unpack_from("<Q", header, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 0x3A)
            if not shoff or shentsize < 64 or shnum == 0 or shstrndx >= shnum:
                return False
            handle.seek(shoff)
            table = handle.read(shentsize * shnum)
            name_offset, name_size = struct.unpack_from("<QQ", table, shstrndx * shentsize + 0x18)
            handle.seek(name_offset)
            names = handle.read(min(name_size, 1 << 20))
    except (OSError, struct.error):
        return False
    return b".nv_fatbin\x00" in names


def user_binaries(objects: Sequence[Path] | None = None) -> list[Path]:
    """Mapped shared objects with device code that are not torch's, Triton's or NVIDIA's."""
    out = []
    for path in mapped_objects() if objects is None else objects:
        text = str(path)
        if _NOT_USER_CODE.search(text):
            continue
        try:
            if path.stat().st_size > MAX_BINARY_BYTES:
                continue
        except OSError:
            continue
        if has_device_code(path):
            out.append(path)
    return out


def mentions(path: Path, words: Sequence[bytes]) -> bool:
    """Whether the file holds any of `words`: a binary whose device code holds a kernel names it
    in its host part too (its launch stub and the name it registers), compressed device code or not."""
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return any(data.find(word) >= 0 for word in words)
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses a file of no bytes)
        return False


# cuobjdump -sass listings per binary version (path, mtime, tool), split by function; and the binaries
# that took longer than a time left, each with the longest it was given.
_LISTINGS: dict[tuple[str, int, str], dict[tuple[str, str], str]] = {}
_TOO_SLOW: dict[tuple[str, int, str], float] = {}


def _disassemble(path: Path, tool: str, timeout_s: float) -> dict[tuple[str, str], str] | None:
    """cuobjdump -sass of one binary, split by function, kept per file version; None where it takes
    longer than `timeout_s` (now, or once before with at least as long)."""
    key = (str(path), path.stat().st_mtime_ns, tool)
    if key in _LISTINGS:
        return _LISTINGS[key]
    if _TOO_SLOW.get(key, 0.0) >= timeout_s:
        return None
    try:
        done = subprocess.run(
            [tool, "-sass", str(path)], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        _TOO_SLOW[key] = timeout_s
        return None
    except OSError:
        done = None
    _LISTINGS[key] = split_sass(done.stdout) if done is not None and done.returncode == 0 else {}
    return _LISTINGS[key]


def demangle(names: Sequence[str]) -> dict[str, str]:
    """Demangled C++ names through c++filt where it is installed; {} otherwise."""
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool or not names:
        return {}
    try:
        done = subprocess.run(
            [tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    lines = done.stdout.splitlines()
    return dict(zip(names, lines, strict=False)) if done.returncode == 0 and len(lines) == len(names) else {}


def extension_code(
    names: Sequence[str],
    arch: str | None = None,
    binaries: Sequence[Path] | None = None,
    disassemble: Callable[[Path, float], dict[tuple[str, str], str] | None] | None = None,
    deadline: float | None = None,
) -> CodeReport:
    """SASS of the kernels among `names` that live in a user's CUDA binary (an extension).

    `arch` ("sm_90") picks the device's code where a binary carries several architectures.
    `binaries`: where to look (default: the user binaries mapped into this process that name one of
    the kernels); `disassemble(binary, seconds)` lists one binary's functions, None where it takes
    longer. `deadline` (time.monotonic()): no binary is disassembled beyond it; None: 2 minutes each.
    """
    if not names:
        return CodeReport()
    if disassemble is None:
        tool = cuobjdump()
        if tool is None:
            return CodeReport(notes=("no cuobjdump found (PATH, CUDA_HOME, triton): extension SASS skipped",))

        def disassemble(path: Path, seconds: float) -> dict[tuple[str, str], str] | None:
            assert tool is not None
            return _disassemble(path, tool, seconds)

    if binaries is None:
        words = sorted({base_identifier(name).encode() for name in names} - {b""})
        binaries = [binary for binary in user_binaries() if mentions(binary, words)]
    functions, notes = _listed(binaries, disassemble, deadline)
    if not functions:
        return CodeReport(notes=tuple(notes))
    demangled = demangle(sorted(functions))
    codes: dict[str, GeneratedCode] = {}
    for name in names:
        found = [m for m in sorted(functions) if matches_mangled(name, m, demangled.get(m))]
        if not found:
            continue
        pieces: list[tuple[str, str, str, Path]] = []
        for mangled in found:
            variants = functions[mangled]
            chosen = [v for v in variants if arch and v[0].startswith(arch)] or variants
            pieces.extend((mangled, *v) for v in chosen)
        sass = "".join(f"// {mangled} ({a}, {binary})\n{text}" for mangled, a, text, binary in pieces)
        digest = short_hash("".join(sass_hash(text) for _, _, text, _ in pieces))
        codes[name] = GeneratedCode(name=name, hash=digest, origin=str(pieces[0][3]), texts={"sass": sass})
    return CodeReport(codes, tuple(notes))


def _listed(
    binaries: Sequence[Path],
    disassemble: Callable[[Path, float], dict[tuple[str, str], str] | None],
    deadline: float | None,
) -> tuple[dict[str, list[tuple[str, str, Path]]], list[str]]:
    """mangled name -> [(arch, sass, binary)] of the binaries disassembled before `deadline`, and a
    note on each binary left out for the time."""
    functions: dict[str, list[tuple[str, str, Path]]] = {}
    notes: list[str] = []
    for binary in binaries:
        seconds = (
            _SUBPROCESS_TIMEOUT_S
            if deadline is None
            else min(_SUBPROCESS_TIMEOUT_S, deadline - time.monotonic())
        )
        listing = disassemble(binary, seconds) if seconds > 0 else None
        if listing is None:
            bound = (
                f"the {max(seconds, 0.0):.1f} s left to the profile (--kernelperf-profile gives it "
                f"{_SUBPROCESS_TIMEOUT_S} s)"
                if deadline is not None
                else f"{_SUBPROCESS_TIMEOUT_S} s"
            )
            notes.append(
                f"SASS of the kernels in {binary} not read: disassembling it takes longer than {bound}"
            )
            continue
        for (function_arch, mangled), sass in listing.items():
            functions.setdefault(mangled, []).append((function_arch, sass, binary))
    return functions, notes


# --- artefacts -------------------------------------------------------------------------------


def file_stem(name: str) -> str:
    """A file name for a kernel name (C++ signatures hold characters no file system likes)."""
    return unique_file_part(name, "kernel", separator=".")


def write(codes: Mapping[str, GeneratedCode], folder: Path) -> list[Path]:
    """Each kernel's texts as `<folder>/<kernel>.<suffix>`; the files written."""
    written = []
    for name in sorted(codes):
        code = codes[name]
        for suffix, text in sorted(code.texts.items()):
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{file_stem(name)}.{suffix}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written
