"""The console scripts ``mirror`` and ``connect-mirror-maker`` (connect_runtime/cli/entry.py says why)."""

from __future__ import annotations

from connect_runtime.cli.entry import run_entry


def mirror() -> int:
    """``mirror``."""
    return run_entry("mirror.cli.main:main")


def connect_mirror_maker() -> int:
    """``connect-mirror-maker``."""
    return run_entry("mirror.cli.connect_mirror_maker:main")
