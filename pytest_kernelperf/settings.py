"""One frozen Settings per test: marker > command line > ini file > default.

Every option is declared once in OPTIONS, with its one default and one help text shared by its
command-line flag and its ini key. Each value is validated where it is read, and the error names
where it came from (`--kernelperf-threshold`, ini `kernelperf_threshold`, or the test's marker), so
a typo in a CI config file is reported as such instead of surfacing as an odd verdict. No pytest import here.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kernelperf.measure.timing import SamplingPlan
from pytest_kernelperf.model.baseline import MAX_RECORDING_PROCESSES
from pytest_kernelperf.model.call import MODES as MODES_COMPILE
from pytest_kernelperf.model.names import CACHE_MODES, METHODS, PLACEMENT_MODES
from pytest_kernelperf.profiling.autotune import MODES as MODES_AUTOTUNE
from pytest_kernelperf.verdict.judge import parse_fraction, parse_threshold


class SettingsError(ValueError):
    """A bad option value, naming where it came from."""


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _positive_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    try:
        number = int(str(value))
    except ValueError:
        raise ValueError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise ValueError(f"expected at least 1, got {number}")
    return number


# Recording processes for tests timed on a GPU, where a kernel's level moves between processes: with
# one recording process that move is frozen into the baseline, and the judge can only assume its size
# class's. An NVRTC SAXPY held in L2, 1.5% apart between processes beyond its rounds on one H200, read
# `slower` in 4 of 6 A/A runs against a one-process baseline; the verdict studies of 2026-12-01 to
# -02b (five H200s, 1097 judgements) re-judged with baselines cut to 1, 2 or 3 recording processes
# gave 3, 0 and 0 false `slower`, and 10.3% against 6.7% `undetermined` with 2 and 3, the third
# adding power only at 1-10 us (docs/measurement.md). So auto records every such test in 2, and a
# third process records again only the tests whose first two call for it (verdict/more_processes.py).
GPU_RECORD_PROCESSES = 2
GPU_MOST_RECORD_PROCESSES = 3


def _record_processes(value: Any) -> int | str:
    if str(value).strip().lower() == "auto":
        return "auto"
    expected = f"expected auto or a whole number of processes from 1 to {MAX_RECORDING_PROCESSES}"
    try:
        number = _positive_int(value)
    except ValueError:
        raise ValueError(f"{expected}, got {value!r}") from None
    if number > MAX_RECORDING_PROCESSES:  # the most a baseline entry keeps of one recording
        raise ValueError(f"{expected}, got {number}")
    return number


# The most times the planned rounds a kernel may draw (--kernelperf-max-rounds): 64 already takes a
# placement-sensitive kernel to 320 rounds, 7.5 s a call; a thousand is minutes a call, and a bound
# keeps a mistyped 10^20 from running until it is killed.
MAX_ROUNDS_FACTOR = 1000


def _max_rounds(value: Any) -> int:
    number = _positive_int(value)
    if number > MAX_ROUNDS_FACTOR:
        raise ValueError(f"expected a whole number from 1 to {MAX_ROUNDS_FACTOR}, got {number}")
    return number


def _number_of_seconds(value: Any, example: str) -> float:
    """`value` as seconds ("2", "2.5", "2s"), with an example of what is expected if it is none."""
    if isinstance(value, bool):
        raise ValueError(f"expected seconds, got {value!r}")
    try:
        return float(str(value).strip().removesuffix("s"))
    except ValueError:
        raise ValueError(f"expected seconds such as {example}, got {value!r}") from None


def _seconds(value: Any) -> float:
    number = _number_of_seconds(value, "0.5")
    if not 0 <= number <= 3600:
        raise ValueError(f"expected 0 to 3600 seconds, got {value!r}")
    return number


def _time_limit(value: Any) -> float:
    """Seconds something may take, 0 meaning no limit; a day at most."""
    number = _number_of_seconds(value, "600 (0: no limit)")
    if not 0 <= number <= 86400:
        raise ValueError(f"expected 0 (no limit) to 86400 seconds, got {value!r}")
    return number


def _timeout(value: Any) -> float:
    """Seconds something may take, always limited: more than 0, an hour at most."""
    number = _number_of_seconds(value, "180")
    if not 0 < number <= 3600:
        raise ValueError(f"expected more than 0 and at most 3600 seconds, got {value!r}")
    return number


def _fraction(value: Any) -> float:
    return parse_fraction(value)


def _threshold(value: Any) -> float:
    return parse_threshold(value)


def _memory_threshold(value: Any) -> float:
    """The allowed growth of a call's peak memory: a threshold, refused with memory's examples."""
    try:
        return parse_threshold(value)
    except ValueError:
        pass  # the timing threshold's message quotes timing examples
    raise ValueError(
        "a memory threshold must be finite and 0 or more (0.1 or 10% for 10% more memory, 1.0 for "
        f"twice as much), got {value!r}"
    )


def _count(value: Any) -> int:
    """A number of things to show, 0 meaning all of them (like pytest's --durations)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"expected a whole number (0 for all), got {value!r}") from None
    if number < 0:
        raise ValueError(f"expected 0 or more, got {number}")
    return number


def _choice(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip()
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return text

    return parse


def _revision(value: Any) -> str:
    text = str(value).strip()
    if not text or text.startswith("-"):
        raise ValueError(f"expected a git revision such as origin/main, a tag or a commit, got {value!r}")
    return text


def _path(value: Any) -> Path:
    text = str(value).strip()
    if not text:
        raise ValueError("expected a path, got an empty value")
    return Path(text)


# The URL schemes of a history on a PostgreSQL server (history/database.py connects to them).
SERVER_SCHEMES = ("postgresql", "postgres")
# A URL's scheme (RFC 3986) before `:/` (a Path folds `//` into `/`), of two characters at least
# (`C:/...` is a Windows path), or a server scheme before any `:`.
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
# A libpq connection string ("host=db user=kp password=..."): its password is a keyword.
_LIBPQ_PASSWORD = re.compile(r"(?:^|\s)password\s*=", re.IGNORECASE)
_NOT_A_LOCATION = (
    "neither a history file nor a history server's URL (postgresql://USER@HOST/DB, the password "
    "from PGPASSWORD or ~/.pgpass)"
)


def _url_scheme(text: str) -> str | None:
    """The scheme of `text` where it is a URL, else None (a path)."""
    found = _URL_SCHEME.match(text)
    if found is None:
        return None
    scheme = found.group(1)
    rest = text[found.end() :]
    return scheme if rest.startswith("/") or scheme.lower() in SERVER_SCHEMES else None


def history_location(value: Any, *, server: bool = True) -> Path | str:
    """Where a history lies: a PostgreSQL server's URL as given (a Path would fold its `//`), else a
    file. Any other URL, or a libpq connection string with a password, is refused, shown by its
    scheme alone: taken as a path, it would make folders named after the password and print it.
    Without `server` (a pytest run writes a file), a server URL is refused too."""
    text = str(value).strip()
    scheme = _url_scheme(text)
    if scheme is None:
        if _LIBPQ_PASSWORD.search(text):
            raise ValueError(f"a connection string with password=***: {_NOT_A_LOCATION}")
        return _path(text)
    of_server = scheme.lower() in SERVER_SCHEMES
    if of_server and not server:
        raise ValueError(
            f"{scheme}://***: a server URL where a file is expected (a pytest run writes its history "
            "to a file); store the run file on the server with "
            "`python -m pytest_kernelperf history --db URL import RUN.json`"
        )
    if not of_server or not text[len(scheme) :].startswith("://"):
        raise ValueError(f"{scheme}://***: {_NOT_A_LOCATION}")
    return text


def _history_file(value: Any) -> Path:
    """A history file: a pytest run writes its history there (no server URL, no other URL)."""
    return Path(history_location(value, server=False))


@dataclass(frozen=True)
class Option:
    """One option: its Settings field, its one default, and how a value given for it is read.

    Every option is a command-line flag and an ini key with the same help text; `marker` ones can
    also be set per test with @pytest.mark.kernelperf(...).
    """

    field: str  # Settings field
    default: Any
    help: str
    parse: Callable[[Any], Any]
    flag: bool = False  # a command-line switch without a value
    marker: bool = False  # settable per test with @pytest.mark.kernelperf(...)
    ini: bool = True  # also an ini key (False: a choice that must be made on the command line each time)
    name: str | None = None  # the flag, where it is not --kernelperf-<field>

    @property
    def cli_name(self) -> str:
        return self.name or "--kernelperf-" + self.field.replace("_", "-")

    @property
    def ini_name(self) -> str:
        return self.cli_name.removeprefix("--").replace("-", "_")

    @property
    def dest(self) -> str:
        """Where pytest keeps the command-line value (config.getoption)."""
        return "kernelperf_" + self.field

    @property
    def help_text(self) -> str:
        """The help of the flag and of the ini key (argparse reads %% as %)."""
        if self.flag or self.default is None:
            return self.help
        return f"{self.help}; default {self.default}"


OPTIONS: tuple[Option, ...] = (
    # What the run does. --kernelperf and --kernelperf-update-baselines exclude each other.
    Option(
        "compare",
        False,
        "time kernel_bench calls and compare them with the stored baselines",
        _bool,
        flag=True,
        name="--kernelperf",
    ),
    Option(
        "update",
        False,
        "time kernel_bench calls and write their baselines (entries of tests that did not run are kept)",
        _bool,
        flag=True,
        name="--kernelperf-update-baselines",
    ),
    Option(
        "against",
        None,
        "time each kernel_bench call against the same function at this git revision (origin/main, a "
        "tag, a commit), both in this process in paired rounds, and judge the pair instead of the "
        "stored baselines (implies --kernelperf)",
        _revision,
        ini=False,
    ),
    Option(
        "against_timeout",
        600.0,
        "with --kernelperf-against: seconds an import of REF's module or the first call of REF's "
        "kernel may take; one that takes longer is not compared (incomparable, with the reason), "
        "and one stuck in native code past twice this ends the run with exit status 2 (0: no limit)",
        _time_limit,
    ),
    Option(
        "prune",
        False,
        "with --kernelperf-update-baselines, remove baseline entries and files of tests that no longer "
        "exist (never on a run narrowed by -k, -m, --lf, --deselect or a test path)",
        _bool,
        flag=True,
    ),
    Option(
        "strict",
        False,
        "every verdict that is not a judgement fails the test: new (no baseline), incomparable, "
        "unreliable, undetermined",
        _bool,
        flag=True,
    ),
    Option(
        "allow_undetermined",
        False,
        "with --kernelperf-against, an undetermined pair passes; by default it fails its test, since "
        "the pull-request gate could not see a change as small as the threshold",
        _bool,
        flag=True,
    ),
    Option(
        "threshold",
        0.005,
        "practical floor: a significant change must also exceed this to count as slower or faster, as "
        "a fraction (0.005) or percentage (0.5%%); 2.0 fails only beyond 3x slower",
        _threshold,
        marker=True,
    ),
    Option(
        "alpha",
        0.01,
        "false-alarm rate of the whole run: each of the m judgements planned is held to alpha/m (Bonferroni)",
        _fraction,
        marker=True,
    ),
    Option(
        "host_threshold",
        0.5,
        "practical floor for host latency per call (the launch path): a significant change beyond it "
        "is listed under the summary table. Host latency varies far more between processes than "
        "device time, so it never fails a test",
        _threshold,
        marker=True,
    ),
    Option(
        "memory_threshold",
        0.1,
        "device memory: a call whose peak allocation beyond its inputs grew by more than this fraction "
        "of its baseline's (0.1, 10%%), and by more than 1 MiB, fails (CUDA only)",
        _memory_threshold,
        marker=True,
    ),
    Option(
        "baseline_dir",
        Path("baselines"),
        "folder of the YAML baselines; a relative path starts at the rootdir and may lead out of it "
        "(a shared checkout of baselines: ../perf-baselines)",
        _path,
    ),
    Option(
        "profile",
        False,
        "capture a torch.profiler table, Chrome trace and kernel inventory per timed call (slower and "
        "unreliable calls are always profiled)",
        _bool,
        flag=True,
    ),
    Option(
        "ncu",
        False,
        "read Nsight Compute hardware counters (DRAM bytes, occupancy, registers, L2 hit rate, sectors "
        "per load, warp stalls) of a call that reads slower, in one more run of that call in a child "
        "process under ncu after its timing, and show which moved against the baseline's; with "
        "--kernelperf-update-baselines the baselines keep them, with --kernelperf-profile every timed "
        "call is read",
        _bool,
        flag=True,
        marker=True,
    ),
    Option(
        "ncu_timeout",
        180.0,
        "most seconds one call's Nsight Compute run may take (its child process started, the call "
        "replayed and profiled); beyond it the run is stopped and the verdict stands",
        _timeout,
    ),
    Option(
        "artifacts", Path(".kernelperf"), "folder for profiles and other artefacts, under the rootdir", _path
    ),
    Option(
        "timer",
        "auto",
        f"timing method: {', '.join(METHODS)} (auto: device time from CUPTI on CUDA, wall clock on CPU)",
        _choice(METHODS),
        marker=True,
    ),
    Option(
        "cache",
        "hot",
        "hot or cold: cold flushes the L2 cache before every trial",
        _choice(CACHE_MODES),
        marker=True,
    ),
    Option(
        "rounds",
        5,
        "rounds per measurement when comparing, each its own warm-up and sampling window",
        _positive_int,
        marker=True,
    ),
    Option(
        "record_processes",
        "auto",
        "with --kernelperf-update-baselines, record each baseline in this many processes, one after "
        "another: the baseline is their mean and their spread the kernel's own between-process noise "
        f"(auto: the tests timed on a GPU in {GPU_RECORD_PROCESSES}, and in one more, up to "
        f"{GPU_MOST_RECORD_PROCESSES}, only those whose processes disagree or would leave a judging run "
        f"undetermined; the others in 1; at most {MAX_RECORDING_PROCESSES})",
        _record_processes,
    ),
    Option(
        "add_occasion",
        False,
        "with --kernelperf-update-baselines, add this run's processes to each stored entry as one more "
        "recording occasion (the same code, another machine or day) instead of replacing it: a "
        "baseline from several occasions leaves less of one occasion's offset in every verdict. A call "
        "this run judged slower or faster, or whose inputs, compile context or timer changed, fails "
        "its test and its entry is left as it was",
        _bool,
        flag=True,
    ),
    Option(
        "baseline_rounds",
        8,
        "rounds per measurement when recording baselines (--kernelperf-update-baselines)",
        _positive_int,
        marker=True,
    ),
    Option(
        "placement",
        "fresh",
        "fresh (default): every round of a CUDA measurement runs on its own memory placement (the "
        "arguments copied to fresh addresses, the call's allocations from a pool of the round's own), "
        "so that no test order or selection decides where buffers land; process: the process's "
        "allocator decides, as in plain code",
        _choice(PLACEMENT_MODES),
        marker=True,
    ),
    Option(
        "pair_seconds",
        # On an H200 (studies/sequential_gate_study.py, 2026-12-04) 8 s decided +1% in 99% of
        # pairs while unchanged kernels stopped after 0.37-0.52 s; at 1 s, 5-10% of unchanged
        # kernels ran out undecided, which the pull-request gate fails.
        8.0,
        "with --kernelperf-against: each kernel's budget: pairs are drawn until they decide the "
        "verdict at the threshold or the kernel's measuring (its and REF's, the planned pairs "
        "included) has taken this many seconds, the last pair begun finishing; undecided then, it "
        "is undetermined, with the change its pairs could see (a kernel whose pairs spread widely "
        "needs more to decide small changes; 0: the planned pairs only; their number also stops at "
        "--kernelperf-max-rounds x the planned)",
        _seconds,
        marker=True,
    ),
    Option(
        # 64: an H200's histogram with atomics (round SD 19-27% from placement) then detects 6-8%
        # at 320 rounds, 7.5 s a call, where 60 rounds left 15-25% (`undetermined`); kernels with a
        # round SD under about 4% stop at the target well before (docs/measurement.md).
        "max_rounds",
        64,
        "a kernel whose rounds disagree (a placement-sensitive one) gets more rounds, up to this many "
        "times the planned rounds, until its level's standard error is half the threshold (0.5%% at least); "
        "only where each round draws its own placement (CUDA); at most 1000",
        _max_rounds,
        marker=True,
    ),
    Option("min_samples", 10, "fewest samples per round", _positive_int, marker=True),
    Option("min_time", 0.01, "least seconds of sampling per round (at most max_time)", _seconds, marker=True),
    Option("max_time", 0.04, "most seconds of sampling per round (at least min_time)", _seconds, marker=True),
    Option(
        "warmup",
        0.025,
        "least seconds of warm-up after the first call (later rounds warm up for 3 ms)",
        _seconds,
        marker=True,
    ),
    Option(
        "profile_stack",
        False,
        "also write folded stacks (export_stacks, for a flame graph) with each profile; costs one more "
        "profiled run",
        _bool,
        flag=True,
    ),
    Option(
        "compile_context",
        "fresh",
        "fresh (default): each measurement of torch.compile'd code compiles in a fresh compile context, "
        "so its verdict does not depend on what ran earlier in the process; shared: measure the "
        "process's warmed torch.compile caches as they are",
        _choice(MODES_COMPILE),
        marker=True,
    ),
    Option(
        "autotune",
        "baseline",
        "baseline (default): when comparing, pin each Triton autotuner to the config its baseline "
        "recorded, so that its per-process pick neither fails nor hides a change (recording always "
        "lets it choose); free: let it pick as it will (the choice is recorded and a change noted)",
        _choice(MODES_AUTOTUNE),
        marker=True,
    ),
    # Reports (relative paths are relative to the current directory, like --junitxml).
    Option(
        "json", None, "write every result, the environment and the artefact paths to this JSON file", _path
    ),
    Option(
        "markdown",
        None,
        "write a markdown summary to this file (one is also appended to $GITHUB_STEP_SUMMARY when set)",
        _path,
    ),
    Option("plot", None, "write PNG plots to this folder (needs matplotlib)", _path),
    Option(
        "durations",
        None,
        "show where the run's time went: the N most expensive tests using kernel_bench with the seconds "
        "of each phase (first call, warm-up, rounds, memory, profile, judge, baseline I/O; 0 for all), "
        "the run's phases and the seconds per judged measurement",
        _count,
    ),
    Option(
        "history",
        None,
        "append every timed run to this SQLite run history (`python -m pytest_kernelperf history`); "
        "each kernel's between-process noise is learnt from its past runs there",
        _history_file,
    ),
    # Processes.
    Option(
        "isolate",
        False,
        "run each test that uses kernel_bench in a fresh Python process, so that a kernel that "
        "crashes or poisons the CUDA context fails only its own test",
        _bool,
        flag=True,
    ),
    Option(
        "require_gpu",
        False,
        "tests using kernel_bench fail when no CUDA device is usable (for GPU CI jobs)",
        _bool,
        flag=True,
    ),
    # Updates that lose entries: each only when asked for by name, on the command line.
    Option(
        "replace_unreadable",
        False,
        "with --kernelperf-update-baselines, replace baseline files that cannot be read (a merge "
        "conflict, a cut file), losing every entry in them; without it such files are left alone",
        _bool,
        flag=True,
        ini=False,
    ),
    Option(
        "write_interrupted",
        False,
        "with --kernelperf-update-baselines, write the entries an interrupted (Ctrl-C) run measured; "
        "without it an interrupted update writes nothing",
        _bool,
        flag=True,
        ini=False,
    ),
)
# More rounds are drawn while a level's own standard error exceeds half the threshold, and at least
# this: rounds of ordinary kernels (0.1-1% apart on an H200) never need more, while a kernel whose
# placements differ by tens of percent gets them.
MIN_TARGET_SE = 0.005
_BY_FIELD = {option.field: option for option in OPTIONS}
DEFAULTS: Mapping[str, Any] = {option.field: option.default for option in OPTIONS}
MARKER_KEYS = tuple(option.field for option in OPTIONS if option.marker)


@dataclass(frozen=True)
class Settings:
    """The resolved options of a run or of one test; each default is its OPTIONS row's."""

    compare: bool = DEFAULTS["compare"]
    update: bool = DEFAULTS["update"]
    against: str | None = DEFAULTS["against"]
    against_timeout: float = DEFAULTS["against_timeout"]
    prune: bool = DEFAULTS["prune"]
    strict: bool = DEFAULTS["strict"]
    allow_undetermined: bool = DEFAULTS["allow_undetermined"]
    threshold: float = DEFAULTS["threshold"]
    alpha: float = DEFAULTS["alpha"]
    host_threshold: float = DEFAULTS["host_threshold"]
    memory_threshold: float = DEFAULTS["memory_threshold"]
    baseline_dir: Path = DEFAULTS["baseline_dir"]
    profile: bool = DEFAULTS["profile"]
    ncu: bool = DEFAULTS["ncu"]
    ncu_timeout: float = DEFAULTS["ncu_timeout"]
    artifacts: Path = DEFAULTS["artifacts"]
    timer: str = DEFAULTS["timer"]
    cache: str = DEFAULTS["cache"]
    rounds: int = DEFAULTS["rounds"]
    record_processes: int | str = DEFAULTS["record_processes"]  # "auto" or a number
    add_occasion: bool = DEFAULTS["add_occasion"]
    baseline_rounds: int = DEFAULTS["baseline_rounds"]
    placement: str = DEFAULTS["placement"]
    pair_seconds: float = DEFAULTS["pair_seconds"]
    max_rounds: int = DEFAULTS["max_rounds"]
    min_samples: int = DEFAULTS["min_samples"]
    min_time: float = DEFAULTS["min_time"]
    max_time: float = DEFAULTS["max_time"]
    warmup: float = DEFAULTS["warmup"]
    profile_stack: bool = DEFAULTS["profile_stack"]
    compile_context: str = DEFAULTS["compile_context"]
    autotune: str = DEFAULTS["autotune"]
    json: Path | None = DEFAULTS["json"]
    markdown: Path | None = DEFAULTS["markdown"]
    plot: Path | None = DEFAULTS["plot"]
    durations: int | None = DEFAULTS["durations"]
    history: Path | None = DEFAULTS["history"]
    isolate: bool = DEFAULTS["isolate"]
    require_gpu: bool = DEFAULTS["require_gpu"]
    replace_unreadable: bool = DEFAULTS["replace_unreadable"]
    write_interrupted: bool = DEFAULTS["write_interrupted"]

    @property
    def timing(self) -> bool:
        """kernel_bench times its calls: --kernelperf or --kernelperf-update-baselines."""
        return self.compare or self.update

    def processes_to_record(self, on_gpu: bool) -> int:
        """How many processes record every test: the number given, or with auto GPU_RECORD_PROCESSES
        for a test timed on a GPU (more where `chooses_more_processes` picks it) and 1 for the others (a
        host clock's process term spans far more than a process moves it)."""
        if self.record_processes == "auto":
            return GPU_RECORD_PROCESSES if on_gpu else 1
        return int(self.record_processes)

    @property
    def chooses_more_processes(self) -> bool:
        """Whether the tests timed on a GPU get up to GPU_MOST_RECORD_PROCESSES, each further process
        for the tests whose processes so far call for it (auto); a number given is every test's."""
        return self.record_processes == "auto"

    def plan(self, prefer_method: str | None = None) -> SamplingPlan:
        rounds = self.baseline_rounds if self.update else self.rounds
        return SamplingPlan(
            min_samples=self.min_samples,
            min_time_s=self.min_time,
            max_time_s=self.max_time,
            warmup_s=self.warmup,
            rounds=rounds,
            cache=self.cache,
            prefer_method=prefer_method,
            max_rounds=rounds * self.max_rounds,  # drawn only where rounds draw placements (call/timed.py)
            target_se=max(self.threshold / 2, MIN_TARGET_SE),
        )

    def with_marker(self, kwargs: Mapping[str, Any], where: str) -> Settings:
        """These settings overridden by a test's `kernelperf` marker arguments."""
        changes = {}
        for key, value in kwargs.items():
            option = _BY_FIELD.get(key)
            if option is None or not option.marker:
                raise SettingsError(
                    f"{where}: unknown argument {key!r} to @pytest.mark.kernelperf "
                    f"(accepted: {', '.join(MARKER_KEYS)})"
                )
            changes[key] = _parse(option, value, f"{where}: {key}")
        settings = dataclasses.replace(self, **changes)
        _sampling_window(settings, f"{where}: min_time", "max_time")
        return settings


def argument_type(field: str) -> Callable[[str], Any]:
    """An argparse `type=` that reads a value as the option `field` does (its one parser and its
    validation), for the commands outside pytest (compare, bisect)."""
    option = _BY_FIELD[field]

    def parse(text: str) -> Any:
        try:
            return option.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def judged_setting(
    field: str, *, given: object = None, recorded: object = None, run: Mapping[str, Any] | None = None
) -> Any:
    """The value of the judgement setting `field` for a saved result judged again (compare, bisect):
    the one `given` (the command's argument), else the one the result was `recorded` as judged with,
    else the `run`'s setting (its run file's settings), else the option's default. Each is read as
    the option reads it, and one it does not accept (None, a bool, an alpha of 0) is passed over."""
    option = _BY_FIELD[field]
    for value in (given, recorded, (run or {}).get(field)):
        if value is None or isinstance(value, bool):
            continue
        try:
            return option.parse(value)
        except ValueError:
            continue
    return option.default


def merge_markers(closest_first: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The arguments of a test's `kernelperf` markers (its own, its class's, its module's...),
    merged per key: the closest marker that sets a key wins, the others still set the rest."""
    merged: dict[str, Any] = {}
    for kwargs in closest_first:
        for key, value in kwargs.items():
            merged.setdefault(key, value)
    return merged


def _parse(option: Option, value: Any, where: str) -> Any:
    try:
        return option.parse(value)
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None


def resolve(
    cli: Mapping[str, Any],
    ini: Mapping[str, Any],
    *,
    rootdir: Path,
    invocation_dir: Path | None = None,
    ini_file: str = "the ini file",
) -> Settings:
    """Settings from command-line values (None where not given) and ini values (None or '' where not set).
    A relative history path is taken from where pytest was started when given on the command line,
    from the rootdir when set in the ini file, so that no later change of directory moves it."""
    values: dict[str, Any] = {}
    given_on_cli: set[str] = set()
    source = {option.field: f"{option.cli_name} (default)" for option in OPTIONS}
    for option in OPTIONS:
        raw_cli = cli.get(option.field)
        raw_ini = ini.get(option.field)
        if raw_cli is not None and raw_cli is not False:
            values[option.field] = _parse(option, raw_cli, option.cli_name)
            given_on_cli.add(option.field)
            source[option.field] = option.cli_name
        elif raw_ini not in (None, "", []):
            source[option.field] = f"{option.ini_name} in {ini_file}"
            values[option.field] = _parse(option, raw_ini, source[option.field])
    _one_mode(values, given_on_cli)
    if values.get("against") is not None:
        if values.get("update"):
            raise SettingsError(
                "--kernelperf-against judges this code against another revision and records nothing; "
                "it cannot be combined with --kernelperf-update-baselines"
            )
        values["compare"] = True
    settings = Settings(**values)
    _sampling_window(settings, source["min_time"], source["max_time"])
    if settings.add_occasion and not settings.update:
        raise SettingsError(
            "--kernelperf-add-occasion adds this run's measurements to the stored baselines; add "
            "--kernelperf-update-baselines"
        )
    if settings.prune and not settings.update:
        raise SettingsError(
            "--kernelperf-prune removes unused baseline entries during an update; add "
            "--kernelperf-update-baselines (without it, unused entries are only reported)"
        )
    history = settings.history
    if history is not None:
        history = (invocation_dir or rootdir) / history if "history" in given_on_cli else rootdir / history
    baseline_dir = Path(os.path.normpath(rootdir / settings.baseline_dir))
    if settings.timing:  # only timed runs read or write baselines
        _usable_folder(baseline_dir, source["baseline_dir"])
    return dataclasses.replace(
        settings,
        baseline_dir=baseline_dir,
        artifacts=rootdir / settings.artifacts,
        history=history,
    )


def _sampling_window(settings: Settings, min_name: str, max_name: str) -> None:
    """A round samples for at least min_time and at most max_time: a maximum below the minimum is a
    mistake in the configuration, so it is reported rather than quietly raised to the minimum."""
    if settings.min_time > settings.max_time:
        raise SettingsError(
            f"{min_name} {settings.min_time:g} is more than {max_name} {settings.max_time:g}: a round "
            "samples for at least the one and at most the other; raise the maximum or lower the minimum"
        )


def _usable_folder(folder: Path, where: str) -> None:
    """A file where the baseline folder should be would find no baselines, and every test would pass
    as `new`: refused before any test runs. A folder that does not exist yet is created by an update."""
    blocking = next((p for p in (folder, *folder.parents) if os.path.exists(p)), None)
    if blocking is None or os.path.isdir(blocking):
        return
    where_it_is = "" if blocking == folder else f" lies under {blocking}, which"
    raise SettingsError(
        f"{where}: {folder}{where_it_is} is a file, not a folder of baseline files (with it, no test "
        "would find its baseline)"
    )


def _one_mode(values: dict[str, Any], given_on_cli: set[str]) -> None:
    """Compare or update, never both: a run that compared and recorded at once would judge a
    regression and then make it the new baseline. The command line overrides an ini file's mode."""
    if not (values.get("compare") and values.get("update")):
        return
    on_cli = given_on_cli & {"compare", "update"}
    if len(on_cli) == 1:
        values["update" if "compare" in on_cli else "compare"] = False
        return
    raise SettingsError(
        "--kernelperf compares with the baselines and --kernelperf-update-baselines records new ones; "
        "pass one of them (to record after checking, run `pytest --kernelperf` first, then "
        "`pytest --kernelperf-update-baselines`)"
    )
