"""Which baseline entries no test of this run can produce: pure logic, no pytest, no torch.

An entry belongs to a test id within its module (`test_gelu[triton]`, `TestA::test_b`), followed by
`::<name>` for a named kernel_bench call. It is unused when no collected test has that id: the test
was deleted, renamed, or lost a parameter. A test merely deselected (`-k`, `-m`, `--deselect`) was
collected, so its entries are not unused; entries of other devices (an H200's entries on a CPU run)
never are either, since the verdict is per test id.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable


def unused_tests(stored: Iterable[str], collected: Collection[str]) -> list[str]:
    """The test ids among `stored` (entry keys of one file) whose test is not in `collected`."""
    return sorted({test for test in stored if not _belongs(test, collected)})


def _belongs(test: str, collected: Collection[str]) -> bool:
    if test in collected:
        return True
    # A named call: `<test id>::<name>`. The test id may hold `::` itself (a class, a parameter),
    # so try every split from the right.
    cut = test.rfind("::")
    while cut > 0:
        if test[:cut] in collected:
            return True
        cut = test.rfind("::", 0, cut)
    return False
