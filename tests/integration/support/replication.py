"""Test helpers: an A->B replication subprocess, an mm2.properties for it, and running ``mirror`` commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def write_properties(path: Path, src: str, tgt: str, src_bootstrap: str, tgt_bootstrap: str,
                     topics: str, extra: str = "") -> Path:
    path.write_text(
        f"clusters = {src}, {tgt}\n"
        f"{src}.bootstrap.servers = {src_bootstrap}\n"
        f"{tgt}.bootstrap.servers = {tgt_bootstrap}\n"
        f"{src}->{tgt}.enabled = true\n"
        f"topics = {topics}\n"
        "emit.heartbeats.interval.seconds = 1\n"
        "emit.checkpoints.interval.seconds = 1\n"
        "refresh.groups.interval.seconds = 5\n"
        "offset.lag.max = 10\n"
        "sync.topic.acls.enabled = false\n"  # create_acls aborts Tansu (docs/tansu.md)
        f"{tgt}.offset.flush.interval.ms = 1000\n"
        "replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\n"
        "heartbeats.topic.replication.factor = 1\n"
        "config.storage.replication.factor = 1\n"
        "offset.storage.replication.factor = 1\n"
        "status.storage.replication.factor = 1\n" + extra)
    return path


@contextmanager
def mirror_maker(properties: Path, *flags: str) -> Iterator[subprocess.Popen[str]]:
    """The real ``connect-mirror-maker`` as a subprocess (every flow of the file, so that the reverse
    heartbeat-only herder feeds the heartbeats that the forward flow replicates), stopped at the end."""
    if "--rest-port" not in flags:
        flags = (*flags, "--rest-port", "0")  # never the default 8083: other tests use the machine too
    cmd = [sys.executable, "-m", "mirror.cli.connect_mirror_maker", str(properties), *flags]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        yield proc
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[str]) -> None:
    try:
        os.kill(proc.pid, signal.SIGCONT)  # a stopped process cannot handle SIGTERM
        proc.terminate()
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    except ProcessLookupError:
        pass


@contextmanager
def replication(src: str, tgt: str, src_bootstrap: str, tgt_bootstrap: str, topics: str,
                groups: str | None = None) -> Iterator[subprocess.Popen[str]]:
    """The stand-in replication process (tests/integration/support/replicate.py), stopped at the end."""
    cmd = [sys.executable, "-m", "tests.integration.support.replicate", "--source", src, "--target", tgt,
           "--source-bootstrap", src_bootstrap, "--target-bootstrap", tgt_bootstrap, "--topics", topics]
    if groups:
        cmd += ["--groups", groups]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "READY", f"replication did not start (exit {proc.poll()})"
        yield proc
    finally:
        _stop(proc)


def mirror(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the real ``mirror`` CLI as a subprocess."""
    return subprocess.run([sys.executable, "-m", "mirror.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout_s, check=False)


def status(properties: Path, tgt: str, *flags: str) -> tuple[int, dict[str, Any]]:
    """``mirror status --json``: exit code and the parsed report."""
    result = mirror("status", str(properties), "--clusters", tgt, "--json", *flags)
    assert result.returncode in (0, 1, 2), result.stderr[-2000:]
    return result.returncode, json.loads(result.stdout)
