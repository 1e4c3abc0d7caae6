"""Issue 27, item 7: probes of a real ``connect-distributed`` in trusted-network mode
(``rest.mutations.allow.unauthenticated=true``, where any caller may submit connector configs).

* Cross-site requests: a web page can POST ``text/plain``, form or untyped bodies to the worker without a
  CORS preflight; JSON endpoints refuse them (415) and no connector is created.
* Body sizes: an oversized body is refused (413) from its ``Content-Length`` before any byte is read,
  a chunked one as soon as it goes over, on public and internal paths.
* Traversal: with a file and a directory provider allowlisted for REST and restricted by ``allowed.paths``,
  placeholders that climb out (``..``, an absolute key, a symbolic link) resolve nothing: the connector
  fails with the reason and the planted file's content appears nowhere.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import Cluster
from tests.integration.test_connect_distributed import WorkerProcess, sequence_config, worker_factory
from tests.support.kafka import consume_all, create_topic, unique, wait_until

pytestmark = pytest.mark.integration

__all__ = ["worker_factory"]  # the fixture, shared with test_connect_distributed

OUTSIDE_SECRET = "OUTSIDE-7c1e9a-not-for-rest-callers"
DIRECTORY = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"


def _raw_request(url: str, head: str) -> bytes:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head.encode())
        return sock.recv(65536)


def test_cross_site_and_oversized_requests_are_refused(worker_factory: Any, cluster_a: Cluster) -> None:
    worker: WorkerProcess = worker_factory().start()
    topic = create_topic(cluster_a.bootstrap, unique("probe-csrf"), partitions=1)
    body = json.dumps({"name": "csrf", "config": sequence_config(topic, 1)})
    for content_type in ("text/plain", "text/plain; charset=UTF-8", "application/x-www-form-urlencoded",
                         "multipart/form-data; boundary=b"):
        refused = worker.rest("POST", "/connectors", content=body, headers={"Content-Type": content_type})
        assert refused.status_code == 415, (content_type, refused.text)
    assert worker.rest("POST", "/connectors", content=body.encode()).status_code == 415  # no type at all
    assert worker.rest("PUT", "/connectors/csrf/config", content=json.dumps(sequence_config(topic, 1)),
                       headers={"Content-Type": "text/plain"}).status_code == 415
    assert worker.rest("GET", "/connectors").json() == []

    announced = _raw_request(worker.url, "POST /connectors HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                         f"Content-Length: {5 << 20}\r\n\r\n")
    assert announced.startswith(b"HTTP/1.1 413"), announced[:200]
    internal = _raw_request(worker.url, "POST /connectors/x/tasks HTTP/1.1\r\nHost: x\r\n"
                                        f"Content-Type: application/json\r\nContent-Length: {200 << 20}\r\n\r\n")
    assert internal.startswith(b"HTTP/1.1 413"), internal[:200]
    big = json.dumps({"name": "big", "config": sequence_config(topic, 1, padding="p" * (2 << 20))})
    chunks = (big[i:i + 65536].encode() for i in range(0, len(big), 65536))  # sent chunked
    refused = worker.rest("POST", "/connectors", content=chunks, headers={"Content-Type": "application/json"})
    assert refused.status_code == 413, refused.text
    assert worker.rest("GET", "/connectors").json() == []


def _plant(tmp_path: Path) -> dict[str, Path]:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "inside.txt").write_text("inside-value")
    (outside / "secret.txt").write_text(OUTSIDE_SECRET)
    (outside / "secret.properties").write_text(f"secret = {OUTSIDE_SECRET}\n")
    (allowed / "link.txt").symlink_to(outside / "secret.txt")
    (allowed / "escape").symlink_to(outside)
    return {"allowed": allowed, "outside": outside}


def test_config_provider_traversal_probes(worker_factory: Any, cluster_a: Cluster, tmp_path: Path) -> None:
    paths = _plant(tmp_path)
    allowed, outside = paths["allowed"], paths["outside"]
    worker: WorkerProcess = worker_factory(**{
        "config.providers": "dir,file", "config.providers.dir.class": DIRECTORY,
        "config.providers.file.class": FILE, "config.providers.dir.param.allowed.paths": str(allowed),
        "config.providers.file.param.allowed.paths": str(allowed),
        "rest.config.providers.allowlist": "dir,file"}).start()
    topic = create_topic(cluster_a.bootstrap, unique("probe-trav"), partitions=1)
    probes = {
        "dotdot-key": f"${{dir:{allowed}:../outside/secret.txt}}",
        "dotdot-path": f"${{dir:{allowed}/..:outside}}",
        "absolute-key": f"${{dir:{allowed}:{outside}/secret.txt}}",
        "link-key": f"${{dir:{allowed}:link.txt}}",
        "link-path": f"${{dir:{allowed}/escape:secret.txt}}",
        "file-dotdot": f"${{file:{allowed}/../outside/secret.properties:secret}}",
        "file-outside": f"${{file:{outside}/secret.properties:secret}}",
    }
    for name, placeholder in probes.items():
        created = worker.rest("PUT", f"/connectors/{name}/config",
                              json=sequence_config(topic, 1, **{"probe.value": placeholder}))
        assert created.status_code == 201, (name, created.text)  # resolved (and refused) when it starts
    # A placeholder inside the allowed path works (the provider is usable, only its bounds are enforced).
    fine = worker.rest("PUT", "/connectors/inside/config",
                       json=sequence_config(topic, 1, **{"probe.value": f"${{dir:{allowed}:inside.txt}}"}))
    assert fine.status_code == 201, fine.text

    def states() -> dict[str, str | None]:
        out = {}
        for name in [*probes, "inside"]:
            status = worker.rest("GET", f"/connectors/{name}/status")
            out[name] = status.json()["connector"]["state"] if status.status_code == 200 else None
        return out

    def settled_states() -> dict[str, str | None] | None:
        now = states()
        done = now["inside"] == "RUNNING" and all(now[n] == "FAILED" for n in probes)
        return now if done else None

    settled = wait_until(settled_states, 60, "probes failed, the inside connector running")
    assert settled is not None
    texts = []
    for name in probes:
        status = worker.rest("GET", f"/connectors/{name}/status")
        assert status.status_code == 200 and settled[name] == "FAILED", status.text
        trace = status.json()["connector"]["trace"]
        assert any(reason in trace for reason in ("allowed.paths", "not a file name", "resolves outside")), trace
        for path in (f"/connectors/{name}", f"/connectors/{name}/config", f"/connectors/{name}/tasks-config"):
            texts.append(worker.rest("GET", path).text)
    texts.append(worker.log())
    for kind in ("config", "status"):
        texts += [(r.value or b"").decode("utf-8", "replace")
                  for r in consume_all(cluster_a.bootstrap, worker.props[f"{kind}.storage.topic"])]
    assert not [t for t in texts if OUTSIDE_SECRET in t]
