"""`--kernelperf-against REF` with a hostile REF, a hostile environment, or no REF at all: REF's code
never decides the run's exit status or its reports, a REF that cannot be loaded is an error, and a
REF whose code is really this code is never judged as REF. Scripted times: a function's `fake_ms`
at REF is whatever REF's source says."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import SUBPROCESS_ARGS, git_run, scripted_conftest

from pytest_kernelperf.model.result import Found, RevisionCheck
from pytest_kernelperf.plugins import progress
from pytest_kernelperf.results import runfile
from pytest_kernelperf.revision.source import RevisionError, resolve
from pytest_kernelperf.settings import SettingsError
from pytest_kernelperf.settings import resolve as resolve_settings
from pytest_kernelperf.verdict.memory import format_bytes

DOCS = Path(__file__).resolve().parents[2] / "docs"


def kernel(name: str = "kernel", ms: float = 1.0, prelude: str = "") -> str:
    return f"{prelude}\ndef {name}(x):\n    return x * 2\n\n{name}.fake_ms = {ms}\n"


def a_test(module: str, name: str = "kernel", test: str = "test_kernel") -> str:
    return (
        f"import torch\nfrom {module} import {name}\n\n"
        f"def {test}(kernel_bench):\n    kernel_bench({name}, torch.ones(8), reference=lambda x: x * 2)\n"
    )


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with kern/ and .gitignore, nothing committed yet."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("KERNELPERF_AGAINST_TREE", raising=False)
    root = pytester.path
    pytester.makeconftest(scripted_conftest(round_sd=0.003))
    (root / "kern").mkdir()
    (root / "kern" / "__init__.py").write_text("")
    (root / ".gitignore").write_text(
        ".kernelperf/\n__pycache__/\n*.json\nstdout\nstderr\nrunpytest-current\n"
    )
    git_run(root, "init", "-q")
    return root


def commit(root: Path, files: dict[str, str], message: str = "ref") -> str:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git_run(root, "add", "-A")
    git_run(root, "commit", "-qm", message)
    return git_run(root, "rev-parse", "HEAD").strip()


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--kernelperf-json=run.json", *args)


def results(root: Path) -> dict[str, Any]:
    data = json.loads((root / "run.json").read_text())
    return {r["nodeid"].split("::")[-1]: r for r in data["results"]}


# -- REF's code may not end the process or decide its exit status ------------------------------------

HOSTILE_IMPORTS = {
    "kern/exits.py": kernel(prelude="import os\nos._exit(0)\n"),
    "kern/exits_later.py": kernel(prelude="import atexit, os\natexit.register(os._exit, 0)\n"),
    "kern/exits_in_c.py": kernel(prelude="import ctypes\nctypes.CDLL(None)._exit(0)\n"),
    "kern/exits_when_called.py": "import os\n\ndef kernel(x):\n    os._exit(0)\n\nkernel.fake_ms = 1.0\n",
    "kern/slow.py": kernel(),
}


@pytest.mark.slow  # seconds of bounded waiting: the slow tier
@pytest.mark.skipif(sys.platform != "linux", reason="the C library's _exit by ctypes, and fork")
def test_refs_code_that_ends_the_process_at_import_decides_nothing(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """os._exit(0) at import or in the first call, an exit handler that calls it, and the C library's
    own _exit: each is refused (incomparable, why), and the run's 5x regression still fails it with
    exit 1 and a JSON."""
    tests = {f"test_{Path(path).stem}.py": a_test(f"kern.{Path(path).stem}") for path in HOSTILE_IMPORTS}
    commit(repo, {**HOSTILE_IMPORTS, **tests})
    (repo / "kern" / "slow.py").write_text(kernel(ms=5.0))
    for path in HOSTILE_IMPORTS:
        if path != "kern/slow.py":
            (repo / path).write_text(kernel())
    # A process of its own: an os._exit that got through would end this one.
    result = pytester.runpytest_subprocess(
        *SUBPROCESS_ARGS,
        "--kernelperf-json=run.json",
        "--kernelperf-against",
        "HEAD",
        "-W",
        "ignore::UserWarning",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    by_module = {
        r["nodeid"].split("::")[0]: r for r in json.loads((repo / "run.json").read_text())["results"]
    }
    assert by_module["test_slow.py"]["verdict"] == "slower"
    for module, said in [
        ("test_exits.py", "called os._exit: the revision's code may not end"),
        ("test_exits_when_called.py", "called os._exit: the revision's code may not end"),
        ("test_exits_later.py", "registers an exit handler"),
        ("test_exits_in_c.py", "ended the process (exit status 0) before it returned"),
    ]:
        reason = by_module[module]["comparison"]["reason"]
        assert by_module[module]["verdict"] == "incomparable", module
        assert said in reason, reason


@pytest.mark.slow  # seconds of bounded waiting: the slow tier
def test_an_import_or_first_call_of_ref_that_hangs_is_bounded(pytester: pytest.Pytester, repo: Path) -> None:
    hangs = "import time\n\ndef kernel(x):\n    time.sleep(30)\n    return x * 2\n\nkernel.fake_ms = 1.0\n"
    commit(
        repo,
        {
            "kern/hangs_at_import.py": kernel(prelude="import time\ntime.sleep(30)\n"),
            "kern/hangs_when_called.py": hangs,
            "test_import.py": a_test("kern.hangs_at_import"),
            "test_call.py": a_test("kern.hangs_when_called"),
        },
    )
    (repo / "kern" / "hangs_at_import.py").write_text(kernel())
    (repo / "kern" / "hangs_when_called.py").write_text(kernel())
    result = run(pytester, "--kernelperf-against", "HEAD", "--kernelperf-against-timeout=1.5", "-W", "ignore")
    result.assert_outcomes(passed=2)
    by_module = {
        r["nodeid"].split("::")[0]: r for r in json.loads((repo / "run.json").read_text())["results"]
    }
    imported, called = by_module["test_import.py"], by_module["test_call.py"]
    assert imported["verdict"] == called["verdict"] == "incomparable"
    assert "did not return within 1.5 s (--kernelperf-against-timeout)" in imported["comparison"]["reason"]
    assert "RevisionTimeout" in called["comparison"]["reason"]
    assert "did not return within 1.5 s" in called["comparison"]["reason"]


@pytest.mark.slow  # a process of its own, which the stuck call ends
def test_a_first_call_of_ref_that_cannot_be_stopped_ends_the_run_with_exit_2(
    pytester: pytest.Pytester, repo: Path
) -> None:
    stuck = (
        "import time\n\ndef kernel(x):\n    while True:\n        try:\n            time.sleep(30)\n"
        "        except BaseException:\n            pass\n\nkernel.fake_ms = 1.0\n"
    )
    commit(repo, {"kern/stuck.py": stuck, "test_stuck.py": a_test("kern.stuck")})
    (repo / "kern" / "stuck.py").write_text(kernel())
    result = pytester.runpytest_subprocess(
        *SUBPROCESS_ARGS, "--kernelperf-against", "HEAD", "--kernelperf-against-timeout=1", timeout=120
    )
    assert result.ret == 2
    assert "kern.stuck:kernel at HEAD" in result.stderr.str()
    assert "did not return within 1 s (--kernelperf-against-timeout) and could not be stopped" in (
        result.stderr.str()
    )


@pytest.mark.parametrize("value", ["-1", "abc", "1e400", "nan"])
def test_a_bad_against_timeout_is_a_usage_error(value: str) -> None:
    with pytest.raises(SettingsError, match="--kernelperf-against-timeout"):
        resolve_settings({"against_timeout": value}, {}, rootdir=Path.cwd())


# -- a REF that cannot be loaded is an error, not a green run ----------------------------------------


def test_a_ref_that_cannot_be_exported_ends_the_run_with_the_reason(
    pytester: pytest.Pytester, repo: Path
) -> None:
    commit(repo, {"kern/ops.py": kernel(), "test_ops.py": a_test("kern.ops"), "data.txt": "only at REF\n"})
    git_run(repo, "tag", "v1")
    (repo / "data.txt").unlink()
    commit(repo, {"kern/ops.py": kernel(ms=5.0)}, "5x slower")
    blob = git_run(repo, "rev-parse", "v1:data.txt").strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # a store that lost a blob
    result = run(pytester, "--kernelperf-against", "v1", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    err = result.stderr.str()
    assert "its code cannot be loaded, so nothing can be compared with it" in err
    assert "cannot export" in err


def test_ctrl_c_while_ref_is_exported_says_so_under_quiet(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From sys.modules, as the run's configure imports it (not a module an earlier run dropped).
    against = importlib.import_module("pytest_kernelperf.plugins.against")
    commit(repo, {"kern/ops.py": kernel(), "test_ops.py": a_test("kern.ops")})

    def interrupted(*args: object) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr(against, "export", interrupted)
    result = run(pytester, "--kernelperf-against", "HEAD", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "interrupted while exporting 'HEAD'" in result.stderr.str()


def test_the_footnote_does_not_claim_pairs_that_were_never_timed(
    pytester: pytest.Pytester, repo: Path
) -> None:
    commit(repo, {"kern/ops.py": "SCALE = (\n", "test_ops.py": a_test("kern.ops")})  # broken at REF
    (repo / "kern" / "ops.py").write_text(kernel())
    result = run(pytester, "--kernelperf-against", "HEAD", "-W", "ignore")
    text = result.stdout.str()
    assert "no call was paired with HEAD" in text
    assert "timed in this process in rounds paired" not in text


# -- REF's code that is really this checkout's is not REF -------------------------------------------


def test_a_ref_module_reaching_the_work_tree_through_a_symlink_is_refused(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "impl").mkdir()
    (repo / "impl" / "ops.py").write_text(kernel())
    (repo / "kern" / "ops.py").symlink_to(repo / "impl" / "ops.py")  # absolute: into this checkout
    commit(repo, {"test_ops.py": a_test("kern.ops")})
    (repo / "impl" / "ops.py").write_text(kernel(ms=5.0))  # 5x slower, here
    result = run(pytester, "--kernelperf-against", "HEAD", "-W", "ignore")
    found = results(repo)["test_kernel"]
    assert found["verdict"] == "incomparable", result.stdout.str()
    assert found["against"]["found"] == "unloadable"
    assert "from this checkout" in found["comparison"]["reason"]


def test_an_export_named_in_the_main_processs_environment_is_not_trusted(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    head = commit(repo, {"kern/ops.py": kernel(), "test_ops.py": a_test("kern.ops")})
    (repo / "kern" / "ops.py").write_text(kernel(ms=1.3))  # 30% slower
    planted = tmp_path / "kernelperf-against-1-planted" / "tree"
    (planted / "kern").mkdir(parents=True)
    (planted / "kern" / "__init__.py").write_text("")
    (planted / "kern" / "ops.py").write_text(kernel(ms=1.3))  # "REF" as slow as this code
    (planted / "test_ops.py").write_text(a_test("kern.ops"))
    (planted.parent / "commit").write_text(head + "\n")
    monkeypatch.setenv("KERNELPERF_AGAINST_TREE", f"{head}:{planted}")
    run(pytester, "--kernelperf-against", "HEAD")
    assert results(repo)["test_kernel"]["verdict"] == "slower"


def test_a_kernel_renamed_without_an_alias_is_found_by_its_code(
    pytester: pytest.Pytester, repo: Path
) -> None:
    commit(
        repo, {"kern/ops.py": kernel("old_name") + kernel("other", ms=3.0), "test_ops.py": a_test("kern.ops")}
    )
    (repo / "kern" / "ops.py").write_text(kernel("new_name", ms=1.3) + kernel("other", ms=3.0))
    (repo / "test_ops.py").write_text(a_test("kern.ops", "new_name"))
    run(pytester, "--kernelperf-against", "HEAD", "-W", "ignore")
    found = results(repo)["test_kernel"]
    assert found["verdict"] == "slower"
    assert found["against"]["where"] == "kern.ops:old_name (renamed; the same code)"


def test_a_kernel_renamed_and_changed_says_how_to_alias_it(pytester: pytest.Pytester, repo: Path) -> None:
    commit(repo, {"kern/ops.py": kernel("old_name"), "test_ops.py": a_test("kern.ops", "old_name")})
    (repo / "kern" / "ops.py").write_text(kernel("new_name").replace("x * 2", "x + x"))
    (repo / "test_ops.py").write_text(a_test("kern.ops", "new_name"))
    run(pytester, "--kernelperf-against", "HEAD", "-W", "ignore")
    found = results(repo)["test_kernel"]
    assert found["verdict"] == "new"
    assert "keep the old name as an alias (old_name = new_name)" in found["comparison"]["reason"]


# -- revisions, run files, options and docs ----------------------------------------------------------


def test_gits_search_syntax_names_a_revision(tmp_path: Path) -> None:
    git_run(tmp_path, "init", "-q")
    (tmp_path / "a").write_text("1")
    git_run(tmp_path, "add", "-A")
    git_run(tmp_path, "commit", "-qm", "base of the work")
    base = git_run(tmp_path, "rev-parse", "HEAD").strip()
    (tmp_path / "a").write_text("2")
    git_run(tmp_path, "commit", "-qam", "later")
    assert resolve(tmp_path, ":/base").commit == base
    with pytest.raises(RevisionError, match="is not a commit"):
        resolve(tmp_path, ":/no such message")
    with pytest.raises(RevisionError, match="is not a commit"):
        resolve(tmp_path, "HEAD:a")  # a blob


@pytest.mark.parametrize("commit_id", ["zz", "=HYPERLINK(1)", "abc", "A" * 40])
def test_a_run_file_with_a_non_hex_against_commit_is_refused(commit_id: str) -> None:
    from pytest_kernelperf.model.result import BenchResult, Verdict

    check = RevisionCheck("HEAD (0123456789)", "0123456789" * 4, Found.SAME_NAME, "kern.ops:kernel", "")
    result = BenchResult("test_k.py::test_kernel", None, "cpu", Verdict.SAME, against=check)
    data = runfile.result_to_dict(result)
    assert runfile.result_from_dict(data).against == check
    data["against"]["commit"] = commit_id
    with pytest.raises(runfile.RunFileError, match="expected a commit of 40 hex digits"):
        runfile.result_from_dict(data)


@pytest.mark.parametrize("value", ["inf", "1e10", "1e400"])
def test_a_progress_threshold_past_any_timer_never_announces(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(progress.AFTER_VARIABLE, value)
    assert progress.threshold() == math.inf
    steps = progress.Progress(cast(pytest.Config, None), enabled=True)  # writes nothing: no config
    with steps.step("a step"):
        assert steps._timers == set()  # no timer thread, which could not wait that long


def test_a_memory_threshold_that_is_not_finite_says_so_with_memorys_examples() -> None:
    with pytest.raises(SettingsError) as raised:
        resolve_settings({"memory_threshold": "1e400"}, {}, rootdir=Path.cwd())
    assert "must be finite" in str(raised.value)
    assert "more memory" in str(raised.value) and "slower" not in str(raised.value)


def test_memory_sizes_read_without_an_exponent() -> None:
    assert format_bytes(1000 * 2**20) == "1000 MiB"
    assert format_bytes(999 * 2**10) == "999 KiB"
    assert format_bytes(int(1.5 * 2**30)) == "1.5 GiB"
    assert format_bytes(int(1023.9 * 2**20)) == "1 GiB"


def test_the_ci_docs_describe_the_export_refs_files_really_get() -> None:
    text = (DOCS / "ci.md").read_text()
    assert "exported with `git archive`" not in text
    assert "git read-tree" in text and "git checkout-index" in text


def test_a_worker_takes_only_an_export_a_process_above_it_made_of_that_commit(tmp_path: Path) -> None:
    from pytest_kernelperf.plugins.against import PREFIX, STAMP, _made_above

    commit_id = "a" * 40

    def export(pid: int, name: str, stamp: str | None = commit_id) -> Path:
        tree = tmp_path / f"{PREFIX}{pid}-{name}" / "tree"
        tree.mkdir(parents=True)
        if stamp is not None:
            (tree.parent / STAMP).write_text(stamp + "\n")
        return tree

    assert _made_above(export(os.getppid(), "ok"), commit_id)
    assert not _made_above(export(os.getpid(), "mine"), commit_id)  # this process is not above itself
    assert not _made_above(export(os.getppid(), "other"), "b" * 40)  # an export of another commit
    assert not _made_above(export(os.getppid(), "unstamped", stamp=None), commit_id)
    planted = tmp_path / "planted" / "tree"
    planted.mkdir(parents=True)
    assert not _made_above(planted, commit_id)  # not named as an export


def test_an_exit_handler_registered_past_the_guard_cannot_change_the_exit_status(tmp_path: Path) -> None:
    """A handler registered through a reference to atexit.register taken before the guard (no guard
    sees it): the import is refused, and the run's exit status (1 here) is the process's."""
    script = tmp_path / "run.py"
    script.write_text(
        "import atexit, os, sys\n"
        "from pathlib import Path\n"
        "from pytest_kernelperf.revision.containment import ProcessExitRefused, no_process_exit, "
        "reassert_exit_status\n"
        "register, end = atexit.register, os._exit\n"
        "try:\n"
        "    with no_process_exit('kern.ops at REF', Path('/nonexistent')):\n"
        "        register(end, 0)\n"
        "except ProcessExitRefused as refused:\n"
        "    print(refused)\n"
        "reassert_exit_status(1)\n"
        "sys.exit(1)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done
    assert "registered 1 exit handler(s) past atexit.register" in done.stdout
