"""Issue 16, items 4 and 5 end to end: a real ``connect-mirror-maker`` on the test brokers, its REST API
over HTTPS with basic auth, and secrets planted in its mm2.properties (literal, ``${env:...}``,
``${file:...}``) that must appear nowhere it writes: its log (at DEBUG), every REST resource (GET
routes walked from the app), ``/metrics``, ``/ui``, ``mirror config show`` and MM2's internal topics.

The clusters are PLAINTEXT (the test broker has no TLS or SASL of its own, tansu.md): the planted keys
are real client keys that the clients carry but do not use on a PLAINTEXT connection, which is all
this test needs: what matters is where their values travel.
"""

from __future__ import annotations

import base64
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from connect_runtime.rest.app import create_app
from connect_runtime.rest.basic_auth import BASIC_AUTH_EXTENSION
from tests.conftest import Cluster
from tests.integration.support.mm2_process import ROOT, MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import consume_all, create_topic, produce, topics, wait_until
from tests.support.rest_certs import self_signed
from tests.unit.connect_runtime.rest.fake_herder import FakeHerder
from tests.unit.connect_runtime.rest.test_security import SUCCESS, mounted_apps

pytestmark = [pytest.mark.integration, pytest.mark.slow]

USER = "operator"
SECRETS = {
    "literal sasl.jaas.config password": "LIT-jaas-7f3a9c",
    "literal top-level ssl.key.password": "LIT-sslkey-91c2e4",
    "env-provided truststore password": "ENV-trust-5d8e0b",
    "file-provided flow keystore password": "FILE-ks-2b7c61",
    "listener key password": "LIT-listener-4e1f3a",
    "basic auth password": "BASIC-pw-8a2d55",
}


def plant(tmp_path: Path, a: str, b: str, cluster_a: Cluster, cluster_b: Cluster) -> tuple[Path, Any]:
    pem = self_signed(tmp_path, key_password=SECRETS["listener key password"])
    secrets_file = tmp_path / "secrets.properties"
    secrets_file.write_text(f"ks = {SECRETS['file-provided flow keystore password']}\n")
    users = tmp_path / "users.properties"
    users.write_text(f"{USER}: {SECRETS['basic auth password']}\n")
    jaas = tmp_path / "connect-jaas.conf"
    jaas.write_text('KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule '
                    f'required\n  file="{users}";\n}};\n')
    body = f"""{a}->{b}.enabled = true
{a}->{b}.topics = scan-.*
{a}->{b}.source.cluster.ssl.keystore.password = ${{file:{secrets_file}:ks}}
config.providers = env, file
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
{a}.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="mm2" \
password="{SECRETS['literal sasl.jaas.config password']}";
ssl.key.password = {SECRETS['literal top-level ssl.key.password']}
{b}.ssl.truststore.password = ${{env:SCAN_ENV_SECRET}}
listeners = https://127.0.0.1:0
listeners.https.ssl.keystore.type = PEM
listeners.https.ssl.keystore.location = {pem.keystore}
listeners.https.ssl.key.password = {SECRETS['listener key password']}
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


def scan(where: str, text: str) -> list[str]:
    auth = base64.b64encode(f"{USER}:{SECRETS['basic auth password']}".encode()).decode()
    return [f"{what} in {where}" for what, secret in {**SECRETS, "basic auth header": auth}.items()
            if secret in text]


def test_https_basic_auth_and_no_secret_anywhere(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    props, pem = plant(tmp_path, a, b, cluster_a, cluster_b)
    env = {"SCAN_ENV_SECRET": SECRETS["env-provided truststore password"]}
    topic = create_topic(cluster_a.bootstrap, f"scan-{a}")
    produce(cluster_a.bootstrap, topic, 5)
    auth = {"Authorization": "Basic " + base64.b64encode(f"{USER}:{SECRETS['basic auth password']}".encode())
            .decode()}
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

        # Every GET resource, with each connector, task and plugin the flow has.
        connectors = http.get(f"{node.url}{flow}/connectors").json()
        assert set(connectors) >= {"MirrorSourceConnector", "MirrorHeartbeatConnector"}
        plugins = [p["class"].rsplit(".", 1)[-1] for p in http.get(f"{node.url}{flow}/connector-plugins").json()]
        read = 0
        for template in get_routes((a, b)):
            for connector in connectors:
                for plugin in plugins[:3]:
                    path = template.format(connector=connector, task="0", plugin=plugin, logger="root",
                                           name="app.js", source=a, target=b)
                    response = http.get(node.url + path)
                    read += 1
                    found += scan(f"GET {path}", response.text)
        assert read > 50
        tasks_config = http.get(f"{source}/tasks-config").json()
        assert any("${mm2:" in v for task in tasks_config.values() for v in task.values()), tasks_config
        for path in ("/metrics", "/ui", "/ui/api/status", "/flows", "/health"):
            found += scan(f"GET {path}", http.get(node.url + path).text)
        assert node.terminate() == 0
        found += scan("the driver's log", node.log_text())

    shown = subprocess.run([sys.executable, "-m", "mirror.cli.main", "config", "show", str(props)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60, check=False, env={**env, "PATH": ""})
    assert shown.returncode == 0, shown.stderr
    found += scan("mirror config show", shown.stdout + shown.stderr)
    internal = [f"mm2-{kind}.{a}.internal" for kind in ("configs", "status", "offsets")]
    for name in internal:
        records = consume_all(cluster_b.bootstrap, name, 20)
        assert records or name.startswith("mm2-offsets"), name
        text = "\n".join((r.key or b"").decode("utf-8", "replace") + (r.value or b"").decode("utf-8", "replace")
                         for r in records)
        found += scan(name, text)
    assert found == []
    configs = "".join((r.value or b"").decode() for r in consume_all(cluster_b.bootstrap, internal[0], 20))
    assert f"${{mm2:{a}.sasl.jaas.config}}" in configs  # the reference is what is stored
