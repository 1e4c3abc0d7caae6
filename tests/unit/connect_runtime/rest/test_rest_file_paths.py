"""Issue 27: a connector config submitted through REST names no file beyond what the operator allowed.

The rule itself (:mod:`connect_runtime.api.path_allowlist`: which keys name files, canonical resolution,
the operator's own paths), then the REST layer applying it to POST, PUT, PATCH and validate at the root and
under a flow's namespace (the MM2 driver's per-flow API), with the FakeHerder: nothing refused reaches it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from connect_runtime.api import path_allowlist
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.path_allowlist import PathPolicy, named_paths, operator_policy
from connect_runtime.rest.app import create_app
from connect_runtime.rest.security import RestSecurity

from .conftest import source_config
from .fake_herder import FakeHerder

KRB5 = "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab=\"{}\" principal=\"mm2@X\";"

#: (key, value) pairs that make the worker read /etc/passwd, each naming the file a different way.
PASSWD_VARIANTS = [
    ("source.cluster.ssl.truststore.location", "/etc/passwd"),
    ("target.cluster.ssl.keystore.location", "/etc/passwd"),
    ("source.admin.ssl.keystore.location", "/etc/passwd"),
    ("ssl.keystore.location", "/etc/passwd"),
    ("producer.override.ssl.ca.location", "/etc/passwd"),
    ("consumer.override.ssl.key.location", "/etc/passwd"),
    ("target.cluster.ssl.certificate.location", "/etc/passwd"),
    ("source.cluster.ssl.crl.location", "/etc/passwd"),
    ("source.cluster.https.ca.location", "/etc/passwd"),
    ("source.cluster.sasl.kerberos.keytab", "/etc/passwd"),
    ("source.cluster.sasl.oauthbearer.assertion.private.key.file", "/etc/passwd"),
    ("source.cluster.sasl.oauthbearer.assertion.file", "/etc/passwd"),
    ("source.cluster.sasl.oauthbearer.assertion.jwt.template.file", "/etc/passwd"),
    ("consumer.override.offset.store.path", "/etc/passwd"),
    ("source.cluster.sasl.oauthbearer.token.endpoint.url", "file:///etc/passwd"),
    ("source.cluster.sasl.oauthbearer.token.endpoint.url", "FILE:/etc/passwd"),
    ("source.cluster.sasl.jaas.config", KRB5.format("/etc/passwd")),
]


def test_every_file_naming_key_is_refused_without_an_allowed_directory() -> None:
    policy = PathPolicy()
    for key, value in PASSWD_VARIANTS:
        why = policy.refusal(key, value)
        assert why is not None, key
        assert key in why and "rest.allowed.paths" in why, why
        assert "\n" not in why and "mm2@X" not in why  # one line; the JAAS line itself is never echoed


def test_keys_that_name_no_file_are_left_alone() -> None:
    policy = PathPolicy()
    for key, value in [("offset-syncs.topic.location", "target"), ("topics", "/etc/passwd"),
                       ("source.cluster.ssl.ca.location", "probe"),
                       ("source.cluster.sasl.kerberos.kinit.cmd", "/usr/bin/kinit"),
                       ("source.cluster.sasl.oauthbearer.token.endpoint.url", "https://idp.example/token"),
                       ("source.cluster.sasl.jaas.config",
                        'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'),
                       ("source.cluster.ssl.truststore.location", ""), ("ssl.keystore.location", None)]:
        assert policy.refusal(key, value) is None, key


def test_a_path_under_an_allowed_directory_is_accepted_canonically(tmp_path: Path) -> None:
    allowed = tmp_path / "stores"
    allowed.mkdir()
    (tmp_path / "secret").write_text("x")
    (allowed / "escape").symlink_to(tmp_path / "secret")
    policy = operator_policy({}, [str(allowed) + "/"])
    assert policy.directories == (os.path.realpath(allowed),)
    key = "source.cluster.ssl.truststore.location"
    assert policy.refusal(key, str(allowed / "truststore.jks")) is None
    assert policy.refusal(key, str(allowed)) is None  # a CA directory is itself allowed
    assert policy.refusal("source.cluster.sasl.jaas.config", KRB5.format(allowed / "mm2.keytab")) is None
    assert policy.refusal("x.sasl.oauthbearer.token.endpoint.url", f"file://{allowed}/token.jwt") is None
    refused = {
        "dot-dot": str(allowed / ".." / "secret"),
        "symbolic link": str(allowed / "escape"),
        "prefix, not a parent": str(allowed) + "-other/ts.jks",
        "relative": "ts.jks",
        "NUL byte": str(allowed / "a\x00b"),
        "leading blank (read as relative by librdkafka)": " " + str(allowed / "ts.jks"),
    }
    for how, path in refused.items():
        assert policy.refusal(key, path) is not None, how
    encoded = f"file://{allowed}/%2e%2e/secret"  # a URL reader decodes %2e%2e into ..
    assert policy.refusal("x.sasl.oauthbearer.token.endpoint.url", encoded) is not None


def test_the_operators_own_paths_keep_working_under_any_prefix() -> None:
    operator = {"A.ssl.truststore.location": "/etc/kafka/a-truststore.jks",
                "B.sasl.jaas.config": KRB5.format("/etc/security/mm2.keytab"),
                "A.sasl.kerberos.kinit.cmd": "/opt/krb5/bin/kinit",
                "producer.plugin.library.paths": "/opt/lib/interceptor.so",
                "rest.basic.auth.jaas.config": "/etc/kafka/rest-jaas.conf"}
    policy = operator_policy(operator, [])
    # The MM2 driver's connector config carries the cluster's keys under source.cluster./target.cluster.
    assert policy.refusal("source.cluster.ssl.truststore.location", "/etc/kafka/a-truststore.jks") is None
    assert policy.refusal("target.cluster.sasl.jaas.config", KRB5.format("/etc/security/mm2.keytab")) is None
    assert policy.refusal("source.cluster.sasl.kerberos.kinit.cmd", "/opt/krb5/bin/kinit") is None
    assert policy.refusal("producer.override.plugin.library.paths", "/opt/lib/interceptor.so") is None
    # The REST listener's credentials file is not a client file: naming it stays refused.
    assert policy.refusal("source.cluster.ssl.truststore.location", "/etc/kafka/rest-jaas.conf") is not None


def test_code_on_disk_needs_the_operators_exact_value(tmp_path: Path) -> None:
    policy = operator_policy({}, [str(tmp_path)])
    for key, value in [("producer.override.plugin.library.paths", f"{tmp_path}/evil.so"),
                       ("source.cluster.ssl.engine.location", f"{tmp_path}/engine.so"),
                       ("source.cluster.sasl.kerberos.kinit.cmd", f"{tmp_path}/kinit; touch {tmp_path}/pwned")]:
        why = policy.refusal(key, value)
        assert why is not None and "names code" in why, key
    assert [p for _, p, _ in named_paths("plugin.library.paths", "/a.so;/b.so")] == ["/a.so", "/b.so"]


def test_a_provider_placeholder_naming_a_file_is_accepted_only_as_the_operator_wrote_it(tmp_path: Path) -> None:
    placeholder = "${file:/etc/kafka/secrets.properties:truststore}"
    policy = operator_policy({"A.ssl.truststore.location": placeholder}, [str(tmp_path)])
    assert policy.refusal("source.cluster.ssl.truststore.location", placeholder) is None
    other = f"{tmp_path}/${{env:STORE}}"
    why = policy.refusal("source.cluster.ssl.truststore.location", other)
    assert why is not None and "placeholder" in why


def test_check_raises_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError) as caught:
        path_allowlist.check({"topics": "t", "target.cluster.ssl.keystore.location": "/etc/shadow"}, PathPolicy())
    assert caught.value.key == "target.cluster.ssl.keystore.location"


def _client(props: dict[str, str], herder: FakeHerder, namespaced: bool = False) -> TestClient:
    security = RestSecurity.from_props({"rest.mutations.allow.unauthenticated": "true", **props}, https=False)
    app = create_app({("A", "B"): herder} if namespaced else herder, security=security)
    return TestClient(app, raise_server_exceptions=True)


@pytest.mark.parametrize("namespaced", [False, True], ids=["root", "flow"])
def test_rest_refuses_a_file_outside_the_allowed_paths_on_every_config_route(tmp_path: Path,
                                                                            namespaced: bool) -> None:
    herder = FakeHerder()
    base = "/A/B" if namespaced else ""
    key = "source.cluster.ssl.truststore.location"
    with _client({"rest.allowed.paths": str(tmp_path)}, herder, namespaced) as http:
        leak = source_config("x", **{key: "/etc/passwd"})
        for method, path, body in [("POST", "/connectors", {"name": "x", "config": leak}),
                                   ("PUT", "/connectors/x/config", leak),
                                   ("PATCH", "/connectors/x/config", {key: "/etc/passwd"}),
                                   ("PUT", "/connector-plugins/MirrorSourceConnector/config/validate", leak)]:
            response = http.request(method, base + path, json=body)
            assert response.status_code == 400, (method, path, response.text)
            assert key in response.json()["message"] and "rest.allowed.paths" in response.json()["message"]
        assert not herder.called("put_connector_config")
        assert not herder.called("patch_connector_config")
        assert not herder.called("validate_connector_config")
        fine = source_config("y", **{key: str(tmp_path / "truststore.jks")})
        created = http.post(base + "/connectors", json={"name": "y", "config": fine})
        assert created.status_code == 201, created.text


def test_rest_accepts_the_paths_of_the_operators_file_and_nothing_by_default() -> None:
    herder = FakeHerder()
    operator = {"A.ssl.truststore.location": "/etc/kafka/a-truststore.jks"}
    with _client(operator, herder) as http:
        same = source_config("x", **{"source.cluster.ssl.truststore.location": "/etc/kafka/a-truststore.jks"})
        assert http.post("/connectors", json={"name": "x", "config": same}).status_code == 201
        other = source_config("y", **{"source.cluster.ssl.truststore.location": "/etc/kafka/other.jks"})
        refused = http.post("/connectors", json={"name": "y", "config": other})
        assert refused.status_code == 400
        assert "allowed: none" in refused.json()["message"]
