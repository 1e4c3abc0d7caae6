"""CPU time per thread of a running process, Python threads by name and librdkafka's by their own names.

Why: a process's CPU per record says *that* a configuration costs more, not *where*. py-spy sees only
Python frames (and with ``--gil`` only the thread holding the GIL), while most of a copier's CPU is in
librdkafka's threads (``rdk:main``, ``rdk:broker<N>``: one set per client), which py-spy does not see.
``/proc/<pid>/task/<tid>/stat`` has every thread's user+system time; ``py-spy dump`` names the Python
threads by their operating-system id (Python 3.11 does not name its threads for the OS).

Threads that ended between the two snapshots are not in the figures (their CPU is in the process
total only): :func:`by_thread` reports that remainder as ``(ended threads)``.

A thread's CPU says what it spent, not whether it was held back: on a machine whose cores the copier shares
with the brokers, a thread that is ready to run may wait for a core. The scheduler counts that wait per
thread (``/proc/<pid>/task/<tid>/schedstat``: time on a CPU, time runnable on a run queue, in ns);
:func:`run_queue_snapshot` reads it in the same shape as :func:`snapshot`, so :func:`by_thread` sums it per
thread the same way. What is neither is asleep: waiting for the network, a lock, a poll's timeout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")
_DUMP_THREAD = re.compile(r'^Thread (\d+) \([^)]*\): "(.*)"$', re.MULTILINE)
#: librdkafka names its threads rdk:main, rdk:broker<node id>, rdk:broker-<n> (internal), rdk:broker<N>...
_NATIVE_GROUPS = ((re.compile(r"^rdk:broker"), "rdk:broker*"),)

Snapshot = dict[int, tuple[str, float]]


def snapshot(pid: int) -> Snapshot:
    """Every live thread of ``pid``: tid -> (OS thread name, CPU seconds so far)."""
    result: Snapshot = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        result[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / _TICKS)
    return result


def run_queue_snapshot(pid: int) -> Snapshot:
    """Every live thread of ``pid``: tid -> (OS thread name, seconds so far it was ready to run but waited for
    a CPU), from the scheduler's ``schedstat`` (empty without it: a kernel built without schedstats)."""
    result: Snapshot = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            waited_ns = int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile, or no schedstat
        result[int(task.name)] = (name, waited_ns / 1e9)
    return result


def python_thread_names(pid: int) -> dict[int, str]:
    """tid -> Python thread name, from ``py-spy dump`` (empty when py-spy is missing or cannot attach)."""
    exe = shutil.which("py-spy")
    if exe is None:
        return {}
    try:
        out = subprocess.run([exe, "dump", "--pid", str(pid)], check=False, capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {int(tid): name for tid, name in _DUMP_THREAD.findall(out)}


def _group(os_name: str, python_name: str | None) -> str:
    if python_name is not None:
        return re.sub(r"-[0-9a-f]{5,}\b", "-*", python_name)  # unique suffixes (aliases, uuids) fold
    for pattern, group in _NATIVE_GROUPS:
        if pattern.match(os_name):
            return group
    return os_name


def by_thread(before: Snapshot, after: Snapshot, names: dict[int, str],
              process_cpu_s: float | None = None) -> dict[str, float]:
    """CPU seconds per thread (group) between two snapshots, largest first.

    ``process_cpu_s``: the process's CPU over the same interval; what the live threads do not account
    for is reported as ``(ended threads)``.
    """
    totals: Counter[str] = Counter()
    for tid, (os_name, cpu_s) in after.items():
        spent = cpu_s - before.get(tid, (os_name, 0.0))[1]
        if spent > 0:
            totals[_group(os_name, names.get(tid))] += spent
    if process_cpu_s is not None:
        rest = process_cpu_s - sum(totals.values())
        if rest > 0.005:
            totals["(ended threads)"] += rest
    return {name: round(seconds, 3) for name, seconds in totals.most_common()}
