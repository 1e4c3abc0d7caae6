"""The native copier (bench/native_copier.c): a copy with no interpreter, built here on first use.

The limit of any copier built on the client the product uses: librdkafka's batched consume and
``rd_kafka_producev``, in C, against the very ``librdkafka`` shared library that confluent-kafka's wheel
ships (found in the loaded process, :func:`librdkafka_path`), with the product's client settings. Those
settings are written here from the same functions the pipe and the task use
(``bench.pipe.producer_config``: ``task_producer_config`` plus failures-only delivery reports;
``bench.pipe.consumer_config``: ``copier_consumer_config``), so they have one source of truth.

It is built with the system's C compiler (``gcc``, or ``$CC``) into
``~/.cache/pymirrormaker/native-copier-<hash>/`` (the hash covers the source and the library, so a change
of either builds again), and linked to the library by its path with an rpath: no header and no other
copy of librdkafka is needed (the C file declares the few functions it calls, and says why).

Usage (normally started by bench/throughput.py, mode ``native``)::

    python bench/native_copier.py SOURCE TARGET TOPIC TARGET_TOPIC PARTITIONS RECORDS [--batch N]
    python bench/native_copier.py --dump     # the effective producer and consumer configs
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SOURCE = Path(__file__).with_name("native_copier.c")
#: Messages per ``rd_kafka_consume_batch_queue`` call: the pipe's ``consume`` batch.
BATCH = 10000


def librdkafka_path() -> Path:
    """The librdkafka shared library confluent-kafka loaded into this process (the wheel's own copy)."""
    import confluent_kafka.cimpl  # noqa: F401  (loads the library)

    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if "librdkafka" in Path(path).name:
            return Path(path)
    raise SystemExit("native copier: confluent-kafka loaded no librdkafka shared library")


def cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get("MIRROR_KAFKA_CACHE") or root / "pymirrormaker")


def binary() -> Path:
    """The built copier; compiled on first use (under a file lock), reused while source and library match."""
    library = librdkafka_path()
    digest = hashlib.sha256(SOURCE.read_bytes() + str(library).encode()).hexdigest()[:12]
    target = cache_dir() / f"native-copier-{digest}" / "native_copier"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            compile_copier(library, target)
    return target


def compile_copier(library: Path, target: Path) -> None:
    compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        raise SystemExit("native copier: no C compiler (install gcc, or set $CC)")
    partial = target.with_name(target.name + ".partial")
    done = subprocess.run([compiler, "-O2", "-Wall", "-Wextra", "-o", str(partial), str(SOURCE), str(library),
                           f"-Wl,-rpath,{library.parent}"], capture_output=True, text=True, timeout=300,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"native copier: {compiler} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    partial.rename(target)


def librdkafka_lines(config: Mapping[str, Any]) -> str:
    """A confluent-kafka config as librdkafka's key=value lines: Python-only entries (callbacks) dropped,
    booleans as librdkafka spells them."""
    lines = []
    for key, value in config.items():
        if value is None or callable(value) or key in ("on_delivery", "error_cb", "logger", "stats_cb"):
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if "\n" in text or "\n" in key:
            raise SystemExit(f"native copier: config {key!r} holds a line break")
        lines.append(f"{key}={text}\n")
    return "".join(lines)


def write_configs(workdir: Path, source: str, target: str, name: str) -> tuple[Path, Path]:
    """The producer and consumer config files of one run: the pipe's, i.e. the task's."""
    from bench.pipe import consumer_config, producer_config

    producer = workdir / f"{name}-producer.conf"
    consumer = workdir / f"{name}-consumer.conf"
    producer.write_text(librdkafka_lines(producer_config(target, None)))
    consumer.write_text(librdkafka_lines(consumer_config(source)))
    return producer, consumer


def command(workdir: Path, source: str, target: str, topic: str, target_topic: str, partitions: int,
            records: int, batch: int = BATCH) -> list[str]:
    """The command line of one copy (the configs written into ``workdir``)."""
    producer, consumer = write_configs(workdir, source, target, target_topic)
    return [str(binary()), str(producer), str(consumer), topic, target_topic, str(partitions), str(records),
            str(batch)]


def effective_configs(workdir: Path, source: str = "localhost:9092",
                      target: str = "localhost:9092") -> dict[str, dict[str, str]]:
    """Every key of the producer's and the consumer's effective librdkafka config (the library's
    defaults under the task's settings), as the shipped library reports it (``rd_kafka_conf_dump``)."""
    producer, consumer = write_configs(workdir, source, target, "dump")
    configs: dict[str, dict[str, str]] = {}
    for kind, path in (("producer", producer), ("consumer", consumer)):
        done = subprocess.run([str(binary()), "--dump", kind, str(path)], capture_output=True, text=True,
                              timeout=60, check=False)
        if done.returncode != 0:
            raise SystemExit(f"native copier --dump {kind} failed: {done.stderr.strip()[-2000:]}")
        config: dict[str, str] = {}
        for line in done.stdout.splitlines():
            key, _, value = line.partition("=")
            # after "# topic-level": "inherit" (e.g. compression.codec) means the client-wide value
            if not line.startswith("#") and (value != "inherit" or key not in config):
                config[key] = value
        configs[kind] = config
    return configs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", action="store_true", help="print the effective producer and consumer configs")
    for name in ("source", "target", "topic", "target_topic"):
        parser.add_argument(name, nargs="?")
    parser.add_argument("partitions", type=int, nargs="?")
    parser.add_argument("records", type=int, nargs="?")
    parser.add_argument("--batch", type=int, default=BATCH)
    args = parser.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="native-copier-") as tmp:
        if args.dump:
            for kind, config in effective_configs(Path(tmp)).items():
                print(f"# {kind}")
                print("\n".join(f"{k}={v}" for k, v in sorted(config.items())))
            return 0
        if args.records is None:
            parser.error("SOURCE TARGET TOPIC TARGET_TOPIC PARTITIONS RECORDS, or --dump")
        return subprocess.run(command(Path(tmp), args.source, args.target, args.topic, args.target_topic,
                                      args.partitions, args.records, args.batch), check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
