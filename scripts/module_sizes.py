"""Warn about a module of connect_runtime/ or mirror/ longer than 800 lines; never fail.

A module holds one concept, whatever its length (the concepts are Kafka's: WorkerSourceTask,
DistributedHerder, KafkaBasedLog, OffsetSyncStore...). Past 800 lines it is worth a look: does it still
hold one concept, or has a second one grown inside it? The answer may be yes; a module is never cut to
a size. Run by ``scripts/check``; prints each long module with its count.
"""

from __future__ import annotations

import sys
from pathlib import Path

WARN_ABOVE = 800
PACKAGES = ("connect_runtime", "mirror")


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            count = len(path.read_text(encoding="utf-8").splitlines())
            if count > WARN_ABOVE:
                print(f"warning: {path.relative_to(root).as_posix()}: {count} lines: does it still hold one "
                      f"concept?", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
