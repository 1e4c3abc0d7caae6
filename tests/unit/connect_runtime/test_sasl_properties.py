"""Java SASL settings -> librdkafka, tested at the client seam.

The test broker cannot authenticate anyone (docs/tansu.md: with ``--authentication`` PLAIN has no shared
mechanism and SCRAM finds no user), so no SASL login can be exercised end to end here. What is tested
instead is the seam: the librdkafka config each Java config becomes, that a real confluent-kafka client
accepts it, and, where the login starts without a broker, that it really happens: librdkafka's OIDC
client-credentials request reaches a local token endpoint with the JAAS clientId/clientSecret/scope,
and the MSK IAM and Python token callbacks are installed and called when the client is built.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from connect_runtime.api.errors import ConfigError
from connect_runtime.clients.factory import translate
from connect_runtime.clients.sasl_properties import MskIamTokenCallback, parse_jaas
from tests.support.kafka import wait_until

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
IAM = "software.amazon.msk.auth.iam.IAMLoginModule"


def _build(config: dict[str, Any]) -> None:
    """A real producer from ``config`` (no bootstrap.servers: nothing connects); librdkafka rejects
    unknown keys and bad values here."""
    Producer({**config, "log_level": 0}).flush(0)


@pytest.mark.parametrize(("mechanism", "module"), [("PLAIN", PLAIN), ("SCRAM-SHA-256", SCRAM),
                                                   ("SCRAM-SHA-512", SCRAM)])
def test_plain_and_scram_logins(mechanism: str, module: str) -> None:
    jaas = f'{module} required username="alice" password="pa ss\\"word;x";'
    out = translate({"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "sasl.jaas.config": jaas},
                    "producer")
    assert out == {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "sasl.username": "alice",
                   "sasl.password": 'pa ss"word;x'}
    _build(out)


def test_sasl_keys_count_only_with_a_sasl_protocol_as_in_java() -> None:
    jaas = f'{PLAIN} required username="alice" password="pw";'
    java = {"sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas, "sasl.kerberos.service.name": "kafka"}
    assert translate({**java, "security.protocol": "SSL"}, "consumer") == {"security.protocol": "SSL"}
    assert translate(java, "consumer") == {}


def test_jaas_problems_name_the_key_and_never_the_secret() -> None:
    cases = [
        ({"sasl.jaas.config": "username=alice password=secret-value"}, "sasl.jaas.config"),
        ({"sasl.jaas.config": f'{KRB5} required password="secret-value";'}, "sasl.jaas.config"),
        ({"sasl.jaas.config": f'{PLAIN} required password="secret-value";'}, "sasl.jaas.config"),
        ({"sasl.mechanism": "NTLM", "sasl.jaas.config": f'{PLAIN} required password="secret-value";'},
         "sasl.mechanism"),
        ({"sasl.client.callback.handler.class": "com.example.CustomHandler"}, "sasl.client.callback.handler.class"),
    ]
    for java, key in cases:
        with pytest.raises(ConfigError) as info:
            translate({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", **java}, "producer")
        assert info.value.key == key, java
        assert "secret-value" not in str(info.value)
    assert parse_jaas('x.Y optional a=b c="d e";') == ("x.Y", {"a": "b", "c": "d e"})


def test_gssapi_from_the_krb5_login_module() -> None:
    """Mapping only: the confluent-kafka wheels are built without GSSAPI (librdkafka then says "No provider
    for SASL mechanism GSSAPI" when the client is built); a librdkafka with libsasl2 takes these keys."""
    jaas = (f'{KRB5} required useKeyTab=true storeKey=true keyTab="/etc/security/mm2.keytab" '
            'principal="mm2/host.example.com@EXAMPLE.COM" serviceName="kafka";')
    java = {"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": jaas,  # GSSAPI is Java's default
            "sasl.kerberos.kinit.cmd": "/opt/krb5/bin/kinit", "sasl.kerberos.min.time.before.relogin": "30000"}
    out = translate(java, "consumer")
    assert out == {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.principal": "mm2/host.example.com@EXAMPLE.COM",
        "sasl.kerberos.keytab": "/etc/security/mm2.keytab", "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.min.time.before.relogin": "30000",
        "sasl.kerberos.kinit.cmd": '/opt/krb5/bin/kinit -R -t "%{sasl.kerberos.keytab}" -k '
                                   '%{sasl.kerberos.principal} || /opt/krb5/bin/kinit -t '
                                   '"%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal}',
    }
    # the service name may come from Kafka's key instead; both, and different, is Kafka's error too
    no_name = jaas.replace(' serviceName="kafka"', "")
    assert translate({**java, "sasl.jaas.config": no_name, "sasl.kerberos.service.name": "kfk"},
                     "consumer")["sasl.kerberos.service.name"] == "kfk"
    with pytest.raises(ConfigError, match="Conflicting serviceName") as info:
        translate({**java, "sasl.kerberos.service.name": "other"}, "consumer")
    assert info.value.key == "sasl.kerberos.service.name"
    # a ticket cache and no key tab: librdkafka must not run kinit itself
    cache = translate({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI",
                       "sasl.jaas.config": f'{KRB5} required useTicketCache=true principal="mm2@EXAMPLE.COM";'},
                      "admin")
    assert cache["sasl.kerberos.min.time.before.relogin"] == "0" and "sasl.kerberos.kinit.cmd" not in cache


class _TokenEndpoint(http.server.BaseHTTPRequestHandler):
    requests: list[tuple[str, str]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        _TokenEndpoint.requests.append((self.headers.get("Authorization", ""), body))

        def part(claims: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()

        now = int(time.time())
        token = f"{part({'alg': 'none'})}.{part({'sub': 'mm2', 'iat': now, 'exp': now + 3600})}."
        data = json.dumps({"access_token": token, "token_type": "bearer", "expires_in": 3600}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def token_endpoint() -> Iterator[str]:
    _TokenEndpoint.requests = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _TokenEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/oauth2/token"
    server.shutdown()
    server.server_close()


def test_oauthbearer_oidc_client_credentials_reach_the_token_endpoint(token_endpoint: str) -> None:
    java = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class": OAUTH_HANDLER,
            "sasl.oauthbearer.token.endpoint.url": token_endpoint,
            "sasl.jaas.config": f'{OAUTH} required clientId="mm2-client" clientSecret="oidc-secret-9" '
                                'scope="kafka.replicate" extension_logicalCluster="lkc-123";'}
    out = translate(java, "producer")
    assert out == {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
                   "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": token_endpoint,
                   "sasl.oauthbearer.client.id": "mm2-client", "sasl.oauthbearer.client.secret": "oidc-secret-9",
                   "sasl.oauthbearer.scope": "kafka.replicate",
                   "sasl.oauthbearer.extensions": "logicalCluster=lkc-123"}
    producer = Producer({**out, "security.protocol": "SASL_PLAINTEXT", "log_level": 0})
    wait_until(lambda: _TokenEndpoint.requests or producer.poll(0.1) < 0, 15, "librdkafka's OIDC token request")
    authorization, body = _TokenEndpoint.requests[0]
    assert authorization == "Basic " + base64.b64encode(b"mm2-client:oidc-secret-9").decode()
    assert urllib.parse.parse_qs(body) == {"grant_type": ["client_credentials"], "scope": ["kafka.replicate"]}


def test_oauthbearer_needs_a_way_to_get_a_token_and_unsecured_tokens_map() -> None:
    java = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": f"{OAUTH} required;"}
    with pytest.raises(ConfigError) as info:
        translate(java, "producer")
    assert info.value.key == "sasl.oauthbearer.token.endpoint.url"
    unsecured = translate({**java, "sasl.jaas.config": f'{OAUTH} required unsecuredLoginStringClaim_sub="mm2" '
                                                       'unsecuredLoginExtension_traceId="t1";'}, "producer")
    assert unsecured["enable.sasl.oauthbearer.unsecure.jwt"] == "true"
    assert unsecured["sasl.oauthbearer.config"] == "principal=mm2 extension_traceId=t1"
    _build(unsecured)


CALLS: list[str] = []


def token_for_test(config: str) -> tuple[str, float]:
    """A token callback named in ``sasl.login.callback.handler.class`` by a test."""
    CALLS.append(config)
    return "token-from-python", time.time() + 3600


def test_a_python_token_callback_named_as_the_login_handler_is_called() -> None:
    CALLS.clear()
    java = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": f"{OAUTH} required;",
            "sasl.login.callback.handler.class": f"{__name__}.token_for_test"}
    out = translate(java, "producer")
    assert out["oauth_cb"] is token_for_test
    _build(out)  # confluent-kafka waits for the first token while building the client
    assert CALLS, "the token callback was not called"
    with pytest.raises(ConfigError) as info:
        translate({**java, "sasl.login.callback.handler.class": "com.example.MyJavaHandler"}, "producer")
    assert info.value.key == "sasl.login.callback.handler.class"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake static AWS credentials and no shared config: the signer signs locally, nothing is fetched."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.parametrize("java", [
    # aws-msk-iam-auth's SASL mechanism ...
    {"sasl.mechanism": "AWS_MSK_IAM", "sasl.jaas.config": f"{IAM} required;",
     "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler"},
    # ... and its OAUTHBEARER form
    {"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": f"{OAUTH} required;",
     "sasl.login.callback.handler.class": "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
     "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"},
], ids=["AWS_MSK_IAM", "OAUTHBEARER"])
def test_aws_msk_iam_signs_tokens_through_the_signer_library(aws_env: None, java: dict[str, str]) -> None:
    bootstrap = "b-1.mm2.abc123.c2.kafka.eu-west-3.amazonaws.com:9098"
    out = translate({"security.protocol": "SASL_SSL", "bootstrap.servers": bootstrap, **java}, "producer")
    callback = out["oauth_cb"]
    assert isinstance(callback, MskIamTokenCallback) and callback.region == "eu-west-3"  # from the host name
    assert out["sasl.mechanism"] == "OAUTHBEARER" and "sasl.jaas.config" not in out
    calls: list[tuple[str, float]] = []

    def recording(config: str) -> tuple[str, float]:
        calls.append(callback(config))
        return calls[-1]

    del out["bootstrap.servers"]  # build the client without connecting anywhere
    _build({**out, "oauth_cb": recording})
    assert calls, "the MSK IAM token callback was not called"
    token, expiry = calls[0]
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    assert url.startswith("https://kafka.eu-west-3.amazonaws.com/?Action=kafka-cluster%3AConnect")
    assert "X-Amz-Credential=AKIDEXAMPLE" in url
    assert time.time() < expiry < time.time() + 3600


def test_aws_msk_iam_options_and_region(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    java = {"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM", "bootstrap.servers": "broker:9098",
            "sasl.jaas.config": f'{IAM} required awsRoleArn="arn:aws:iam::123456789012:role/mm2" '
                                'awsRoleSessionName="mm2-session";'}
    with pytest.raises(ConfigError) as info:
        translate(java, "producer")
    assert info.value.key == "bootstrap.servers" and "AWS_REGION" in str(info.value)
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")
    callback = translate(java, "producer")["oauth_cb"]
    assert (callback.region, callback.role_arn, callback.session_name) == (
        "ap-southeast-2", "arn:aws:iam::123456789012:role/mm2", "mm2-session")
    profile = translate({**java, "sasl.jaas.config": f'{IAM} required awsProfileName="replicator";'}, "admin")
    assert profile["oauth_cb"].profile == "replicator"
