"""A local S3 server (moto's ``moto_server``, PyPI ``moto[server]``) for brokers with persistent storage.

Tansu's in-memory storage loses everything on restart; its ``s3://`` storage keeps topics, data and
group offsets across restarts (docs/tansu.md), so a broker restart can be tested only on S3. The server
runs on a free loopback port for one test; :meth:`MotoS3.broker_env` is what Tansu needs to reach it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import httpx

from mirror.local.broker import free_port
from tests.support.kafka import wait_until


class MotoS3:
    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def available() -> bool:
        return shutil.which("moto_server") is not None

    def start(self, bucket: str = "tansu") -> MotoS3:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with (self.log_dir / "moto.log").open("wb") as out:
            self.proc = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(self.port)], stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

        def bucket_created() -> bool:
            return httpx.put(f"{self.endpoint}/{bucket}", timeout=5).status_code == 200

        wait_until(bucket_created, 30, "the local S3 server", retry_on=(httpx.HTTPError,))
        return self

    def broker_env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT": self.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1"}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def require_moto() -> str | None:
    """Why the S3 test cannot run here (None if it can); CI (MIRROR_REQUIRE_BROKERS=1) must have it."""
    if MotoS3.available():
        return None
    reason = "moto_server not installed (pip install 'moto[server]')"
    if os.environ.get("MIRROR_REQUIRE_BROKERS") == "1":
        raise AssertionError(reason)
    return reason
