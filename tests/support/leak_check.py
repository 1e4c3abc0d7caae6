"""A pytest plugin: an integration test that runs the runtime in-process leaves nothing running behind it.

Why: a component that forgets a client, a thread or a socket on some path grows a long-running node a
little per fault (issue 32). A soak finds that after an hour, without saying which path; this check
finds it in the test that took the path, as a teardown error naming what was left.

Around every test marked ``integration`` (registered from tests/conftest.py), an autouse fixture takes
a :class:`Resources` sample after every higher-scoped fixture is set up (session brokers, TLS stunnels,
module fixtures are in the baseline, whatever test starts them) and before the test's own function
fixtures; after their teardown it samples again. The test is checked if runtime code built at least one
client through ``connect_runtime.clients.factory`` (so it ran in-process: a worker, a herder, the MM2
driver, a connector or task, a store); tests that only drive subprocesses, start their own embedded
brokers and check the nodes with ``mirror.client`` are not (:data:`STANDALONE`). Then, allowing
``SETTLE_S`` for threads that are finishing (each retry after a ``gc.collect()``):

* open factory clients per component and kind (``connect_clients_open``): no more than before, exactly;
* Python threads: none that was not there before, exactly, except the long-lived ones in
  ``LONG_LIVED_THREADS`` (process-wide helpers started on first use);
* OS threads (librdkafka's native ones included) and open file descriptors: at most
  ``OS_THREADS_TOLERANCE`` / ``FDS_TOLERANCE`` more than before (pytest's own capture files and the
  interpreter open a few over a run).

A test marked ``spark`` is checked for clients only: Spark's in-process JVM gateway (py4j threads, its
socket and pipes) lives as long as the process once the first Spark test started it.

A failure names the component of each client left open, each new thread (with the frame it waits in)
and each new descriptor's target. ``MIRROR_LEAK_CHECK=0`` turns the check off (to bisect a failure).
"""

from __future__ import annotations

import gc
import os
import re
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from connect_runtime.clients import registry

#: How long teardown waits for what is stopping (a daemon thread on its way out, a client being destroyed);
#: ``MIRROR_LEAK_SETTLE_S`` overrides it.
SETTLE_S = float(os.environ.get("MIRROR_LEAK_SETTLE_S", "10"))
OS_THREADS_TOLERANCE = 0
FDS_TOLERANCE = 2
#: Threads that live as long as the process once started, whichever test starts them first.
LONG_LIVED_THREADS = (
    re.compile(r"^librdkafka-admin-logs$"),  # polls admin clients' logs; ends once none is left (<= 1 s)
)


@dataclass
class Resources:
    """What the process holds at one moment."""

    clients: Counter[tuple[str, str]]
    threads: dict[int, str]  # ident -> name (Python threads)
    os_threads: int
    fds: dict[int, str] = field(default_factory=dict)  # fd -> what it points to


def sample() -> Resources:
    return Resources(registry.open_clients(), {t.ident or 0: t.name for t in threading.enumerate()},
                     _os_threads(), _fds())


def _os_threads() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))
    except (OSError, StopIteration, ValueError):
        return threading.active_count()


def _fds() -> dict[int, str]:
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return {}
    fds: dict[int, str] = {}
    for name in names:
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the directory listing's own fd, gone by now
            continue
    return fds


def _long_lived(name: str) -> bool:
    return any(pattern.search(name) for pattern in LONG_LIVED_THREADS)


def leaks(before: Resources, after: Resources, clients_only: bool = False) -> list[str]:
    """What ``after`` holds beyond ``before``, one line per finding; empty when nothing leaked.

    ``clients_only``: compare the factory's clients alone (a test that starts Spark in-process: its JVM
    gateway's threads, sockets and pipes live as long as the process, whichever test starts it first)."""
    found: list[str] = []
    for key, count in sorted(after.clients.items()):
        if count > before.clients.get(key, 0):
            component, kind = key
            found.append(f"{count - before.clients.get(key, 0)} {kind} client(s) built by {component} still open")
    if clients_only:
        return found
    new_threads = {ident: name for ident, name in after.threads.items()
                   if ident not in before.threads and not _long_lived(name)}
    frames = sys._current_frames()
    for ident, name in sorted(new_threads.items(), key=lambda item: item[1]):
        frame = frames.get(ident)
        where = traceback.format_stack(frame, limit=3)[-1].strip().replace("\n", " | ") if frame else "?"
        found.append(f"thread {name!r} still running, at {where}")
    if after.os_threads > before.os_threads + OS_THREADS_TOLERANCE + len(new_threads):
        found.append(f"OS threads {before.os_threads} -> {after.os_threads} (tolerance {OS_THREADS_TOLERANCE}; "
                     f"librdkafka's threads belong to clients not built through the factory?)")
    if len(after.fds) > len(before.fds) + FDS_TOLERANCE:
        new = Counter(re.sub(r"\d+", "N", target) for fd, target in after.fds.items()
                      if before.fds.get(fd) != target)
        found.append(f"file descriptors {len(before.fds)} -> {len(after.fds)} (tolerance {FDS_TOLERANCE}); "
                     f"new: {dict(new)}")
    return found


def settled_leaks(before: Resources, settle_s: float | None = None, clients_only: bool = False) -> list[str]:
    """:func:`leaks` of the current state against ``before``, retried until clean or ``settle_s``
    (default :data:`SETTLE_S`) passed."""
    deadline = time.monotonic() + (SETTLE_S if settle_s is None else settle_s)
    while True:
        gc.collect()
        found = leaks(before, sample(), clients_only)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


#: Components whose clients do not make a test an in-process runtime test: mirror.client, the standalone
#: library (Java's mirror-client) that a test uses for its own checks (translating offsets, reading
#: checkpoints) while the nodes under test run as processes; mirror.local, the embedded broker, whose
#: readiness probe is the only factory client of a test that starts its own brokers and drives the nodes
#: as processes (the chaos tier's broker freezes, restarts and network cuts). Their clients still count as
#: open clients when a runtime test is checked.
STANDALONE = ("mirror.client", "mirror.local")


def _enabled(item: pytest.Item) -> bool:
    return os.environ.get("MIRROR_LEAK_CHECK", "1") != "0" and item.get_closest_marker("integration") is not None


@pytest.fixture(autouse=True)
def _leak_check(request: pytest.FixtureRequest) -> Iterator[None]:
    """The check above, around one test (see the module docstring)."""
    if not _enabled(request.node):
        yield
        return
    gc.collect()
    before, created = sample(), registry.created_by()
    yield
    built = registry.created_by() - created
    if not any(not component.startswith(STANDALONE) for component in built):
        return  # no client built in this process by the runtime: nothing of it ran here
    found = settled_leaks(before, clients_only=request.node.get_closest_marker("spark") is not None)
    if found:
        runtime = ", ".join(f"{component} {count}" for component, count in sorted(built.items()))
        pytest.fail("the test left behind what it started (issue 32; tests/support/leak_check.py):\n  "
                    + "\n  ".join(found) + f"\n  (checked because factory clients were built here by: {runtime})",
                    pytrace=False)
