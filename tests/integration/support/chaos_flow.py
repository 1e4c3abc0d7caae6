"""One mirrored flow under load, for the chaos tier: real ``connect-mirror-maker`` nodes, real brokers.

:class:`ChaosFlow` creates a source topic, starts N nodes serving the flow ``A->B`` (``--clusters B``),
waits for the source tasks to run (on every node, when asked), then runs a :class:`LoadGenerator`
against the source and a :class:`Checker` on the remote topic. A test starts the load, injects its
fault, calls :meth:`ChaosFlow.lifted` when the fault is over, and :meth:`ChaosFlow.finish` waits for
every acknowledged record on the target and returns the :class:`Report`.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.chaos import Checker, LoadGenerator, Report, analyse, decode
from tests.support.kafka import consume_all, create_topic, topics, unique, wait_until

CONNECTOR = "MirrorSourceConnector"
#: the source partitions and the load: 6 partitions, so three nodes each hold a task's share
PARTITIONS = 6
RATE_PER_S = 150.0
#: the driver's offset.flush.interval.ms in these tests (mm2_properties), in seconds
FLUSH_INTERVAL_S = 1.0


class ChaosFlow:
    def __init__(self, tmp_path: Path, source: str, target: str, nodes: int = 1, tasks: int = 3,
                 extra: str = "", target_for_checker: str | None = None, checker_fetch_wait_ms: int = 50) -> None:
        """``extra``: more mm2.properties lines; ``{source}`` and ``{target}`` stand for the aliases.
        ``checker_fetch_wait_ms``: the :class:`Checker`'s ``fetch.wait.max.ms``."""
        self.a, self.b = aliases("A", "B")
        self.source, self.target = source, target
        self.topic = create_topic(source, unique("chaos"), PARTITIONS)
        self.remote = f"{self.a}.{self.topic}"
        body = (f"{self.a}->{self.b}.enabled = true\ntopics = {self.topic}\ntasks.max = {tasks}\n"
                + extra.replace("{source}", self.a).replace("{target}", self.b))
        self.properties = tmp_path / "mm2.properties"
        self.properties.write_text(mm2_properties({self.a: source, self.b: target}, body), encoding="utf-8")
        self.tmp_path = tmp_path
        self.nodes = [self.node(i) for i in range(nodes)]
        self.load: LoadGenerator | None = None
        self.checker: Checker | None = None
        self.checker_bootstrap = target_for_checker or target
        self.checker_fetch_wait_ms = checker_fetch_wait_ms
        self.lifted_ms: float | None = None
        self.started = time.monotonic()

    def node(self, index: int) -> MirrorMakerProcess:
        log = self.tmp_path / f"node{index}-{int(time.monotonic() * 1000)}.log"
        return MirrorMakerProcess(self.properties, "--clusters", self.b, log=log)

    def start(self) -> ChaosFlow:
        """Start every node; wait until the source tasks run."""
        for node in self.nodes:
            node.start()
        for node in self.nodes:
            node.wait_running(1)
        self.wait_tasks()
        wait_until(lambda: self.remote in topics(self.target), 60, f"the remote topic {self.remote}")
        self.checker = Checker(self.checker_bootstrap, self.remote, PARTITIONS, self.checker_fetch_wait_ms).start()
        self.load = LoadGenerator(self.source, self.topic, PARTITIONS, RATE_PER_S).start()
        checker = self.checker
        try:
            wait_until(lambda: len(checker.seen()) == PARTITIONS, 120, "records of every partition on the target")
        except AssertionError as exc:
            exc.add_note(self.diagnose_start(checker))
            raise
        return self

    def diagnose_start(self, checker: Checker) -> str:
        """Why a partition shows nothing: the checker's positions and errors, what a fresh read of the
        target holds per partition (the node copied it and the checker is stuck, or it was never
        copied), and the node's log."""
        seen = checker.seen()
        fresh: dict[int, int] = {}
        for record in consume_all(self.checker_bootstrap, self.remote, 30):
            fresh[record.partition] = fresh.get(record.partition, 0) + 1
        lines = [f"partitions without records at the checker: {sorted(set(range(PARTITIONS)) - set(seen))}",
                 f"checker positions: {checker.positions()}; checker errors: {checker.errors[-3:]}",
                 f"records per partition on a fresh read of the target: {dict(sorted(fresh.items()))}"]
        lines += [f"{node.log}:\n{node.tail(40)}" for node in self.nodes]
        return "\n".join(lines)

    def workers(self) -> set[str]:
        return {n.url.removeprefix("http://") for n in self.nodes if n.proc and n.proc.poll() is None}

    def wait_tasks(self, timeout_s: float = 120) -> None:
        """Every source task RUNNING on a live node."""
        seen: list[object] = []

        def ready() -> bool:
            live = [n for n in self.nodes if n.proc and n.proc.poll() is None]
            states = live[0].task_states(self.a, self.b, CONNECTOR)
            workers = self.workers()
            seen[:] = [states, sorted(workers)]
            return bool(states) and all(s == "RUNNING" and w in workers for s, w in states)

        try:
            wait_until(ready, timeout_s, "source tasks running",
                       interval_s=0.5, retry_on=(httpx.HTTPError, OSError))
        except AssertionError as exc:
            exc.add_note(f"last (state, worker) per task seen by the first live node: {seen[:1]}; "
                         f"live workers: {seen[1:]}")
            raise

    def lifted(self) -> None:
        """The fault is over: records sent from now on measure the recovery."""
        self.lifted_ms = time.time() * 1000

    def finish(self, fault: str, run_after_s: float = 4.0, timeout_s: float = 120) -> Report:
        """Keep the load on a little longer, stop it, wait for every acknowledged record, report."""
        assert self.load is not None and self.checker is not None
        time.sleep(run_after_s)  # deliberate: records sent after the fault measure the recovery
        self.load.stop()
        load, checker = self.load, self.checker
        try:
            wait_until(lambda: checker.has_all(load.acked), timeout_s, "every acknowledged record on the target",
                       interval_s=0.5)
        except AssertionError as exc:
            exc.add_note(analyse(fault, load.acked, checker.snapshot(), self.lifted_ms).table())
            exc.add_note(self.diagnose(load, checker))
            for node in self.nodes:
                exc.add_note(f"{node.log}:\n{node.tail(30)}")
            raise
        finally:
            checker.stop()
        assert not load.errors, f"the source refused records: {load.errors[:3]}"
        report = analyse(fault, load.acked, checker.snapshot(), self.lifted_ms)
        print(f"\n{report.table()}\n(checker errors seen while the fault lasted: {len(checker.errors)}; "
              f"test took {time.monotonic() - self.started:.0f} s)")
        return report

    def diagnose(self, load: LoadGenerator, checker: Checker) -> str:
        """Which records are missing, when they were sent, and whether a fresh read of the target has them
        (a checker that skipped records vs records the target does not hold)."""
        seen = checker.seen()
        missing = {p: sorted(s - seen.get(p, set())) for p, s in load.acked.items()}
        missing = {p: m for p, m in missing.items() if m}
        lifted = self.lifted_ms or 0.0
        lines = []
        for partition, sequences in missing.items():
            sent = [load.sent_at_ms.get((partition, s), 0.0) - lifted for s in sequences[:10]]
            lines.append(f"partition {partition}: missing {sequences[:10]}{' ...' if len(sequences) > 10 else ''} "
                         f"sent at {[f'{t / 1000:+.1f}s' for t in sent]} relative to the fault's end")
        fresh = consume_all(self.checker_bootstrap, self.remote, 30)
        again: dict[int, set[int]] = {}
        for record in fresh:
            partition, sequence, _ = decode(record.value or b"")
            again.setdefault(partition, set()).add(sequence)
        for partition, sequences in missing.items():
            found = [s for s in sequences if s in again.get(partition, set())]
            offsets = sorted(r.offset for r in fresh if r.partition == partition)
            lines.append(f"partition {partition}: a fresh read finds {len(found)} of the {len(sequences)} missing; "
                         f"{len(offsets)} records, offsets {offsets[:1]}..{offsets[-1:]}")
        return "\n".join(lines) or "nothing missing"

    def stop(self) -> None:
        if self.load is not None:
            self.load._stop.set()
        if self.checker is not None:
            self.checker.stop()
        for node in self.nodes:
            node.stop()


def duplicate_budget(events: int, partitions: int = PARTITIONS, slack_s: float = 2.0) -> int:
    """Duplicates allowed for ``events`` task restarts: what was sent since the last offset commit.

    A task re-sends what followed its last committed offset; offsets are committed every
    ``offset.flush.interval.ms`` (1 s here), and a record reaches the target about a second after it is
    sent on this loaded machine, so each event may replay up to (flush interval + slack) of the load.
    """
    del partitions  # the rate is the total over all partitions
    return int(events * RATE_PER_S * (FLUSH_INTERVAL_S + slack_s))
