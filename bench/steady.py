"""A replication under steady load, shared by the latency and memory benchmarks.

Fresh embedded clusters A and B; an 8-partition topic on A; our replication A -> B (tasks.max=1) started
and warmed up (one record per partition copied, so the task runs and the remote topic exists); then
bench/load.py produces to A at a fixed rate in its own process while the caller observes B or the
replication process.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

from confluent_kafka import Producer

from bench import replication
from bench.common import EndOffsets, create_topic, local_brokers, python_child, stop_child, unique

PARTITIONS = 8


@dataclass
class Steady:
    source: str
    target: str
    topic: str
    remote_topic: str
    replication: replication.Replication
    workdir: Path

    def start_load(self, rate: float, seconds: float, value_bytes: int = 100,
                   linger_ms: int | None = None) -> Popen[bytes]:
        """bench/load.py at ``rate`` records/s for ``seconds``, in its own process (``linger_ms``: the
        generator's batching, load.py's default if None)."""
        return python_child([str(Path(__file__).with_name("load.py")), self.source, self.topic, str(PARTITIONS),
                             str(rate), str(seconds), "--value-bytes", str(value_bytes),
                             *(["--linger-ms", str(linger_ms)] if linger_ms is not None else [])],
                            self.workdir / "load.log")

    def load_report(self) -> str:
        """load.py's summary line (``produced N records in S s, F failed``), else its whole log.

        The log also holds librdkafka's own lines (e.g. a broker closing an idle connection), so the
        summary is not necessarily the first line.
        """
        text = (self.workdir / "load.log").read_text(errors="replace").strip()
        summary = [line for line in text.splitlines() if line.startswith("produced ")]
        return summary[-1] if summary else text


@contextmanager
def steady_replication(extra: dict[str, str] | None = None, warmup_timeout_s: float = 120.0,
                       code: Path | None = None, env: Mapping[str, str] | None = None) -> Iterator[Steady]:
    """``code``: run the replication on another version of the packages (``common.python_child``).

    ``env``: extra environment variables of the replication process only (not of the load generator),
    e.g. ``MALLOC_ARENA_MAX`` or bench/memtrace's switches.
    """
    with tempfile.TemporaryDirectory(prefix="bench-steady-") as tmp, \
            local_brokers(("bench-a", "bench-b")) as (source, target):
        workdir = Path(tmp)
        topic = unique("bench-steady")
        create_topic(source, topic, PARTITIONS)
        producer = Producer({"bootstrap.servers": source, "linger.ms": 0})
        for p in range(PARTITIONS):
            producer.produce(topic, value=b"warm-up", partition=p)
        producer.flush(30)
        with _environment(env or {}):
            repl = replication.start(workdir, source, target, topic=topic, tasks=1, source_alias="A",
                                     extra=extra, code=code)
        remote = f"A.{topic}"
        try:
            ends = EndOffsets(target, remote, PARTITIONS)
            deadline = time.monotonic() + warmup_timeout_s
            while not (ends.any_written() and ends.total() >= PARTITIONS):
                if not repl.alive() or time.monotonic() > deadline:
                    raise SystemExit(f"replication did not warm up:\n{repl.tail()}")
                time.sleep(0.2)
            ends.close()
            yield Steady(source, target, topic, remote, repl, workdir)
        finally:
            repl.stop()


@contextmanager
def _environment(overrides: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``overrides`` while starting a child (python_child passes os.environ on)."""
    saved = {key: os.environ.get(key) for key in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def stop_load(load: Popen[bytes]) -> None:
    stop_child(load, 10)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
