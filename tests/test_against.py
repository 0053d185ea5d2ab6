"""--kernelperf-against REF: each kernel timed beside the same function at REF, in this process, in
paired rounds; the pair judged instead of the stored baselines. Scripted times: a function's
`fake_ms` at REF is whatever REF's source says."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import SUBPROCESS_ARGS, git_run, scripted_conftest

from pytest_kernelperf.model.result import Found, Verdict
from pytest_kernelperf.results import runfile

CONFTEST = scripted_conftest(round_sd=0.003)

# A package with a relative import: REF's function must see REF's constant.
OPS = """
from .consts import SCALE

def double(x):
    return x * SCALE

double.fake_ms = {double_ms}

def steady(x):
    return x + 1

steady.fake_ms = 0.05
"""

TESTS = """
import torch
from kern.ops import double, steady

def test_double(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=lambda x: x * 2)

def test_steady(kernel_bench):
    kernel_bench(steady, torch.ones(8), reference=lambda x: x + 1)
"""


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose HEAD has kern/ (double at 0.02 ms) and the tests; the work tree as HEAD."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    root = pytester.path
    pytester.makeconftest(CONFTEST)
    (root / "kern").mkdir()
    (root / "kern" / "__init__.py").write_text("")
    (root / "kern" / "consts.py").write_text("SCALE = 2\n")
    (root / "kern" / "ops.py").write_text(OPS.format(double_ms=0.02))
    (root / "test_ops.py").write_text(TESTS)
    # What pytester and the runs write beside the code.
    (root / ".gitignore").write_text(
        ".kernelperf/\n__pycache__/\n*.json\nstdout\nstderr\nrunpytest-current\n"
    )
    git_run(root, "init", "-q")
    git_run(root, "add", "-A")
    git_run(root, "commit", "-qm", "base")
    return root


@pytest.fixture
def compiled_once() -> None:
    """torch.compile's modules imported by this process before a pytester run compiles: pytester
    forgets the modules an in-process run imported, and importing them again would register
    inductor's cache artefacts twice (an error of torch's, not of the code under test)."""
    import torch

    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--kernelperf-json=run.json", *args)


def results(pytester: pytest.Pytester) -> dict[str, Any]:
    data = json.loads((pytester.path / "run.json").read_text())
    return {r["nodeid"].split("::")[-1]: r for r in data["results"]}


def test_a_slower_function_fails_against_its_base_and_the_same_one_passes(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "kern" / "ops.py").write_text(OPS.format(double_ms=0.021))  # +5% in the work tree
    result = run(pytester, "--kernelperf-against", "HEAD")
    result.assert_outcomes(failed=1, passed=1)
    head = git_run(repo, "rev-parse", "HEAD").strip()
    text = result.stdout.str()
    assert re.search(rf"vs 20\.\d* us at HEAD \({head[:10]}\) \(\+[45]\.\d%", text), text
    assert f"kern.ops:double loaded from {head}; answers identical" in text
    assert "Base (ms)" in text and "Baseline" not in text
    found = results(pytester)
    double, steady = found["test_double"], found["test_steady"]
    assert (double["verdict"], steady["verdict"]) == ("slower", "same")
    assert double["against"]["commit"] == head and double["against"]["found"] == "found"
    assert double["against"]["level_ms"] == pytest.approx(0.02, rel=0.01)
    assert len(double["against"]["rounds_ms"]) == len(double["device_time"]["rounds_ms"])
    assert double["comparison"]["ratio"] == pytest.approx(1.05, rel=0.01)
    # The stored baselines play no part: none were read, none written.
    assert not (repo / "baselines").exists()
    # The run file keeps the pair.
    again = runfile.load(repo / "run.json").results
    by_test = {r.nodeid.split("::")[-1]: r for r in again}
    assert by_test["test_double"].against is not None
    assert by_test["test_double"].against.found is Found.SAME_NAME
    assert by_test["test_double"].verdict is Verdict.SLOWER


def test_the_revisions_own_modules_are_used_and_the_processs_stay(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """REF's `double` multiplies by REF's SCALE (2); the work tree's by 3: the answers differ, which
    is said (a warning and the JSON) but does not fail the test, whose reference decides."""
    (repo / "kern" / "consts.py").write_text("SCALE = 3\n")
    (repo / "test_ops.py").write_text(TESTS.replace("lambda x: x * 2", "lambda x: x * 3"))
    result = run(pytester, "--kernelperf-against", "HEAD")
    result.assert_outcomes(passed=2)
    answers = results(pytester)["test_double"]["against"]["answers"]
    assert answers.startswith("differs: mismatch in output"), answers
    assert "the answer changed against HEAD" in result.stdout.str()


def test_a_function_the_revision_lacks_is_new_and_strict_fails_it(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "kern" / "extra.py").write_text("def triple(x):\n    return x * 3\n\ntriple.fake_ms = 0.01\n")
    (repo / "test_extra.py").write_text(
        "import torch\nfrom kern.extra import triple\n\n"
        "def test_triple(kernel_bench):\n    kernel_bench(triple, torch.ones(8), reference=lambda x: x * 3)\n"
    )
    result = run(pytester, "--kernelperf-against", "HEAD", "test_extra.py")
    result.assert_outcomes(passed=1)
    found = results(pytester)["test_triple"]
    assert found["verdict"] == "new" and found["against"]["found"] == "absent"
    assert "has no kern/extra.py" in found["comparison"]["reason"]
    assert "has no kern/extra.py" in result.stdout.str()  # the verdict cell says why

    strict = run(pytester, "--kernelperf-against", "HEAD", "--kernelperf-strict", "test_extra.py")
    strict.assert_outcomes(failed=1)


def test_a_module_that_does_not_import_at_the_revision_is_named_with_the_reason(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "kern" / "consts.py").write_text("SCALE = (\n")  # a syntax error at REF
    git_run(repo, "commit", "-qam", "broken")
    (repo / "kern" / "consts.py").write_text("SCALE = 2\n")
    result = run(pytester, "--kernelperf-against", "HEAD", "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=2)
    found = results(pytester)
    for test in ("test_double", "test_steady"):
        assert found[test]["verdict"] == "incomparable"
        assert found[test]["against"]["found"] == "unloadable"
        assert "kern.ops cannot be imported from HEAD" in found[test]["comparison"]["reason"]
        assert "SyntaxError" in found[test]["comparison"]["reason"]


def test_a_function_from_outside_the_repository_is_not_compared(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "test_torch.py").write_text(
        "import torch\nfrom torch.nn.functional import relu\n\nrelu.fake_ms = 0.01\n\n"
        "def test_neg(kernel_bench):\n    kernel_bench(relu, torch.ones(8), reference=lambda x: x)\n"
    )
    result = run(pytester, "--kernelperf-against", "HEAD", "test_torch.py", "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=1)
    found = results(pytester)["test_neg"]
    assert found["against"]["found"] == "outside"
    assert "outside the repository" in found["comparison"]["reason"]


def _state(repo: Path) -> str:
    """Everything of the user's repository that a run must leave alone."""
    index = hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest()
    parts = [
        git_run(repo, "status", "--porcelain", "--ignored=no"),
        git_run(repo, "worktree", "list", "--porcelain"),
        git_run(repo, "branch", "-a", "-v"),
        git_run(repo, "stash", "list"),
        index,
    ]
    return "\n".join(parts)


def test_the_users_tree_index_branches_and_worktrees_stay_as_they_were(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "kern" / "ops.py").write_text(OPS.format(double_ms=0.021))
    git_run(repo, "add", "kern/ops.py")  # staged, and more changes on top
    (repo / "kern" / "consts.py").write_text("SCALE = 2  # touched\n")
    before = _state(repo)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run(pytester, "--kernelperf-against", "HEAD~0").assert_outcomes(failed=1, passed=1)
    assert _state(repo) == before
    assert list(tmp_path.glob("kernelperf-*")) == []  # the exported files are gone


@pytest.mark.slow  # a pytest process of its own
def test_an_interrupted_run_removes_the_revisions_files(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "test_ops.py").write_text(
        TESTS
        + "\ndef test_stop(kernel_bench):\n    kernel_bench(steady, torch.ones(8))\n"
        + "    raise KeyboardInterrupt\n"
    )
    before = _state(repo)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    # In a process of its own: an interrupt in an in-process run would stop this one too.
    result = pytester.runpytest_subprocess(*SUBPROCESS_ARGS, "--kernelperf-against", "HEAD")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert _state(repo) == before
    assert list(tmp_path.glob("kernelperf-*")) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--kernelperf-against", "no-such-branch"), "'no-such-branch' is not a commit of the repository"),
        (("--kernelperf-against", "HEAD", "--kernelperf-update-baselines"), "cannot be combined"),
        (("--kernelperf-against=--oops",), "--kernelperf-against: expected a git revision"),
    ],
)
def test_a_bad_revision_stops_the_run_naming_the_option(
    pytester: pytest.Pytester, repo: Path, args: tuple[str, ...], expected: str
) -> None:
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str()
    assert "--kernelperf-against" in result.stderr.str() or "kernelperf-against" in " ".join(args)


def test_outside_a_git_repository_the_option_says_so(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelperf-against", "HEAD")
    if result.ret == pytest.ExitCode.OK:  # the temporary folder lies inside a repository
        pytest.skip("pytester's folder is inside a git repository here")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is not inside a git repository" in result.stderr.str()


def test_the_history_keeps_the_pair_and_learns_no_noise_from_it(
    pytester: pytest.Pytester, repo: Path
) -> None:
    from pytest_kernelperf.history.rows import SeriesKey
    from pytest_kernelperf.history.store import HistoryStore

    run(pytester, "--kernelperf-against", "HEAD", "--kernelperf-history=h.sqlite").assert_outcomes(passed=2)
    head = git_run(repo, "rev-parse", "HEAD").strip()
    with HistoryStore(repo / "h.sqlite", read_only=True) as history:
        rows = [m for m in history.measurements() if m["metric"] == "device_time"]
        assert {m["against_commit"] for m in rows} == {head}
        assert all(m["against_ms"] == pytest.approx(m["level_ms"], rel=0.02) for m in rows)
        key = SeriesKey("test_ops.py::test_double", "", rows[0]["device"], "hot", "device_time")
        # A verdict against another revision teaches nothing of the between-process noise of a
        # judgement against the baseline.
        assert history.recent_rounds(key, method="scripted", verdict="same", since="", limit=5) == []


# A revision and a work tree that differ the ways real branches do.
HOSTILE_AT_REF = {
    "kern/shapes.py": """
calls = [0]

def aliased(x):
    return x * 2

aliased.fake_ms = 0.02

def moving(x):
    return x * 2

moving.fake_ms = 0.02

class Kernels:
    @classmethod
    def scaled(cls, x):
        return x * 2

Kernels.scaled.__func__.fake_ms = 0.02

def in_place(x):
    x.mul_(2)

in_place.fake_ms = 0.02

def flaky(x):
    calls[0] += 1
    if calls[0] > 1:
        raise RuntimeError("flaky at the revision")
    return x * 2

flaky.fake_ms = 0.02
""",
    "kern/ops_registry.py": """
import torch

@torch.library.custom_op("kernperf_test::triple", mutates_args=())
def triple(x: torch.Tensor) -> torch.Tensor:
    return x * 3

def run(x):
    return torch.ops.kernperf_test.triple(x)

run.fake_ms = 0.02
""",
}
HOSTILE_NOW = {
    # Renamed, the old name kept as an alias; one function moved to a module of its own.
    "kern/shapes.py": HOSTILE_AT_REF["kern/shapes.py"]
    .replace("def aliased(x):", "def aliased_v2(x):")
    .replace("aliased.fake_ms = 0.02", "aliased_v2.fake_ms = 0.03\naliased = aliased_v2")
    .replace("def moving(x):\n    return x * 2\n\nmoving.fake_ms = 0.02\n", "from kern.moved import moving\n")
    .replace('    if calls[0] > 1:\n        raise RuntimeError("flaky at the revision")\n', "")
    .replace("x.mul_(2)", "x.mul_(3)"),
    "kern/moved.py": "def moving(x):\n    return x * 2\n\nmoving.fake_ms = 0.03\n",
}
HOSTILE_TESTS = """
import torch
from kern.shapes import Kernels, aliased, flaky, in_place, moving

def slow(x):
    return x * 2

slow.fake_ms = 0.04

def ref(x):
    return x + x

ref.fake_ms = 0.02

def test_aliased(kernel_bench):
    kernel_bench(aliased, torch.ones(8))

def test_moving(kernel_bench):
    kernel_bench(moving, torch.ones(8))

def test_classmethod(kernel_bench):
    kernel_bench(Kernels.scaled, torch.ones(8))

def test_in_place(kernel_bench):
    kernel_bench(in_place, torch.ones(8))

def test_flaky(kernel_bench):
    kernel_bench(flaky, torch.ones(8))

def test_max_ratio(kernel_bench):
    kernel_bench(slow, torch.ones(8), reference=ref, max_ratio=1.1)
"""


# Its own module: the revision's test module that imports it cannot be loaded either.
REGISTRY_TESTS = """
import torch
from kern.ops_registry import run

def test_registry(kernel_bench):
    kernel_bench(run, torch.ones(8))

def test_operator_untouched():
    assert torch.ops.kernperf_test.triple(torch.ones(2)).tolist() == [3.0, 3.0]
"""


def test_renames_moves_methods_in_place_kernels_and_failures_at_the_revision(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path, text in HOSTILE_AT_REF.items():
        (repo / path).write_text(text)
    (repo / "test_hostile.py").write_text(HOSTILE_TESTS)
    (repo / "test_registry.py").write_text(REGISTRY_TESTS)
    (repo / ".gitattributes").write_text("kern/shapes.py export-ignore\n")  # hides nothing
    git_run(repo, "add", "-A")
    git_run(repo, "commit", "-qm", "shapes")
    for path, text in HOSTILE_NOW.items():
        (repo / path).write_text(text)
    stale = tmp_path / "kernelperf-against-999999999-x"  # left by a process killed outright
    stale.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tests = ("test_hostile.py", "test_registry.py")
    result = run(pytester, "--kernelperf-against", "HEAD", *tests, "-W", "ignore::UserWarning")
    found = results(pytester)
    outcome = {test: (r["verdict"], r["against"]["found"]) for test, r in found.items()}
    assert outcome == {
        "test_aliased": ("slower", "found"),  # +50% under its old name
        "test_moving": ("slower", "found"),  # +50%, found through the test module's name
        "test_classmethod": ("same", "found"),
        "test_in_place": ("same", "found"),
        "test_flaky": ("incomparable", "unloadable"),
        "test_registry": ("incomparable", "unloadable"),
        "test_max_ratio": ("same", "found"),
    }
    assert found["test_aliased"]["against"]["where"] == "kern.shapes:aliased"
    assert found["test_moving"]["against"]["where"] == "test_hostile:moving"
    assert found["test_in_place"]["against"]["answers"].startswith("differs"), "inputs compared"
    assert (
        "raised RuntimeError while timed: flaky at the revision"
        in found["test_flaky"]["comparison"]["reason"]
    )
    assert "registers torch operators" in found["test_registry"]["comparison"]["reason"]
    assert found["test_max_ratio"]["reference"]["exceeded"] is True  # max_ratio still holds
    result.assert_outcomes(failed=3, passed=5)  # aliased, moving, max_ratio; the operator is untouched
    assert not stale.exists()


def test_a_host_timed_pair_whose_revision_imports_when_called_is_not_compared(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """The revision's call-time imports go through the loader's own import, whose Python costs
    another time than the interpreter's: a timer that times the Python code cannot compare them."""
    (repo / "kern" / "lazy.py").write_text(
        "def lazy(x):\n    from .consts import SCALE\n\n    return x * SCALE\n\nlazy.fake_ms = 0.02\n"
    )
    (repo / "test_lazy.py").write_text(
        "import torch\nfrom kern.lazy import lazy\n\n"
        "def test_lazy(kernel_bench):\n    kernel_bench(lazy, torch.ones(8))\n"
    )
    git_run(repo, "add", "-A")
    git_run(repo, "commit", "-qm", "lazy")
    pytester.makeconftest(
        CONFTEST.replace("return ScriptedTimer(round_sd=0.003)", "return HostTimer()") + HOST
    )
    run(pytester, "--kernelperf-against", "HEAD", "test_lazy.py", "-W", "ignore::UserWarning")
    found = results(pytester)["test_lazy"]
    assert found["verdict"] == "incomparable"
    assert "imports modules when called" in found["comparison"]["reason"]


HOST = """
class HostTimer(ScriptedTimer):
    method = "wall-clock"  # as the CPU's timer: the Python code of the call is in the time
"""


SECOND_AT_REF = """
import pytest

class Unsized:
    # A callable whose truth raises, as a torch.compile'd nn.Module does.
    def __len__(self):
        raise TypeError("no len()")

    def __call__(self, x):
        return x * 2

module_like = Unsized()
Unsized.fake_ms = 0.02

def push(xs):
    xs.append(xs[0] * 2)

push.fake_ms = 0.02

def skipping(x):
    pytest.skip("skips at the revision")

skipping.fake_ms = 0.02

def outer(fn):
    def run(x):  # no functools.wraps: the wrapper's module is this one, its name "run"
        return fn(x)

    run.fake_ms = fn.fake_ms
    return run

def _fast(x):
    return x * 2

_fast.fake_ms = 0.02
fast = outer(_fast)
"""
SECOND_TESTS = """
import torch
from kern.second import fast, module_like, push, skipping

def triple(x):  # a helper of the test module that shares a name with the branch's new kernel
    return x * 3

def test_module_like(kernel_bench):
    kernel_bench(module_like, torch.ones(8))

def test_push(kernel_bench):
    xs = [torch.ones(4)]
    kernel_bench(push, xs, restore_inputs=True)

def test_skipping(kernel_bench):
    kernel_bench(skipping, torch.ones(8))

def test_fast(kernel_bench):
    kernel_bench(fast, torch.ones(8))
"""
SECOND_NEW = """
import torch
from kern.newer import triple

def test_triple(kernel_bench):
    kernel_bench(triple, torch.ones(8))
"""


def test_unsized_callables_restored_lists_skips_and_namesakes_at_the_revision(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "kern" / "second.py").write_text(SECOND_AT_REF)
    (repo / "test_second.py").write_text(SECOND_TESTS)
    (repo / "test_newer.py").write_text(SECOND_TESTS.replace("def test_", "def _unused_"))
    git_run(repo, "add", "-A")
    git_run(repo, "commit", "-qm", "second")
    # In the branch: skipping no longer skips, fast is 50% slower, and test_newer.py times a new
    # kernel named like the revision's test helper.
    (repo / "kern" / "second.py").write_text(
        SECOND_AT_REF.replace('    pytest.skip("skips at the revision")', "    return x").replace(
            "_fast.fake_ms = 0.02", "_fast.fake_ms = 0.03"
        )
    )
    (repo / "kern" / "newer.py").write_text("def triple(x):\n    return x * 3\n\ntriple.fake_ms = 0.01\n")
    (repo / "test_newer.py").write_text(SECOND_NEW)
    result = run(pytester, "--kernelperf-against", "HEAD", "test_second.py", "test_newer.py", "-W", "ignore")
    found = results(pytester)
    outcome = {test: (r["verdict"], r["against"]["found"]) for test, r in found.items()}
    assert outcome == {
        "test_module_like": ("same", "found"),
        "test_push": ("same", "found"),  # the restored list is the one the revision's push sees
        "test_skipping": ("incomparable", "unloadable"),  # its skip does not skip this test
        "test_fast": ("slower", "found"),  # a wrapper without wraps, held under its module's name
        "test_triple": ("new", "absent"),  # not the revision's test helper of the same name
    }
    assert found["test_push"]["against"]["answers"] == "identical"
    assert "raised Skipped" in found["test_skipping"]["comparison"]["reason"]
    result.assert_outcomes(failed=1, passed=4)


@pytest.mark.slow  # xdist workers are processes of their own
def test_xdist_workers_use_the_main_processs_export(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "kern" / "ops.py").write_text(OPS.format(double_ms=0.021))
    (repo / "test_where.py").write_text(
        "import os\n\n"
        "def test_the_export_is_the_main_processs():\n"
        "    commit, _, tree = os.environ['KERNELPERF_AGAINST_TREE'].partition(':')\n"
        "    owner = tree.split('kernelperf-against-')[1].split('-')[0]\n"
        "    assert os.path.isdir(tree) and int(owner) != os.getpid()\n"
    )
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    result = pytester.runpytest_subprocess(
        *SUBPROCESS_ARGS, "-n", "2", "--kernelperf-against", "HEAD", "--kernelperf-json=run.json"
    )
    result.assert_outcomes(failed=1, passed=2)  # test_double is 5% slower
    assert results(pytester)["test_double"]["against"]["found"] == "found"
    assert list(tmp_path.glob("kernelperf-*")) == []


# A model whose objects the tests make themselves: the revision's classes must time them.
MODEL = """
import torch

class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((8,), 2.0))

    def forward(self, x):
        return x * self.weight * {inner_scale}

class Block(torch.nn.Module):
    fake_ms = {block_ms}

    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.again = self.inner  # held twice: one twin
        self.step = self.through_inner  # a bound method kept: it must run REF's code

    def through_inner(self, x):
        return self.inner(x)

    def forward(self, x):
        return self.step(x) + 1
"""

MODEL_TESTS = """
import torch
from kern.model import Block

def test_block(kernel_bench):
    block = Block()
    kernel_bench(block, torch.ones(8), reference=lambda x: x * 3 + 1)

def test_compiled_block(kernel_bench):
    compiled = torch.compile(Block(), backend="eager")
    kernel_bench(compiled, torch.ones(8), reference=lambda x: x * 3 + 1)
"""


@pytest.mark.slow  # torch.compile's modules in this process slow every later in-process run
@pytest.mark.usefixtures("compiled_once")
def test_a_module_object_made_in_the_test_is_timed_as_the_revisions_class(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """`Block()` and `torch.compile(Block())` made inside the tests: REF's Block (and the Inner it
    holds) with the same parameters. REF's Inner scales by 1, the work tree's by 1.5: the answers
    differ, which shows REF's nested class ran; the work tree's Block is 5% slower."""
    (repo / "kern" / "model.py").write_text(MODEL.format(inner_scale=1, block_ms=0.02))
    (repo / "test_model.py").write_text(MODEL_TESTS)
    git_run(repo, "add", "-A")
    git_run(repo, "commit", "-qm", "model")
    (repo / "kern" / "model.py").write_text(MODEL.format(inner_scale=1.5, block_ms=0.021))
    result = run(pytester, "test_model.py", "--kernelperf-against", "HEAD")
    found = results(pytester)
    for test in ("test_block", "test_compiled_block"):
        against = found[test]["against"]
        assert against["found"] == "found", (test, found[test]["comparison"])
        assert against["where"] == "kern.model:Block (an object made in the test)"
        assert found[test]["verdict"] == "slower"
        assert against["answers"].startswith("differs"), against["answers"]
    result.assert_outcomes(failed=2)  # slower than REF


# Objects made in tests, in the shapes a rebuild has to follow. REF scales by 1, the work tree by
# {scale} (1.5): where REF's code runs, the answers differ.
SHAPES = """
import dataclasses
import enum
import functools

import torch

class Mode(enum.Enum):
    FAST = 1
{turbo}
class WithTurbo:
    fake_ms = 0.02

    def __init__(self):
        self.mode = getattr(Mode, "TURBO", Mode.FAST)

    def __call__(self, x):
        return x * 2

class Inner:
    def __init__(self):
        self.k = 2.0

    def __call__(self, x):
        return x * self.k * {scale}

    def run(self, x):
        return self(x)

class InList:
    fake_ms = 0.02

    def __init__(self):
        self.layers = [Inner()]
        self.pair = (Inner(),)

    def __call__(self, x):
        return self.pair[0](self.layers[0](x))

class BoundFirst:
    fake_ms = 0.02

    def __init__(self):
        self.step = None
        self.inner = Inner()
        self.step = self.inner.run  # held before its owner in the object's attributes

    def __call__(self, x):
        return self.step(x)

    __call__.fake_ms = 0.02  # timed as a bound method too

class Hooked(torch.nn.Module):
    fake_ms = 0.02

    def __init__(self):
        super().__init__()
        self.register_forward_pre_hook(self.scale_input)

    def scale_input(self, module, args):
        return (args[0] * {scale},)

    def forward(self, x):
        return x * 2

class WithMode:
    fake_ms = 0.02

    def __init__(self):
        self.mode = Mode.FAST

    def __call__(self, x):
        assert self.mode is Mode.FAST, self.mode
        return x * 2
{newer}
class Slotted:
    __slots__ = ("k",)
    fake_ms = 0.02

    def __init__(self):
        self.k = 2.0

    def __call__(self, x):
        return x * self.k

class InPlace(torch.nn.Module):
    fake_ms = 0.02

    def forward(self, x):
        return x * 2

class Block(torch.nn.Module):
    def forward(self, x):
        return x * {scale}

def scale_twice(x):
    return x * 2 * {scale}

@dataclasses.dataclass
class Holder:
    inner: object

class Containers(torch.nn.Module):
    fake_ms = 0.02

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block()])
        self.chain = torch.nn.Sequential(Block())
        self.fast = torch.compile(Block(), backend="eager")
        self.fn = scale_twice
        self.part = functools.partial(scale_twice)
        self.kind = Block
        self.held = Holder(Block())
        self.items = [Inner()]
        self.alias = self.items  # one list under two names

    def forward(self, x):
        x = self.fast(self.chain(self.blocks[0](x)))  # x * S^3
        x = self.part(self.fn(x)) / 4  # x * S^2
        x = self.kind()(self.held.inner(x))  # x * S^2
        self.items.append(None)
        assert len(self.alias) == len(self.items)
        self.items.pop()
        return x
"""

SHAPE_TESTS = """
import torch
from kern.shapes import BoundFirst, Containers, Hooked, InList, InPlace, Slotted, WithMode, WithTurbo

S = {scale}

def test_in_list(kernel_bench):
    kernel_bench(InList(), torch.ones(8), reference=lambda x: x * 4 * S * S)

def test_bound_first(kernel_bench):
    kernel_bench(BoundFirst(), torch.ones(8), reference=lambda x: x * 2 * S)

def test_bound_method_of_an_object(kernel_bench):
    kernel_bench(BoundFirst().__call__, torch.ones(8), reference=lambda x: x * 2 * S)

def test_hooked(kernel_bench):
    kernel_bench(Hooked(), torch.ones(8), reference=lambda x: x * 2 * S)

def test_with_mode(kernel_bench):
    kernel_bench(WithMode(), torch.ones(8), reference=lambda x: x * 2)

def test_slotted(kernel_bench):
    kernel_bench(Slotted(), torch.ones(8), reference=lambda x: x * 2)

def test_in_place_compiled(kernel_bench):
    module = InPlace()
    module.compile(backend="eager")
    kernel_bench(module, torch.ones(8), reference=lambda x: x * 2)

def test_new_class(kernel_bench):
    from kern.fresh import Fresh
    kernel_bench(Fresh(), torch.ones(8), reference=lambda x: x * 2)

def test_containers(kernel_bench):
    kernel_bench(Containers(), torch.ones(8), reference=lambda x: x * S**7)

def test_new_method(kernel_bench):
    kernel_bench(WithMode().newer, torch.ones(8), reference=lambda x: x * 2)

def test_turbo(kernel_bench):
    kernel_bench(WithTurbo(), torch.ones(8), reference=lambda x: x * 2)

def test_local_class(kernel_bench):
    class Local:
        fake_ms = 0.02

        def __call__(self, x):
            return x * 2

    kernel_bench(Local(), torch.ones(8), reference=lambda x: x * 2)
"""


@pytest.mark.slow  # as above
@pytest.mark.usefixtures("compiled_once")
def test_objects_made_in_tests_are_rebuilt_through_lists_hooks_and_bound_methods_or_named(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """Lists, tuples, forward hooks and bound methods held before their owner all run REF's code
    (the answers differ); an enum member stays REF's member; state in __slots__ and a module
    compiled in place cannot be rebuilt and say so; a class REF lacks is new."""
    (repo / "kern" / "shapes.py").write_text(SHAPES.format(scale=1, newer="", turbo=""))
    (repo / "test_shapes.py").write_text(SHAPE_TESTS.format(scale=1.5))
    git_run(repo, "add", "-A")
    git_run(repo, "commit", "-qm", "shapes")
    newer = "\n    def newer(self, x):\n        return x * 2\n\n    newer.fake_ms = 0.02\n"
    (repo / "kern" / "shapes.py").write_text(SHAPES.format(scale=1.5, newer=newer, turbo="    TURBO = 2\n"))
    (repo / "kern" / "fresh.py").write_text(
        "class Fresh:\n    fake_ms = 0.02\n\n    def __call__(self, x):\n        return x * 2\n"
    )
    run(pytester, "test_shapes.py", "--kernelperf-against", "HEAD").assert_outcomes(passed=12)
    found = results(pytester)
    rebuilt = (
        "test_in_list",
        "test_bound_first",
        "test_bound_method_of_an_object",
        "test_hooked",
        "test_containers",
    )
    for test in rebuilt:
        against = found[test]["against"]
        assert (against["found"], found[test]["verdict"]) == ("found", "same"), (
            test,
            found[test]["comparison"],
        )
        assert against["answers"].startswith("differs"), (test, against["answers"])
    assert found["test_bound_method_of_an_object"]["against"]["where"].endswith(
        "BoundFirst.__call__ (an object made in the test)"
    )
    assert found["test_with_mode"]["verdict"] == "same"
    assert found["test_with_mode"]["against"]["answers"] == "identical"
    slotted = found["test_slotted"]["comparison"]["reason"]
    assert found["test_slotted"]["verdict"] == "incomparable" and "keeps its state in __slots__" in slotted
    in_place = found["test_in_place_compiled"]["comparison"]["reason"]
    assert "module.compile() compiles in place" in in_place, in_place
    assert found["test_new_class"]["verdict"] == "new"
    assert found["test_new_method"]["verdict"] == "new", found["test_new_method"]["comparison"]
    turbo = found["test_turbo"]["comparison"]["reason"]
    assert found["test_turbo"]["verdict"] == "incomparable" and "Mode.TURBO is not a member at HEAD" in turbo
    local = found["test_local_class"]["comparison"]["reason"]
    assert found["test_local_class"]["verdict"] == "incomparable" and "held under no name" in local


def test_pair_seconds_bounds_the_pairs_drawn_beyond_the_planned_ones(
    pytester: pytest.Pytester, repo: Path
) -> None:
    # Pairs spread about 0.4% here: five cannot rule out a slowdown beyond the threshold, so more are
    # drawn until they do; with no seconds for them, the planned five are judged, and the budget ran
    # out before a verdict: `undetermined`, with the change they could see.
    run(pytester, "--kernelperf-against", "HEAD").assert_outcomes(passed=2)
    topped_up = {name: len(r["against"]["rounds_ms"]) for name, r in results(pytester).items()}
    allowed = "--kernelperf-allow-undetermined"
    result = run(pytester, "--kernelperf-against", "HEAD", "--kernelperf-pair-seconds=0", allowed)
    result.assert_outcomes(passed=2)
    found = results(pytester)
    planned = {name: len(r["against"]["rounds_ms"]) for name, r in found.items()}
    assert planned == {"test_double": 5, "test_steady": 5}
    assert all(count > 5 for count in topped_up.values()), topped_up
    steady = found["test_steady"]["comparison"]
    assert found["test_steady"]["verdict"] == "undetermined"
    assert steady["sequential"]["stopped"] == "budget" and 0.005 < steady["sequential"]["resolution"] < 0.05
    seen = f"±{steady['sequential']['resolution']:.1%}"
    assert steady["reason"].startswith(f"{seen} after 5 pairs, its budget spent (--kernelperf-pair-seconds)")
    # The row says the word and the number; the notes under the table why, and what to do.
    assert re.search(rf"\n    steady .*  5  .* undetermined {seen} \[\d+,\d+\]", result.stdout.str())
    assert f"] {seen} after 5 pairs, its budget spent" in result.stdout.str()
    assert "] undetermined pairs: for a verdict, more pairs (--kernelperf-pair-seconds" in result.stdout.str()
    # Per test, through the marker.
    (repo / "test_ops.py").write_text(
        TESTS.replace(
            "def test_double", "import pytest\n\n@pytest.mark.kernelperf(pair_seconds=0)\ndef test_double"
        )
    )
    run(pytester, "--kernelperf-against", "HEAD", allowed).assert_outcomes(passed=2)
    marked = {name: len(r["against"]["rounds_ms"]) for name, r in results(pytester).items()}
    assert marked == {"test_double": 5, "test_steady": topped_up["test_steady"]}


def test_an_undetermined_pair_fails_the_gate_unless_allowed(pytester: pytest.Pytester, repo: Path) -> None:
    # Rounds 30% apart: no pair count within the cap can see 0.5%, so the pair is undetermined.
    (repo / "conftest.py").write_text(scripted_conftest(round_sd=0.3))
    options = ("--kernelperf-against", "HEAD", "--kernelperf-max-rounds=1", "-k", "test_double")
    failed = run(pytester, *options)
    failed.assert_outcomes(failed=1)
    assert results(pytester)["test_double"]["verdict"] == "undetermined"
    assert "fails a pair that could not see a change as small as its threshold" in failed.stdout.str()
    run(pytester, *options, "--kernelperf-allow-undetermined").assert_outcomes(passed=1)


def test_the_sequential_gate_stops_once_decided_and_says_how_many_pairs_it_drew(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """An unchanged kernel stops as soon as its pairs rule out the threshold, a +5% one as soon as
    they show it beyond; both far below the most pairs allowed (5 x 64)."""
    (repo / "kern" / "ops.py").write_text(OPS.format(double_ms=0.021))  # +5% in the work tree
    result = run(pytester, "--kernelperf-against", "HEAD")
    result.assert_outcomes(failed=1, passed=1)
    found = results(pytester)
    double, steady = found["test_double"], found["test_steady"]
    assert (double["verdict"], steady["verdict"]) == ("slower", "same")
    for judged in (double, steady):
        assert judged["comparison"]["sequential"]["stopped"] == "decided"
        assert judged["comparison"]["test"].startswith("confidence sequence")
        assert 5 <= judged["comparison"]["rounds"] == len(judged["against"]["rounds_ms"]) <= 40
    assert steady["comparison"]["sequential"]["upper"] < 1.005  # a slowdown beyond 0.5% ruled out
    assert double["comparison"]["ratio_ci"][0] > 1.005  # slower beyond the threshold, at its level
    text = result.stdout.str()
    # The Pairs column says how many each verdict drew.
    assert re.search(rf"steady .*  {steady['comparison']['rounds']}  .* same ±", text), text
    assert re.search(rf"double .*  {double['comparison']['rounds']}  .* slower \+", text), text


def test_a_kernel_at_the_line_draws_to_the_most_pairs_and_says_so(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """+0.5% exactly, the threshold: no number of pairs decides it; with at most 3 x 5 pairs it
    stops at 15, `undetermined`, and fails the gate (passes with --kernelperf-allow-undetermined)."""
    (repo / "kern" / "ops.py").write_text(OPS.format(double_ms=0.0201))
    run(pytester, "--kernelperf-against", "HEAD", "--kernelperf-max-rounds=3").assert_outcomes(
        failed=1, passed=1
    )
    double = results(pytester)["test_double"]
    assert double["verdict"] == "undetermined" and double["comparison"]["rounds"] == 15
    assert double["comparison"]["sequential"]["stopped"] == "most pairs"
    assert "at the most pairs (--kernelperf-max-rounds x the planned)" in double["comparison"]["reason"]
