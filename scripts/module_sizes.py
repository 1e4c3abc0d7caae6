"""Fail when a module of connect_runtime/ or mirror/ is longer than 400 lines.

The developers' guide asks for small modules: one that outgrows the limit holds more than one job and
is split by job (not cut at line 400). Run by ``scripts/check``; prints each offender with its count.
"""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 400
PACKAGES = ("connect_runtime", "mirror")
#: Temporary: these two are being restructured on other branches; remove them from here at merge.
TEMPORARY_EXCEPTIONS: frozenset[str] = frozenset()


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    problems = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            count = len(path.read_text(encoding="utf-8").splitlines())
            if count > LIMIT and name not in TEMPORARY_EXCEPTIONS:
                problems.append(f"{name}: {count} lines (limit {LIMIT}): split it by job")
            elif count <= LIMIT and name in TEMPORARY_EXCEPTIONS:
                problems.append(f"{name}: {count} lines, within the limit: remove it from TEMPORARY_EXCEPTIONS "
                                f"in scripts/module_sizes.py")
    for exception in sorted(TEMPORARY_EXCEPTIONS):
        if not (root / exception).is_file():
            problems.append(f"{exception}: no such file: remove it from TEMPORARY_EXCEPTIONS in "
                            f"scripts/module_sizes.py")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
