"""One frozen Settings per test: marker > command line > ini file > default.

Every option is declared once in OPTIONS, with one help text shared by its command-line flag and its
ini key. Each value is validated where it is read, and the error names where it came from
(`--kernelperf-threshold`, ini `kernelperf_threshold`, or the test's marker), so a typo in a CI
config file is reported as such instead of surfacing as an odd verdict. No pytest import here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kernelperf.measure.timing import CACHE_MODES, METHODS, SamplingPlan
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


def _seconds(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected seconds, got {value!r}")
    try:
        number = float(str(value).strip().removesuffix("s"))
    except ValueError:
        raise ValueError(f"expected seconds such as 0.5, got {value!r}") from None
    if not 0 <= number < 3600:
        raise ValueError(f"expected 0 to 3600 seconds, got {value!r}")
    return number


def _fraction(value: Any) -> float:
    return parse_fraction(value)


def _threshold(value: Any) -> float:
    return parse_threshold(value)


def _choice(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip()
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return text

    return parse


def _path(value: Any) -> Path:
    text = str(value).strip()
    if not text:
        raise ValueError("expected a path, got an empty value")
    return Path(text)


@dataclass(frozen=True)
class Option:
    field: str  # Settings field
    help: str
    parse: Callable[[Any], Any]
    flag: bool = False  # a command-line switch without a value
    cli: bool = True
    ini: bool = True
    marker: bool = False  # settable per test with @pytest.mark.kernelperf(...)

    @property
    def cli_name(self) -> str:
        return "--kernelperf-" + self.field.replace("_", "-")

    @property
    def ini_name(self) -> str:
        return "kernelperf_" + self.field


OPTIONS: tuple[Option, ...] = (
    Option("strict", "a missing baseline fails the test instead of passing as new", _bool, flag=True),
    Option(
        "threshold",
        "practical floor: a significant change must also exceed this to count as slower or faster, as "
        "a fraction (0.005) or percentage (0.5%%); 2.0 fails only beyond 3x slower; default 0.005",
        _threshold,
        marker=True,
    ),
    Option(
        "alpha",
        "false-alarm rate of the whole run: each of the m judgements planned is held to alpha/m "
        "(Bonferroni); default 0.01",
        _fraction,
        marker=True,
    ),
    Option(
        "host_threshold",
        "practical floor for host latency per call (the launch path): a significant change beyond it "
        "draws a warning; default 0.5. Host latency varies more between processes than device time, "
        "so it warns and never fails",
        _threshold,
        marker=True,
    ),
    Option("baseline_dir", "folder of the YAML baselines; default 'baselines' under the rootdir", _path),
    Option(
        "profile",
        "capture a torch.profiler table, Chrome trace and kernel inventory per timed call (slower and "
        "unreliable calls are always profiled)",
        _bool,
        flag=True,
    ),
    Option(
        "artifacts", "folder for profiles and other artefacts; default '.kernelperf' under the rootdir", _path
    ),
    Option(
        "timer",
        f"timing method: {', '.join(METHODS)}; "
        "default auto (device time from CUPTI on CUDA, wall clock on CPU)",
        _choice(METHODS),
        marker=True,
    ),
    Option(
        "cache",
        "hot (default) or cold: flush the L2 cache before every trial",
        _choice(CACHE_MODES),
        marker=True,
    ),
    Option(
        "rounds",
        "rounds per measurement when comparing, each its own warm-up and sampling window; default 5",
        _positive_int,
        marker=True,
    ),
    Option(
        "baseline_rounds",
        "rounds per measurement when recording baselines (--kernelperf-update-baselines); default 8",
        _positive_int,
        marker=True,
    ),
    Option("min_samples", "fewest samples per round; default 10", _positive_int, marker=True),
    Option("min_time", "least seconds of sampling per round; default 0.01", _seconds, marker=True),
    Option("max_time", "most seconds of sampling per round; default 0.04", _seconds, marker=True),
    Option(
        "warmup",
        "least seconds of warm-up after the first call (later rounds warm up for 3 ms); default 0.025",
        _seconds,
        marker=True,
    ),
    Option(
        "profile_stack",
        "also write folded stacks (export_stacks, for a flame graph) with each profile; costs one more "
        "profiled run",
        _bool,
        flag=True,
    ),
    # Reports (relative paths are relative to the current directory, like --junitxml).
    Option("json", "write every result, the environment and the artefact paths to this JSON file", _path),
    Option(
        "markdown",
        "write a markdown summary to this file (one is also appended to $GITHUB_STEP_SUMMARY when set)",
        _path,
    ),
    Option("plot", "write PNG plots to this folder (needs matplotlib)", _path),
)
_BY_FIELD = {option.field: option for option in OPTIONS}
MARKER_KEYS = tuple(option.field for option in OPTIONS if option.marker)


@dataclass(frozen=True)
class Settings:
    timing: bool = False  # --kernelperf or --kernelperf-update-baselines
    update: bool = False
    strict: bool = False
    threshold: float = 0.005
    alpha: float = 0.01
    host_threshold: float = 0.5
    baseline_dir: Path = Path("baselines")
    profile: bool = False
    artifacts: Path = Path(".kernelperf")
    timer: str = "auto"
    cache: str = "hot"
    rounds: int = 5
    baseline_rounds: int = 8
    min_samples: int = 10
    min_time: float = 0.01
    max_time: float = 0.04
    warmup: float = 0.025
    profile_stack: bool = False
    json: Path | None = None
    markdown: Path | None = None
    plot: Path | None = None

    def plan(self, prefer_method: str | None = None) -> SamplingPlan:
        return SamplingPlan(
            min_samples=self.min_samples,
            min_time_s=self.min_time,
            max_time_s=max(self.max_time, self.min_time),
            warmup_s=self.warmup,
            rounds=self.baseline_rounds if self.update else self.rounds,
            cache=self.cache,
            prefer_method=prefer_method,
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
        return dataclasses.replace(self, **changes)


def _parse(option: Option, value: Any, where: str) -> Any:
    try:
        return option.parse(value)
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None


def resolve(
    cli: Mapping[str, Any],
    ini: Mapping[str, Any],
    *,
    timing: bool,
    update: bool,
    rootdir: Path,
    ini_file: str = "the ini file",
) -> Settings:
    """Settings from command-line values (None where not given) and ini values (None or '' where not set)."""
    values: dict[str, Any] = {"timing": timing or update, "update": update}
    for option in OPTIONS:
        raw_cli = cli.get(option.field)
        raw_ini = ini.get(option.field)
        if raw_cli is not None and raw_cli is not False:
            values[option.field] = _parse(option, raw_cli, option.cli_name)
        elif raw_ini not in (None, "", []):
            values[option.field] = _parse(option, raw_ini, f"{option.ini_name} in {ini_file}")
    settings = Settings(**values)
    return dataclasses.replace(
        settings,
        baseline_dir=rootdir / settings.baseline_dir,
        artifacts=rootdir / settings.artifacts,
    )
