"""The real ``connect-mirror-maker`` as a subprocess, for end-to-end tests of the MM2 driver.

:func:`mm2_properties` writes an mm2.properties with what the test brokers need (and nothing more);
:class:`MirrorMakerProcess` starts the CLI on it, waits for the driver's ``All N herder(s) running`` log
line, reads the REST URL from its ``REST server listening on ...`` line and stops it (SIGTERM, or
SIGKILL for crash tests). Everything the driver logs goes to a file that failing assertions quote.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import httpx

from tests.support.kafka import wait_until

ROOT = Path(__file__).resolve().parents[3]
_REST_LINE = re.compile(r"REST server listening on (https?://\S+?);")
_RUNNING_LINE = re.compile(r"All (\d+) herder\(s\) running")


def aliases(*names: str) -> list[str]:
    """Cluster aliases no other test uses (MM2's internal topics are named after them)."""
    suffix = uuid.uuid4().hex[:8]
    return [f"{name}{suffix}" for name in names]


def mm2_properties(clusters: Mapping[str, str], body: str = "", *, internal_rest: bool = True,
                   defaults: Collection[str] = ()) -> str:
    """An mm2.properties for ``clusters`` (alias -> bootstrap) on the test brokers, then ``body``.

    The fixed part is only what the test brokers need: replication factor 1 (one broker per cluster),
    no ACL sync (create_acls aborts Tansu, docs/tansu.md), short group session timeouts (Tansu holds a
    join for session.timeout.ms / 2), a 1 s offset flush and short MM2 intervals so tests see results
    in seconds, and a REST listener on a free loopback port. Multi-node tests need the internal REST
    endpoints (KIP-710, off by default as in Java) and the tests drive the REST API without credentials
    (state changes are refused by default; test_rest_security.py tests that default). ``internal_rest=False``
    leaves that key out, as a user's file does (test_multinode_without_internal_rest.py). Keys named in
    ``defaults`` (``offset.flush.interval.ms``, ``emit.checkpoints.interval.seconds``, ...) are left out,
    per cluster too: the code's defaults apply, as in a user's file.
    """
    lines = [f"clusters = {', '.join(clusters)}"]
    for alias, bootstrap in clusters.items():
        lines += [f"{alias}.bootstrap.servers = {bootstrap}",
                  f"{alias}.session.timeout.ms = 6000",
                  f"{alias}.heartbeat.interval.ms = 1000",
                  f"{alias}.offset.flush.interval.ms = 1000"]
    lines += [
        "listeners = http://127.0.0.1:0",
        *(["dedicated.mode.enable.internal.rest = true"] if internal_rest else []),
        "rest.mutations.allow.unauthenticated = true",
        "replication.factor = 1",
        "offset-syncs.topic.replication.factor = 1",
        "checkpoints.topic.replication.factor = 1",
        "heartbeats.topic.replication.factor = 1",
        "config.storage.replication.factor = 1",
        "offset.storage.replication.factor = 1",
        "status.storage.replication.factor = 1",
        "sync.topic.acls.enabled = false",
        "emit.heartbeats.interval.seconds = 1",
        "emit.checkpoints.interval.seconds = 1",
        "refresh.topics.interval.seconds = 2",
        "refresh.groups.interval.seconds = 2",
        "sync.group.offsets.interval.seconds = 1",
        "sync.topic.configs.interval.seconds = 2",
    ]
    left_out = set(defaults) | {f"{alias}.{key}" for alias in clusters for key in defaults}
    kept = [line for line in lines if line.split("=")[0].strip() not in left_out]
    return "\n".join(kept) + "\n" + body


class MirrorMakerProcess:
    """One ``connect-mirror-maker`` node; a context manager that always stops (or kills) it."""

    def __init__(self, properties: Path, *flags: str, log: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.properties = properties
        self.flags = flags
        self.log = log or properties.with_name(f"mm2-{uuid.uuid4().hex[:6]}.log")
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self._url: str | None = None

    def __enter__(self) -> MirrorMakerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> MirrorMakerProcess:
        cmd = [sys.executable, "-m", "mirror.cli.connect_mirror_maker", str(self.properties), *self.flags]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                         start_new_session=True)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def _wait_for(self, pattern: re.Pattern[str], timeout_s: float, what: str) -> re.Match[str]:
        assert self.proc is not None
        proc = self.proc

        def logged() -> re.Match[str] | None:
            match = pattern.search(self.log_text())
            if match is None and proc.poll() is not None:
                raise AssertionError(f"connect-mirror-maker exited ({proc.returncode}) before {what}")
            return match

        try:
            return wait_until(logged, timeout_s, what)
        except AssertionError as exc:
            exc.add_note(f"its log ends:\n{self.tail()}")
            raise

    def wait_running(self, herders: int, timeout_s: float = 90.0) -> MirrorMakerProcess:
        """Wait for the driver's ``All N herder(s) running`` line, N = ``herders``."""
        match = self._wait_for(_RUNNING_LINE, timeout_s, "all herders running")
        assert int(match.group(1)) == herders, f"expected {herders} herders: {match.group(0)}"
        return self

    @property
    def url(self) -> str:
        if self._url is None:
            self._url = self._wait_for(_REST_LINE, 30, "the REST server").group(1)
        return self._url

    def get(self, path: str) -> Any:
        response = httpx.get(self.url + path, timeout=10)
        response.raise_for_status()
        return response.json()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, self.url + path, timeout=30, **kwargs)

    def task_states(self, source: str, target: str, connector: str) -> list[tuple[str, str]]:
        """(state, worker_id) of each task of a connector, from the node's REST API."""
        status = self.get(f"/{source}/{target}/connectors/{connector}/status")
        return [(t["state"], t["worker_id"]) for t in sorted(status["tasks"], key=lambda t: t["id"])]

    def terminate(self, timeout_s: float = 30.0, signum: int = signal.SIGTERM) -> int:
        """SIGTERM (or ``signum``) and wait; the exit code (AssertionError if it does not exit in time)."""
        assert self.proc is not None
        self.proc.send_signal(signum)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired as exc:
            self.kill()
            raise AssertionError(f"connect-mirror-maker did not exit within {timeout_s}s of SIGTERM:\n"
                                 f"{self.tail()}") from exc

    def kill(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.terminate(45)
        except AssertionError:
            pass
