"""Issue 16, items 4 and 5 end to end: a real ``connect-mirror-maker`` on the test brokers, its REST API
over HTTPS with basic auth, and secrets planted in its mm2.properties (literal, ``${env:...}``,
``${file:...}``) that must appear nowhere it writes: its log (at DEBUG), every REST resource (GET
routes walked from the app), ``/metrics``, ``/ui``, ``mirror config show`` and MM2's internal topics.

Issue 27 sharpened it: the secrets hold ``"\\$%+/=`` (so a leak through JSON, URL or HTML escaping is
found too, see :func:`scan`), every route is read with credentials and its status asserted (a 500 or a
401 scanned as "clean" proves nothing), every internal topic is read to its end (an incomplete read fails
the test), and a browser's cross-site probes (a ``text/plain`` POST carrying the cached credentials) and
oversized bodies are refused.

The clusters are PLAINTEXT (the test broker has no TLS or SASL of its own, docs/tansu.md): the planted keys
are real client keys that the clients carry but do not use on a PLAINTEXT connection, which is all
this test needs: what matters is where their values travel.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.routing import Route

from connect_runtime.rest.app import create_app
from connect_runtime.rest.basic_auth import BASIC_AUTH_EXTENSION
from tests.conftest import Cluster
from tests.integration.support.leak_scan import SPECIAL, properties_escaped, read_whole_topic
from tests.integration.support.leak_scan import scan as leak_scan
from tests.integration.support.mm2_process import ROOT, MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import commit_group_offsets, consume_all, create_topic, produce, topics, wait_until
from tests.support.rest_certs import self_signed
from tests.unit.connect_runtime.rest.fake_herder import FakeHerder
from tests.unit.connect_runtime.rest.test_security import SUCCESS, mounted_apps

pytestmark = [pytest.mark.integration, pytest.mark.slow]

USER = "operator"
#: Each secret carries ``"\\$%+/=`` (JSON, URL and HTML escape them) and a unique tag: the scan looks for
#: every escaped form and for the tag alone (tests/integration/support/leak_scan.py).
SECRETS = {
    "literal sasl.jaas.config password": "LIT$%+/=jaas-7f3a9c",  # JAAS quoting: no quote or backslash
    "literal top-level ssl.key.password": f"LIT{SPECIAL}sslkey-91c2e4",
    "env-provided truststore password": f"ENV{SPECIAL}trust-5d8e0b",
    "file-provided flow keystore password": f"FILE{SPECIAL}ks-2b7c61",
    "listener key password": f"LIS{SPECIAL}listener-4e1f3a",
    "basic auth password": f"BASIC{SPECIAL}pw-8a2d55",
}


def plant(tmp_path: Path, a: str, b: str, cluster_a: Cluster, cluster_b: Cluster) -> tuple[Path, Any]:
    pem = self_signed(tmp_path, key_password=SECRETS["listener key password"])
    secrets_file = tmp_path / "secrets.properties"
    secrets_file.write_text(f"ks = {properties_escaped(SECRETS['file-provided flow keystore password'])}\n")
    users = tmp_path / "users.properties"
    users.write_text(f"{USER}: {properties_escaped(SECRETS['basic auth password'])}\n")
    jaas = tmp_path / "connect-jaas.conf"
    jaas.write_text('KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule '
                    f'required\n  file="{users}";\n}};\n')
    body = f"""{a}->{b}.enabled = true
{a}->{b}.topics = scan-.*
{a}->{b}.source.cluster.ssl.keystore.password = ${{file:{secrets_file}:ks}}
configs.topic.compatibility = python
config.providers = env, file
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
{a}.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="mm2" \
password="{SECRETS['literal sasl.jaas.config password']}";
ssl.key.password = {properties_escaped(SECRETS['literal top-level ssl.key.password'])}
{b}.ssl.truststore.password = ${{env:SCAN_ENV_SECRET}}
listeners = https://127.0.0.1:0
listeners.https.ssl.keystore.type = PEM
listeners.https.ssl.keystore.location = {pem.keystore}
listeners.https.ssl.key.password = {properties_escaped(SECRETS['listener key password'])}
listeners.https.ssl.truststore.type = PEM
listeners.https.ssl.truststore.location = {pem.certificate}
rest.extension.classes = {BASIC_AUTH_EXTENSION}
rest.basic.auth.jaas.config = {jaas}
rest.mutations.allow.unauthenticated = false
"""
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    return props, pem


def get_routes(namespace: tuple[str, str]) -> list[str]:
    """Every GET route path of the driver's app shape (root and one flow), from a stand-in app."""
    app = create_app({namespace: FakeHerder()})
    paths = [r.path for r in app.routes if isinstance(r, Route) and "GET" in (r.methods or ())]
    for mounted in mounted_apps(app):
        paths += [f"/{namespace[0]}/{namespace[1]}{r.path}" for r in mounted.routes
                  if isinstance(r, Route) and "GET" in (r.methods or ())]
    return paths


def auth_header() -> dict[str, str]:
    token = base64.b64encode(f"{USER}:{SECRETS['basic auth password']}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def scan(where: str, text: str) -> list[str]:
    return leak_scan(where, text, {**SECRETS, "basic auth header": auth_header()["Authorization"].split()[1]})


def _headers_only(url: str, path: str, declared: int, headers: dict[str, str]) -> bytes:
    """The answer to a request announcing ``declared`` body bytes and sending none: what a refusal
    before reading looks like (a server that reads first would wait for the body)."""
    parts = urlsplit(url)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as raw, \
            context.wrap_socket(raw, server_hostname=parts.hostname) as sock:
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}"
                     f"Content-Length: {declared}\r\n\r\n".encode())
        return sock.recv(65536)


def test_https_basic_auth_and_no_secret_anywhere(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    props, pem = plant(tmp_path, a, b, cluster_a, cluster_b)
    env = {"SCAN_ENV_SECRET": SECRETS["env-provided truststore password"]}
    topic = create_topic(cluster_a.bootstrap, f"scan-{a}")
    produce(cluster_a.bootstrap, topic, 5)
    auth = auth_header()
    found: list[str] = []
    with MirrorMakerProcess(props, "--log-level", "DEBUG", env=env) as node, \
            httpx.Client(verify=ssl.create_default_context(cafile=str(pem.certificate)), timeout=30,
                         trust_env=False) as http:
        node.wait_running(2, 120)
        assert node.url.startswith("https://")
        flow = f"/{a}/{b}"
        wait_until(lambda: len(consume_all(cluster_b.bootstrap, f"{a}.{topic}", 5)) >= 5
                   if f"{a}.{topic}" in topics(cluster_b.bootstrap) else False, 60, "records replicated")

        # State changes: refused without credentials (every endpoint), served with them (a real herder).
        for method, path in SUCCESS:
            url = node.url + (path if path.startswith("/admin") else flow + path).format(
                connector="MirrorSourceConnector", task="0", plugin="MirrorSourceConnector", logger="root")
            refused = http.request(method, url, json={})
            assert refused.status_code == 401, (method, url, refused.text)
            found += scan(f"401 body of {method} {path}", refused.text)
        source = f"{node.url}{flow}/connectors/MirrorSourceConnector"
        assert http.put(source + "/pause", headers=auth).status_code == 202
        assert http.put(source + "/resume", headers=auth).status_code == 202
        assert http.post(source + "/restart", headers=auth).status_code == 204
        assert http.put(node.url + "/admin/loggers/mirror", json={"level": "DEBUG"}, headers=auth).status_code == 200
        assert http.post(f"{node.url}{flow}/connectors/MirrorSourceConnector/tasks", json=[]).status_code == 400

        # A browser sends cached basic credentials cross-site; a text/plain or form body needs no preflight.
        forged = json.dumps({"name": "csrf", "config": {"connector.class": "MirrorHeartbeatConnector"}})
        for content_type in ("text/plain", "application/x-www-form-urlencoded"):
            csrf = http.post(f"{node.url}{flow}/connectors", content=forged,
                             headers={**auth, "Content-Type": content_type})
            assert csrf.status_code == 415, csrf.text
        # Bodies over the limit are refused from their Content-Length, before any byte is read.
        assert _headers_only(node.url, f"{flow}/connectors", 5 << 20, auth).startswith(b"HTTP/1.1 413")
        assert _headers_only(node.url, f"{flow}/connectors/MirrorSourceConnector/tasks", 200 << 20,
                             {}).startswith(b"HTTP/1.1 413")

        # Every GET resource, with each connector, task and plugin the flow has: refused without
        # credentials (but /health), and each answer's status checked before its body is scanned.
        connectors = http.get(f"{node.url}{flow}/connectors", headers=auth).json()
        assert "csrf" not in connectors
        assert set(connectors) >= {"MirrorSourceConnector", "MirrorHeartbeatConnector"}
        plugins = [p["class"].rsplit(".", 1)[-1]
                   for p in http.get(f"{node.url}{flow}/connector-plugins", headers=auth).json()]
        tasks_of = {c: http.get(f"{node.url}{flow}/connectors/{c}/tasks", headers=auth).json() for c in connectors}
        wrong_status: list[tuple[str, int]] = []
        read = 0
        for template in get_routes((a, b)):
            for connector in connectors:
                for plugin in plugins[:3]:
                    path = template.format(connector=connector, task="0", plugin=plugin, logger="root",
                                           name="app.js", source=a, target=b)
                    if template != "/health":
                        unauthenticated = http.get(node.url + path)
                        assert unauthenticated.status_code == 401, (path, unauthenticated.text)
                        found += scan(f"401 body of GET {path}", unauthenticated.text)
                    response = http.get(node.url + path, headers=auth)
                    read += 1
                    # A connector without tasks (the checkpoint connector with no group to sync) has no task 0.
                    no_task = template.endswith("/tasks/{task}/status") and not tasks_of[connector]
                    if response.status_code != (404 if no_task else 200):
                        wrong_status.append((path, response.status_code))
                    found += scan(f"GET {path}", response.text)
        assert wrong_status == []
        assert read > 50
        tasks_config = http.get(f"{source}/tasks-config", headers=auth).json()
        assert any("${mm2:" in v for task in tasks_config.values() for v in task.values()), tasks_config
        for path in ("/metrics", "/ui", "/ui/api/status", "/flows", "/health"):
            response = http.get(node.url + path, headers=auth)
            assert response.status_code == 200, (path, response.text)
            found += scan(f"GET {path}", response.text)
        assert http.get(node.url + "/health").status_code == 200  # probes need no credentials

        # mirror failover --execute's forced commit passes the same guard: without the caller's credentials the
        # node refuses it (one note, exit 0); with them it commits, over https with the file's trust.
        group = f"scan-group-{a}"
        commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 5})
        failover = [sys.executable, "-m", "mirror.cli", "failover", str(props), "--source", a, "--target", b,
                    "--group", group, "--execute", "--json", "--max-wait", "30"]
        credentials = {"MIRROR_REST_USER": USER, "MIRROR_REST_PASSWORD": SECRETS["basic auth password"]}
        runs = [subprocess.run(failover, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
                               env={**env, "PATH": "", **given}) for given in ({}, credentials)]
        assert [r.returncode for r in runs] == [0, 0] and all(r.stdout.startswith("{") for r in runs), \
            [r.stdout[-2000:] + r.stderr[-2000:] for r in runs]
        refused, committed = (json.loads(r.stdout) for r in runs)
        [unauthorized] = refused["offset_commits"]
        assert unauthorized["error"].startswith("HTTP 401") and "MIRROR_REST_USER" in unauthorized["error"]
        assert refused["offsets_committed_after_s"] is None and refused["exact_after_s"] is not None
        [node_commit] = committed["offset_commits"]
        assert node_commit["error"] is None and committed["offsets_committed_after_s"] is not None
        for run in runs:
            found += scan("mirror failover", run.stdout + run.stderr)
        assert node.terminate() == 0
        found += scan("the driver's log", node.log_text())

    shown = subprocess.run([sys.executable, "-m", "mirror.cli", "config", "show", str(props)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60, check=False, env={**env, "PATH": ""})
    assert shown.returncode == 0, shown.stderr
    assert "sasl.jaas.config" in shown.stdout, f"mirror config show did not show the file: {shown.stdout[:300]}"
    found += scan("mirror config show", shown.stdout + shown.stderr)
    internal = [f"mm2-{kind}.{a}.internal" for kind in ("configs", "status", "offsets")]
    texts = {name: read_whole_topic(cluster_b.bootstrap, name) for name in internal}
    assert texts[internal[0]] and texts[internal[1]], "the configs and status topics hold records"
    for name, text in texts.items():
        found += scan(name, text)
    assert found == []
    assert f"${{mm2:{a}.sasl.jaas.config}}" in texts[internal[0]]  # the reference is what is stored
