"""Java's MirrorMaker 2 and MirrorClient beside ours, for the Java interop tests (tests/kafka/test_java_interop.py).

Java's side is fetched by Maven from ``tests/kafka/mirrormaker/pom.xml`` into the Kafka tier's cache
directory (``maven_libs``: keyed by the pom's hash, under a file lock, reused when present):
connect-mirror **4.3.1** with its own kafka-clients 4.3.1, a class path separate from the 4.4.0 brokers' (the
Maven repository these tests fetch from serves no connect-mirror 4.4.0). ``MirrorClientProbe.java`` is
compiled with javac against it on first use, into the same cache.

:class:`JavaMirrorMaker` runs ``org.apache.kafka.connect.mirror.MirrorMaker <mm2.properties> [--clusters ..]``
as a subprocess with a log4j2 config of its own (INFO for Connect and MM2, WARN for the clients), its output in
a file that failing assertions quote; it stops with SIGTERM (Java's clean stop commits the source offsets) or
SIGKILL. :func:`run_probe` runs the probe and returns what Java's ``RemoteClusterUtils`` read;
:func:`run_connect_protocol_probe` runs ``ConnectProtocolProbe.java``, Java Connect's group-protocol code;
:func:`run_status_probe` runs ``StatusProbe.java``, Java's status store reading a group's status topic.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from connect_runtime.cli.children import die_with_parent
from tests.support.apache_kafka import JVM_OPTIONS, KafkaStartError, java_binary, maven_libs
from tests.support.apache_kafka import _cache_root as cache_root
from tests.support.kafka import wait_until

JAVA_DIR = Path(__file__).resolve().parents[1] / "kafka" / "mirrormaker"
POM = JAVA_DIR / "pom.xml"
PROBE_SOURCE = JAVA_DIR / "MirrorClientProbe.java"
#: Java Connect's group-protocol code on given cases (tests/kafka/test_java_connect_protocol.py).
CONNECT_PROTOCOL_PROBE_SOURCE = JAVA_DIR / "ConnectProtocolProbe.java"
#: Java's own status store reading a status topic (tests/kafka/test_java_mixed_group.py).
STATUS_PROBE_SOURCE = JAVA_DIR / "StatusProbe.java"
#: The Java MirrorMaker these tests run (the pom's ``mirrormaker.version``).
MIRRORMAKER_VERSION = "4.3.1"
#: Each Java process's heap: two cores, two brokers and one Java MirrorMaker or probe at a time.
HEAP_MB = 384

_LOG4J2 = """\
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.common.name = org.apache.kafka.common
logger.common.level = WARN
"""
_STARTED = re.compile(r"Kafka MirrorMaker started")


def mirrormaker_libs() -> Path:
    """Java MirrorMaker's jars, fetched by Maven on first use into the Kafka tier's cache."""
    return maven_libs(POM, f"java-mirrormaker-{MIRRORMAKER_VERSION}")


def probe_classes(source: Path = PROBE_SOURCE) -> Path:
    """A probe (``MirrorClientProbe`` unless told) compiled against :func:`mirrormaker_libs`, once per source
    (under a file lock)."""
    libs = mirrormaker_libs()
    digest = hashlib.sha256(source.read_bytes() + libs.name.encode()).hexdigest()[:12]
    root = cache_root()
    target = root / f"{_kebab(source.stem)}-{digest}"
    if (target / ".complete").exists():
        return target
    with (root / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".complete").exists():
            _compile(libs, target, source)
    return target


def _kebab(name: str) -> str:
    """``MirrorClientProbe`` -> ``mirror-client-probe`` (the cache directory's name)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def _compile(libs: Path, target: Path, source: Path) -> None:
    javac = shutil.which("javac")
    if javac is None:
        raise KafkaStartError(f"{source.stem} needs a JDK: apt-get install openjdk-17-jdk-headless")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    done = subprocess.run([javac, "-d", str(partial), "-cp", f"{libs}/*", str(source)],
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise KafkaStartError(f"javac failed on {source.name} (exit {done.returncode}):\n{done.stderr[-3000:]}")
    (partial / ".complete").touch()
    partial.rename(target)


def _java(main_class: str, args: Sequence[str], log_dir: Path, extra_classpath: Sequence[Path] = (),
          jvm: Sequence[str] | None = None) -> list[str]:
    """Java MirrorMaker's class path only (not the brokers'), a capped heap, a log4j2 config in ``log_dir``.

    ``jvm``: the heap and JVM options instead of the tier's (the benchmarks run it as
    ``connect-mirror-maker.sh`` does)."""
    log4j2 = log_dir / "java-mirrormaker-log4j2.properties"
    log4j2.write_text(_LOG4J2, encoding="utf-8")
    class_path = os.pathsep.join([*(str(p) for p in extra_classpath), f"{mirrormaker_libs()}/*"])
    options = [f"-Xmx{HEAP_MB}m", *JVM_OPTIONS] if jvm is None else list(jvm)
    return [java_binary(), *options, f"-Dlog4j2.configurationFile={log4j2}",
            "-cp", class_path, main_class, *args]


def run_probe(client_config: Mapping[str, str], properties: Path, aliases: Sequence[str],
              translations: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """What Java's ``RemoteClusterUtils`` reads with ``client_config`` (a MirrorClientConfig).

    ``aliases``: the clusters to ask ``replicationHops`` about; ``translations``: (remote alias, group) pairs
    for ``translateOffsets``. ``properties`` is where the config file is written.
    """
    properties.write_text("".join(f"{k}={v}\n" for k, v in client_config.items()), encoding="utf-8")
    return _probe_answer(PROBE_SOURCE, [str(properties), ",".join(aliases),
                                        *(f"{remote}:{group}" for remote, group in translations)], properties.parent)


def run_status_probe(bootstrap: str, status_topic: str, connectors: Sequence[str], work_dir: Path) -> dict[str, Any]:
    """Java's view of a group's statuses: what Java's ``KafkaStatusBackingStore`` reads from ``status_topic``
    for each connector (``StatusProbe.java`` says the shape)."""
    return _probe_answer(STATUS_PROBE_SOURCE, [bootstrap, status_topic, *connectors], work_dir)


def _probe_answer(source: Path, args: Sequence[str], work_dir: Path) -> dict[str, Any]:
    """Run the probe compiled from ``source`` with ``args``; the JSON object of its last ``{`` line."""
    command = _java(source.stem, list(args), work_dir, [probe_classes(source)])
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise AssertionError(f"{source.stem} failed ({result.returncode}):\n{result.stdout[-3000:]}"
                             f"\n{result.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def run_connect_protocol_probe(cases: Mapping[str, Any], work_dir: Path) -> dict[str, Any]:
    """What Java Connect's group-protocol code writes and reads for ``cases`` (``ConnectProtocolProbe.java``
    says the shapes); ``work_dir`` holds the cases file and the log4j2 config."""
    cases_file = work_dir / "connect-protocol-cases.json"
    cases_file.write_text(json.dumps(cases), encoding="utf-8")
    return _probe_answer(CONNECT_PROTOCOL_PROBE_SOURCE, [str(cases_file)], work_dir)


class JavaMirrorMaker:
    """One Java MirrorMaker node; a context manager that always stops (or kills) it."""

    def __init__(self, properties: Path, *flags: str, log: Path | None = None,
                 jvm: Sequence[str] | None = None) -> None:
        self.properties = properties
        self.jvm = jvm
        self.flags = flags
        self.log = log or properties.with_name(f"java-mm2-{int(time.monotonic() * 1000)}.log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    def __enter__(self) -> JavaMirrorMaker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> JavaMirrorMaker:
        command = _java("org.apache.kafka.connect.mirror.MirrorMaker", [str(self.properties), *self.flags],
                        self.log.parent, jvm=self.jvm)
        self.started_at = time.monotonic()
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=die_with_parent())
        return self

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def wait_started(self, timeout_s: float = 60.0) -> float:
        """Wait for ``Kafka MirrorMaker started``; the seconds since :meth:`start`."""
        assert self.proc is not None
        proc = self.proc

        def started() -> bool:
            if _STARTED.search(self.log_text()):
                return True
            if proc.poll() is not None:
                raise AssertionError(f"Java MirrorMaker exited ({proc.returncode}) before it started:\n{self.tail()}")
            return False

        try:
            wait_until(started, timeout_s, "Java MirrorMaker started")
        except AssertionError as exc:
            exc.add_note(f"its log ends:\n{self.tail()}")
            raise
        return time.monotonic() - self.started_at

    def errors(self) -> list[str]:
        """The ERROR lines Java logged."""
        return [line for line in self.log_text().splitlines() if "] ERROR " in line]

    def terminate(self, timeout_s: float = 60.0) -> int:
        """SIGTERM (Java's shutdown hook stops the herders, committing source offsets) and wait."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired as exc:
            self.kill()
            raise AssertionError(f"Java MirrorMaker did not exit within {timeout_s}s of SIGTERM:\n"
                                 f"{self.tail()}") from exc

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.terminate(45)
        except AssertionError:
            pass
