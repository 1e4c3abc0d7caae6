"""Apache Kafka for tests: a pinned Kafka fetched by Maven, and single-node KRaft brokers on loopback.

:func:`kafka_libs` runs ``mvn dependency:copy-dependencies`` on ``tests/kafka/pom.xml`` once into a cache
directory keyed by the pom's hash (``$MIRROR_KAFKA_CACHE``, default ``~/.cache/pymirrormaker``), under a
file lock so pytest-xdist workers do not race; later runs reuse it. ``$MIRROR_KAFKA_LIBS`` names a
directory of jars to use instead (no fetch).

:class:`KafkaBroker` formats a data directory (``kafka.tools.StorageTool format``, SCRAM users added at
format time) and runs ``kafka.Kafka`` in combined broker+controller mode with a capped heap. Listeners are
picked by name from :data:`LISTENERS` (PLAINTEXT is always there: the controller and inter-broker traffic
use it, as ``User:ANONYMOUS``, a super user when the authorizer is on). :meth:`KafkaBroker.client` gives
the Java client keys a user would write in mm2.properties for a listener, mechanism and user;
:meth:`KafkaBroker.librdkafka` the same for the test's own confluent-kafka clients.

Every failure to fetch or start is a :class:`KafkaStartError` (a :class:`BrokerStartError`): the one
infrastructure failure the tests may rerun (tests/conftest.py).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient

from connect_runtime.cli.children import die_with_parent
from connect_runtime.clients.factory import translate
from mirror.local.broker import BrokerStartError, free_port
from tests.support.tls import TRUST_PASSWORD, Pki

KAFKA_VERSION = "4.4.0"
POM = Path(__file__).resolve().parents[1] / "kafka" / "pom.xml"

#: JVM options of every broker and tool: a capped heap and a quick start on a small machine.
JVM_OPTIONS = ("-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:+UseCompressedOops",
               "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true")
#: The JVM options Kafka's own scripts give a broker, a Connect worker or MirrorMaker
#: (``KAFKA_JVM_PERFORMANCE_OPTS`` of ``kafka-run-class.sh``): the benchmarks run Kafka and Java's MirrorMaker
#: as shipped (G1, the C2 compiler), not the tier's quick-start options (serial GC, C1 only).
SHIPPED_JVM_OPTIONS = ("-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                       "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
                       "-Djava.net.preferIPv4Stack=true")

#: Listener name -> security protocol. MTLS is an SSL listener that requires a client certificate.
LISTENERS = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "MTLS": "SSL",
             "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL"}
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: SASL users (PLAIN and SCRAM, and any OAUTHBEARER subject). ``admin`` is a super user.
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}

#: Broker defaults that make a one-node test cluster quick: one replica, few internal partitions, no
#: start-up delays, retention checked every second (the loss-by-retention test waits for it).
BASE_CONFIG = {
    "process.roles": "broker,controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT", "num.partitions": "1", "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5", "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
    "log.initial.task.delay.ms": "0", "log.retention.check.interval.ms": "1000",
    "log.segment.delete.delay.ms": "0", "num.network.threads": "2", "num.io.threads": "4",
    "background.threads": "2", "log.cleaner.threads": "1", "log.cleaner.backoff.ms": "1000",
    # a node killed with -9 comes back once its previous registration's session has expired (default 9 s)
    "broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "1000",
}

_LOG4J2 = """\
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
"""
#: Appended with ``log_requests``: every completed request, one JSON line each (client id, API, request).
_REQUEST_LOG = """\
logger.requests.name = kafka.request.logger
logger.requests.level = DEBUG
"""
_STARTED = "Kafka Server started"
#: A start takes ~5 s on an idle 2-core machine; this bound is for one shared by many test processes (a
#: load average of 70 made starts pass 60 s), so a slow start is not mistaken for a broken one.
START_TIMEOUT_S = 150.0


class KafkaStartError(BrokerStartError):
    """Apache Kafka could not be fetched, or a broker (or tool) did not start: an infrastructure failure."""


def listener_port() -> int:
    """A free loopback port below the kernel's ephemeral range, so no outgoing connection takes it
    between this choice and the broker's bind (nor while the broker is down for a restart)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return free_port()
    for _ in range(50):
        port = random.randrange(10_000, max(10_001, low))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    return free_port()


def java_binary() -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on the path."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise KafkaStartError("Apache Kafka tests need Java 17+: apt-get install openjdk-17-jre-headless")
    return candidate


def _cache_root() -> Path:
    env = os.environ.get("MIRROR_KAFKA_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pymirrormaker"


def kafka_libs() -> Path:
    """The directory of Kafka's jars, fetched by Maven on first use (see the module docstring)."""
    override = os.environ.get("MIRROR_KAFKA_LIBS")
    if override:
        return Path(override)
    return maven_libs(POM, f"kafka-{KAFKA_VERSION}")


def maven_libs(pom: Path, label: str) -> Path:
    """The jars ``pom``'s dependencies resolve to, copied once into ``<cache>/<label>-<pom hash>``.

    Another tier with jars of its own (e.g. Java's MirrorMaker) passes its own pom and label. The first
    process fetches under a file lock; the others wait for it, then reuse the directory. A failed fetch
    is a :class:`KafkaStartError` with Maven's last lines.
    """
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:12]
    root = _cache_root()
    target = root / f"{label}-{digest}"
    if (target / ".complete").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with (root / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".complete").exists():
            _fetch(pom, target)
    return target


def _fetch(pom: Path, target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaStartError("fetching Apache Kafka needs Maven: apt-get install maven")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    cmd = [mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(pom), "dependency:copy-dependencies",
           f"-DoutputDirectory={partial}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired as exc:
        raise KafkaStartError(f"mvn did not fetch the dependencies of {pom} within 900 s") from exc
    if done.returncode != 0 or not any(partial.glob("*.jar")):
        tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
        raise KafkaStartError(f"mvn could not fetch the dependencies of {pom} (exit {done.returncode}):\n"
                              + "\n".join(tail))
    (partial / ".complete").touch()
    partial.rename(target)


def classpath(*extra: Path) -> str:
    """A class path: ``extra`` entries first (jars, class directories, or directories of jars, which get
    ``/*``), then Kafka's jars (fetched if needed)."""
    entries = [f"{p}/*" if p.is_dir() and any(p.glob("*.jar")) else str(p) for p in extra]
    return os.pathsep.join([*entries, f"{kafka_libs()}/*"])


def java_command(main_class: str, args: Sequence[str], *, heap_mb: int = 384, log4j2: Path | None = None,
                 extra_classpath: Sequence[Path] = (), jvm_options: Sequence[str] = (),
                 base_options: Sequence[str] = JVM_OPTIONS) -> list[str]:
    """The command line that runs ``main_class`` on Kafka's class path with the tier's JVM options
    (``base_options``: :data:`SHIPPED_JVM_OPTIONS` for a broker as Kafka's scripts start it)."""
    cmd = [java_binary(), f"-Xmx{heap_mb}m", *base_options, *jvm_options]
    if log4j2 is not None:
        cmd.append(f"-Dlog4j2.configurationFile={log4j2}")
    return [*cmd, "-cp", classpath(*extra_classpath), main_class, *args]


def write_log4j2(path: Path, text: str = _LOG4J2) -> Path:
    """A log4j2 properties file (console at WARN, plus Kafka's "started" line)."""
    path.write_text(text)
    return path


def jaas(mechanism: str, user: str, password: str | None = None) -> str:
    """The Java ``sasl.jaas.config`` a client of ``user`` writes for ``mechanism`` (OAUTHBEARER: Kafka's
    unsecured tokens, the subject being ``user``)."""
    password = USERS.get(user, "") if password is None else password
    if mechanism == "PLAIN":
        return f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" ' \
               f'password="{password}";'
    if mechanism.startswith("SCRAM-"):
        return f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" ' \
               f'password="{password}";'
    if mechanism == "OAUTHBEARER":
        return ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                f'unsecuredLoginStringClaim_sub="{user}";')
    raise ValueError(f"unknown SASL mechanism {mechanism}")


@dataclass
class KafkaBroker:
    """One Apache Kafka KRaft node (broker and controller): a whole single-node cluster on loopback.

    ``listeners`` are names from :data:`LISTENERS` besides PLAINTEXT; SSL ones need ``pki``.
    ``authorizer`` turns on the StandardAuthorizer with ``super_users``. ``config`` adds or overrides
    broker properties. :meth:`stop` / :meth:`kill` keep the data, so :meth:`start` again is a restart
    (on the same ports). The JVM dies with the thread that started it.
    """

    name: str
    work_dir: Path
    listeners: Sequence[str] = ()
    pki: Pki | None = None
    authorizer: bool = False
    super_users: Sequence[str] = ("User:ANONYMOUS", "User:admin")
    config: Mapping[str, str] = field(default_factory=dict)
    heap_mb: int = 384
    #: The broker JVM's options besides the heap (the benchmarks pass :data:`SHIPPED_JVM_OPTIONS`).
    jvm_options: Sequence[str] = JVM_OPTIONS
    #: Log every completed request to ``kafka.log`` (bench/idle_load.py counts them by client and API).
    log_requests: bool = False
    ports: dict[str, int] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    start_seconds: float = 0.0
    format_seconds: float = 0.0

    def __post_init__(self) -> None:
        self.listeners = ("PLAINTEXT", *(n for n in self.listeners if n != "PLAINTEXT"))
        unknown = [n for n in self.listeners if n not in LISTENERS]
        if unknown:
            raise ValueError(f"unknown listeners {unknown}; known: {sorted(LISTENERS)}")
        if self.pki is None and any("SSL" in LISTENERS[n] for n in self.listeners):
            raise ValueError("an SSL listener needs a pki")
        self.work_dir.mkdir(parents=True, exist_ok=True)

    # --- addresses and client configs

    @property
    def bootstrap_servers(self) -> str:
        """The PLAINTEXT listener (no authentication; a super user when the authorizer is on)."""
        return self.bootstrap("PLAINTEXT")

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        if listener not in self.ports:
            raise KeyError(f"broker {self.name} has no {listener} listener (it has {list(self.listeners)})")
        return f"127.0.0.1:{self.ports[listener]}"

    def client(self, listener: str = "PLAINTEXT", mechanism: str | None = None, user: str = "admin",
               password: str | None = None, trust: str = "JKS", key: str = "PKCS12") -> dict[str, str]:
        """Java client keys (as in mm2.properties) that reach ``listener`` as ``user``."""
        config = {"bootstrap.servers": self.bootstrap(listener)}
        protocol = LISTENERS[listener]
        if protocol != "PLAINTEXT":
            config["security.protocol"] = protocol
        if "SSL" in protocol:
            assert self.pki is not None
            config.update(self.pki.java_truststore(trust))
            if listener == "MTLS":
                config.update(self.pki.java_keystore(key))
        if protocol.startswith("SASL"):
            mechanism = mechanism or "PLAIN"
            config.update({"sasl.mechanism": mechanism, "sasl.jaas.config": jaas(mechanism, user, password)})
        return config

    def librdkafka(self, listener: str = "PLAINTEXT", mechanism: str | None = None, user: str = "admin",
                   role: str = "admin") -> dict[str, object]:
        """A confluent-kafka config for the test's own clients (the product's translation of :meth:`client`)."""
        return dict(translate(self.client(listener, mechanism, user), role))

    def admin(self, listener: str = "PLAINTEXT", **kwargs: str) -> AdminClient:
        return AdminClient({**self.librdkafka(listener, **kwargs), "allow.auto.create.topics": False})

    # --- lifecycle

    @property
    def data_dir(self) -> Path:
        return self.work_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.work_dir / "kafka.log"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self, timeout_s: float = START_TIMEOUT_S) -> KafkaBroker:
        """Format (first start only) and start the node; returns once it serves clients.

        A first start whose port was taken meanwhile (another process bound it between the choice and
        the JVM's bind) starts again on other ports, at most twice; a restart keeps its ports."""
        first = not self.ports
        for attempt in range(3):
            try:
                return self._start_once(timeout_s)
            except KafkaStartError as exc:
                if not first or attempt == 2 or "Address already in use" not in str(exc):
                    raise
                self.ports = {}
                shutil.rmtree(self.data_dir, ignore_errors=True)
        raise AssertionError("unreachable")

    def _start_once(self, timeout_s: float) -> KafkaBroker:
        started = time.monotonic()
        if not self.ports:
            self.ports = {name: listener_port() for name in (*self.listeners, "CONTROLLER")}
        props = self._write_properties()
        log4j2 = write_log4j2(self.work_dir / "log4j2.properties",
                              _LOG4J2 + (_REQUEST_LOG if self.log_requests else ""))
        if not (self.data_dir / "meta.properties").exists():
            self._format(props, log4j2)
        self.format_seconds = time.monotonic() - started
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                java_command("kafka.Kafka", [str(props)], heap_mb=self.heap_mb, log4j2=log4j2,
                             base_options=self.jvm_options),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent())
        self._wait_started(offset, timeout_s)
        self.start_seconds = time.monotonic() - started
        return self

    def _format(self, props: Path, log4j2: Path) -> None:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        # (one id in 64 starts with "-": as a separate argument it would read as an option)
        args = ["format", f"--cluster-id={cluster_id}", "-c", str(props), "--ignore-formatted"]
        if any(LISTENERS[n].startswith("SASL") for n in self.listeners):
            for user, password in USERS.items():
                for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                    args += ["--add-scram", f"{mech}=[name={user},password={password}]"]
        cmd = java_command("kafka.tools.StorageTool", args, heap_mb=128, log4j2=log4j2)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise KafkaStartError(f"kafka-storage format failed for broker {self.name}: "
                                  f"{(done.stdout + done.stderr).strip()[-2000:]}")

    def _wait_started(self, offset: int, timeout_s: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise KafkaStartError(f"Kafka broker {self.name} exited with {self.process.returncode}:\n"
                                      + self.log_text()[-3000:])
            with self.log_path.open("rb") as log:
                log.seek(offset)
                if _STARTED.encode() in log.read():
                    return
            time.sleep(0.1)
        self.kill()
        raise KafkaStartError(f"Kafka broker {self.name} did not start within {timeout_s}s:\n"
                              + self.log_text()[-3000:])

    def run_tool(self, main_class: str, *args: str, timeout_s: float = 120.0) -> str:
        """Run one of Kafka's command-line tools (e.g. ``org.apache.kafka.tools.ConfigCommand``) against
        this broker's PLAINTEXT listener (``--bootstrap-server`` added); its output. A failure is an
        AssertionError with the tool's output (the test asked for something the broker refused)."""
        log4j2 = write_log4j2(self.work_dir / "log4j2.properties")
        cmd = java_command(main_class, ["--bootstrap-server", self.bootstrap_servers, *args], heap_mb=128,
                           log4j2=log4j2)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{main_class} {' '.join(args)} failed ({done.returncode}):\n{output}"
        return output

    def stop(self, timeout_s: float = 30.0) -> None:
        """A clean shutdown (SIGTERM); SIGKILL if it takes longer than ``timeout_s``."""
        self._signal(signal.SIGTERM, timeout_s)

    def kill(self) -> None:
        """``kill -9``: the node's data stays for a restart (which recovers the log)."""
        self._signal(signal.SIGKILL, 30.0)

    def restart(self, hard: bool = False, timeout_s: float = START_TIMEOUT_S) -> KafkaBroker:
        """Stop (or kill) and start again on the same ports with the same data."""
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start(timeout_s)

    def _signal(self, sig: int, timeout_s: float) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # --- configuration

    def _write_properties(self) -> Path:
        props: dict[str, str] = dict(BASE_CONFIG)
        names = [*self.listeners, "CONTROLLER"]
        props.update({
            "controller.quorum.voters": f"1@127.0.0.1:{self.ports['CONTROLLER']}",
            "listeners": ",".join(f"{n}://127.0.0.1:{self.ports[n]}" for n in names),
            "advertised.listeners": ",".join(f"{n}://127.0.0.1:{self.ports[n]}" for n in self.listeners),
            "listener.security.protocol.map": ",".join(f"{n}:{LISTENERS.get(n, 'PLAINTEXT')}" for n in names),
            "log.dirs": str(self.data_dir),
        })
        if any("SSL" in LISTENERS[n] for n in self.listeners):
            props.update(self._ssl_config())
        sasl = [n for n in self.listeners if LISTENERS[n].startswith("SASL")]
        if sasl:
            props["sasl.enabled.mechanisms"] = ",".join(SASL_MECHANISMS)
            plain_users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
            for name in sasl:
                prefix = f"listener.name.{name.lower()}"
                props[f"{prefix}.plain.sasl.jaas.config"] = (
                    f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};")
                for mech in ("scram-sha-256", "scram-sha-512"):
                    props[f"{prefix}.{mech}.sasl.jaas.config"] = (
                        "org.apache.kafka.common.security.scram.ScramLoginModule required;")
                props[f"{prefix}.oauthbearer.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                    'unsecuredLoginStringClaim_sub="admin";')
        if self.authorizer:
            props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
            props["super.users"] = ";".join(self.super_users)
        props.update(self.config)
        path = self.work_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def _ssl_config(self) -> dict[str, str]:
        assert self.pki is not None
        server_pem = self.work_dir / "server-keystore.pem"
        server_pem.write_bytes(self.pki.server_key_pem.read_bytes() + self.pki.server_chain_pem.read_bytes())
        out: dict[str, str] = {}
        for name in self.listeners:
            if "SSL" not in LISTENERS[name]:
                continue
            prefix = f"listener.name.{name.lower()}"
            out.update({f"{prefix}.ssl.keystore.type": "PEM", f"{prefix}.ssl.keystore.location": str(server_pem),
                        f"{prefix}.ssl.truststore.type": "JKS",
                        f"{prefix}.ssl.truststore.location": str(self.pki.truststore_jks),
                        f"{prefix}.ssl.truststore.password": TRUST_PASSWORD,
                        f"{prefix}.ssl.client.auth": "required" if name == "MTLS" else "none"})
        return out

