"""Connect group membership on a real broker: members in separate processes join, leave and get killed.

Each member is ``python -m tests.integration.support.group_member`` (a herder stand-in that applies
assignments at once and prints each one), so a member can be SIGKILLed like a crashed worker.

Tansu quirks worked around here (docs/tansu.md): every JoinGroup is held for session.timeout.ms / 2, so
the members use session.timeout.ms=6000 and heartbeat.interval.ms=1000; static membership is not used.
The figures printed (``-s``) are seconds from the event to the settled assignment, process start-up
included for joins.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cluster
from tests.support.kafka import unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_MS = 6000
DELAY_MS = 4000
WORK = {"a": 4, "b": 2}
ALL_WORK = {("connector", c) for c in WORK} | {("task", f"{c}-{i}") for c, n in WORK.items() for i in range(n)}
REPO = Path(__file__).resolve().parents[2]


def items(line: dict[str, Any]) -> set[tuple[str, str]]:
    return {("connector", c) for c in line["connectors"]} | {("task", f"{c}-{i}") for c, i in line["tasks"]}


class Member:
    """One member process and the assignments it printed."""

    def __init__(self, bootstrap: str, group: str, name: str, log_dir: Path, released_dir: Path) -> None:
        self.url = f"http://{name}:8083/"
        self.lines: list[dict[str, Any]] = []
        self._stderr = (log_dir / f"{name}.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.support.group_member", bootstrap, group, self.url,
             json.dumps(WORK), str(SESSION_MS), str(DELAY_MS), str(released_dir)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._reader = threading.Thread(target=self._read, name=f"reader-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(json.loads(raw))

    @property
    def latest(self) -> dict[str, Any] | None:
        return self.lines[-1] if self.lines else None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        self._stderr.close()


class Group:
    def __init__(self, cluster: Cluster, log_dir: Path) -> None:
        self.cluster = cluster
        self.name = unique("connect-group")
        self.log_dir = log_dir
        self.released_dir = log_dir / "released"
        self.released_dir.mkdir()
        self.members: list[Member] = []

    def start(self, count: int) -> list[Member]:
        new = [Member(self.cluster.bootstrap, self.name, f"w{len(self.members) + i}", self.log_dir,
                      self.released_dir)
               for i in range(count)]
        self.members.extend(new)
        return new

    def live(self) -> list[Member]:
        return [m for m in self.members if m.alive()]

    def settled(self) -> dict[str, dict[str, Any]] | None:
        """Latest assignment per live member if they agree on one generation and split all the work."""
        latest = {m.url: m.latest for m in self.live()}
        if any(line is None for line in latest.values()):
            return None
        lines = {url: line for url, line in latest.items() if line is not None}
        if len({line["generation"] for line in lines.values()}) != 1:
            return None
        owned = [items(line) for line in lines.values()]
        if set().union(*owned) != ALL_WORK:
            return None
        return lines

    def wait_settled(self, timeout_s: float, message: str) -> tuple[dict[str, dict[str, Any]], float]:
        start = time.monotonic()
        lines = wait_until(self.settled, timeout_s, message)
        return lines, time.monotonic() - start

    def stop(self) -> None:
        for member in self.members:
            member.stop()


@pytest.fixture
def group(cluster_a: Cluster, tmp_path: Path) -> Iterator[Group]:
    created = Group(cluster_a, tmp_path)
    yield created
    created.stop()


def assert_disjoint_balanced_one_leader(lines: dict[str, dict[str, Any]]) -> str:
    owned = [items(line) for line in lines.values()]
    assert sum(len(o) for o in owned) == len(ALL_WORK), f"work assigned twice: {lines}"
    for kind in ("connectors", "tasks"):
        counts = [len(line[kind]) for line in lines.values()]
        assert max(counts) - min(counts) <= 1, f"{kind} not balanced: {lines}"
    leaders = [url for url, line in lines.items() if line["leader"]]
    assert len(leaders) == 1, f"leaders: {leaders}"
    assert {line["leader_url"] for line in lines.values()} == {leaders[0]}
    return leaders[0]


def test_three_members_elect_one_leader_and_split_the_work(group: Group) -> None:
    group.start(3)
    lines, elapsed = group.wait_settled(60, "three members assigned")
    assert len(lines) == 3
    assert_disjoint_balanced_one_leader(lines)
    print(f"\n[membership] 3 members, spawn -> settled assignment: {elapsed:.2f} s")


def test_a_joining_member_takes_only_its_share(group: Group) -> None:
    group.start(2)
    before, _ = group.wait_settled(60, "two members assigned")
    start = time.monotonic()
    newcomer = group.start(1)[0]
    wait_until(lambda: newcomer.latest and items(newcomer.latest) and group.settled(), 60,
               "the third member took a share")
    after = group.settled()
    assert after is not None
    elapsed = time.monotonic() - start
    assert_disjoint_balanced_one_leader(after)
    for url, line in before.items():
        # Sticky: the old members only gave work away, never swapped it between them.
        assert items(after[url]) <= items(line)
    moved = sum(len(items(line) - items(after[url])) for url, line in before.items())
    assert moved == len(items(after[newcomer.url]))
    # Revocation before assignment: whatever the newcomer got was revoked from its owner in an
    # earlier generation than the one that assigned it.
    first_with_work = next(line for line in newcomer.lines if items(line))
    for member in group.members[:2]:
        for line in member.lines:
            if line["generation"] >= first_with_work["generation"]:
                assert not (items(line) & items(first_with_work)), "work held by two members at once"
    print(f"\n[membership] join of a 3rd member -> settled (revoke round, then assign round): {elapsed:.2f} s")


def _moved(group: Group, victim: Member, how: str, timeout_s: float) -> tuple[list[dict[str, Any]], set[Any]]:
    """Stop ``victim`` (``leave``: SIGTERM, ``kill``: SIGKILL) and wait until the others own all the work;
    returns the survivors' assignments between the departure and that settled one, and the lost work."""
    before, _ = group.wait_settled(60, "three members assigned")
    lost = items(before[victim.url])
    generation = before[victim.url]["generation"]
    start = time.monotonic()
    if how == "leave":
        victim.proc.send_signal(signal.SIGTERM)
        assert victim.proc.wait(timeout=30) == 0
    else:
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
    survivors = group.live()
    lines, _ = group.wait_settled(timeout_s, f"work of the {how} member moved to the others")
    elapsed = time.monotonic() - start
    assert_disjoint_balanced_one_leader(lines)
    assert lost <= set().union(*(items(line) for line in lines.values()))
    later = [line for m in survivors for line in m.lines if line["generation"] > generation]
    between = [line for line in later if line["generation"] < lines[survivors[0].url]["generation"]]
    print(f"\n[membership] {how} of {'leader' if before[victim.url]['leader'] else 'follower'} -> work "
          f"moved: {elapsed:.2f} s (session {SESSION_MS / 1000:.0f} s, delay {DELAY_MS / 1000:.0f} s)")
    return between, lost


def test_graceful_leave_holds_the_work_for_the_delay(group: Group) -> None:
    """A clean leaver released its work: the leader holds it for scheduled.rebalance.max.delay.ms."""
    group.start(3)
    lines, _ = group.wait_settled(60, "three members assigned")
    victim = next(m for m in group.members if not lines[m.url]["leader"])
    held, lost = _moved(group, victim, "leave", timeout_s=DELAY_MS / 1000 + 30)
    # The leader kept its memory: the first rebalance without the victim held its work back.
    assert held, "released work was reassigned without scheduled.rebalance.max.delay.ms"
    assert all(not (items(line) & lost) for line in held)


@pytest.mark.parametrize("role", ["follower", "leader"])
def test_killed_member_work_moves_once_its_session_expires(group: Group, role: str) -> None:
    """A crashed member did not release its work: it moves in the first rebalance without it, with no
    scheduled.rebalance.max.delay.ms hold (Java holds it; see docs/architecture.md)."""
    group.start(3)
    lines, _ = group.wait_settled(60, "three members assigned")
    victim = next(m for m in group.members if lines[m.url]["leader"] == (role == "leader"))
    between, lost = _moved(group, victim, "kill", timeout_s=SESSION_MS / 1000 + 20)
    assert not between, f"the killed member's work {lost} was held: {between}"
