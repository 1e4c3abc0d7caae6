"""Which processes a process started, from ``/proc`` alone (no psutil): for "nothing is orphaned" tests.

A process is identified by (pid, start time): once the parent exits, its children are re-parented (to
init or a subreaper) and a pid may be reused, so "is it still alive" is asked about the exact process
seen before, never about a pid alone. Linux only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    """One process as /proc showed it: its pid, parent, start time (clock ticks after boot) and command."""

    pid: int
    ppid: int
    start: int
    state: str
    command: str

    def __str__(self) -> str:
        return f"{self.pid} ({self.command[:100]})"


def _read(pid: int) -> Proc | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        cmdline = (PROC / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces or ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return Proc(pid, int(fields[1]), int(fields[19]), fields[0],
                cmdline.replace(b"\0", b" ").decode(errors="replace").strip())


def processes() -> dict[int, Proc]:
    """Every process now, by pid."""
    found = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (proc := _read(int(entry.name))) is not None:
            found[proc.pid] = proc
    return found


def descendants(pid: int) -> list[Proc]:
    """Every live process below ``pid`` (children, grandchildren...), in discovery order."""
    table = processes()
    children: dict[int, list[Proc]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc)
    found: list[Proc] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def survivors(procs: list[Proc]) -> list[Proc]:
    """Those of ``procs`` that still run (same pid and start time, not a zombie)."""
    alive = []
    for proc in procs:
        now = _read(proc.pid)
        if now is not None and now.start == proc.start and now.state != "Z":
            alive.append(now)
    return alive
