"""Secrets never reach the configs topic in clear: Java's stored form takes them from config providers (a literal
one is refused at start), ``configs.topic.compatibility = python`` stores references each node resolves."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_runtime.api.config_provider import resolve
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.properties import parse_properties
from connect_runtime.api.secrets import is_sensitive_key
from mirror.checkpoint.connector import MirrorCheckpointConnector
from mirror.config.mirror_maker_config import CONNECTOR_CLASSES, MirrorMakerConfig, SourceAndTarget
from mirror.config.secret_references import secret_reference
from mirror.heartbeat.connector import MirrorHeartbeatConnector
from mirror.maker.config_check import check_mm2_properties
from mirror.maker.rest_wiring import NoInternalRestForwarder, rest_security, task_config_forwarder
from mirror.source.connector import MirrorSourceConnector

PAIR = SourceAndTarget("A", "B")


def make(text: str) -> MirrorMakerConfig:
    return MirrorMakerConfig(parse_properties(text, "mm2.properties"))


def checked(config: MirrorMakerConfig, clusters: list[str] | None = None, *,
            resolve_providers: bool = True) -> list[SourceAndTarget]:
    """The driver's check of the file's structure (no herders); its refusals raise, the herder pairs return."""
    report = check_mm2_properties(config, clusters, resolve_providers=resolve_providers, herders=False)
    report.raise_if_refused()
    return report.pairs


def secured(tmp_path: Path, compatibility: str = "python") -> MirrorMakerConfig:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("b.key = file-provided-key-pw\n")
    return make(f"""configs.topic.compatibility = {compatibility}
clusters = A, B
A->B.enabled = true
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
config.providers = env, file
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
A.security.protocol = SASL_SSL
A.sasl.mechanism = PLAIN
A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \\
  username="u" password="literal-jaas-pw";
ssl.truststore.password = ${{env:REF_TEST_TRUST_PW}}
B.ssl.key.password = ${{file:{secrets}:b.key}}
A->B.producer.override.ssl.keystore.password = flow-level-pw
""")


def test_stored_configs_hold_references_that_resolve_to_the_secrets(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REF_TEST_TRUST_PW", "env-trust-pw")
    config = secured(tmp_path)
    for connector_class in CONNECTOR_CLASSES:
        stored = config.connector_stored_config(PAIR, connector_class)
        base = config.connector_base_config(PAIR, connector_class)
        assert stored.keys() == base.keys()
        assert stored["source.cluster.sasl.jaas.config"] == "${mm2:A.sasl.jaas.config}"
        assert stored["source.consumer.sasl.jaas.config"] == "${mm2:A.sasl.jaas.config}"
        assert stored["target.cluster.ssl.truststore.password"] == "${mm2:ssl.truststore.password}"
        assert stored["target.producer.ssl.key.password"] == "${mm2:B.ssl.key.password}"
        flow_key = "A->B.producer.override.ssl.keystore.password"
        assert stored["producer.override.ssl.keystore.password"] == "${mm2:" + flow_key + "}"
        text = repr(stored)
        for secret in ("literal-jaas-pw", "env-trust-pw", "file-provided-key-pw", "flow-level-pw"):
            assert secret not in text
        assert {k: v for k, v in stored.items() if not is_sensitive_key(k)} == \
               {k: v for k, v in base.items() if not is_sensitive_key(k)}
        # What each node's worker makes of it: exactly the secrets of its own file, providers included.
        resolved = resolve(stored, config.worker_providers())
        assert resolved == resolve(base, config.worker_providers())
        assert resolved["target.producer.ssl.key.password"] == "file-provided-key-pw"
        assert resolved["target.cluster.ssl.truststore.password"] == "env-trust-pw"


def test_reference_syntax_and_reserved_provider_name() -> None:
    assert secret_reference("A.ssl.key.password") == "${mm2:A.ssl.key.password}"
    assert secret_reference("a:b.ssl.key.password") == "${mm2::a:b.ssl.key.password}"
    with pytest.raises(ConfigError, match="cannot be referenced"):
        secret_reference("a}.ssl.key.password")
    with pytest.raises(ConfigError, match=r"mm2.properties:2: .*'mm2' is reserved"):
        make("clusters = A, B\nconfig.providers = mm2\n"
             "config.providers.mm2.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n")


def test_internal_rest_flag_chooses_the_task_config_forwarder() -> None:
    base = "clusters = A, B\nA->B.enabled = true\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"
    off = make(base)
    forwarder = task_config_forwarder(off, rest_security(off, "http://:0"), "t", 30.0)
    assert isinstance(forwarder, NoInternalRestForwarder)
    retries: list[str] = []
    forwarder.forward("http://leader:8083/A/B", "MirrorSourceConnector", [], None,  # type: ignore[arg-type]
                      lambda: retries.append("retry"))
    assert retries == ["retry"]  # the herder keeps retrying: the connector may move to the leader
    on = make(base + "dedicated.mode.enable.internal.rest = true\n")
    assert not isinstance(task_config_forwarder(on, rest_security(on, "http://:0"), "t", 30.0),
                          NoInternalRestForwarder)


def test_rest_security_errors_name_the_file_line() -> None:
    config = make("clusters = A, B\nrest.extension.classes = com.example.Ext\n")
    with pytest.raises(ConfigError, match=r"^mm2.properties:2: .*only org\.apache\.kafka"):
        rest_security(config, "http://:0")


def provided(tmp_path: Path, jaas_password: str = '"${file:SECRETS:a.pw}"') -> MirrorMakerConfig:
    """The default (Java's stored configs) with every secret from a config provider."""
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("a.pw = file-provided-jaas-pw\nb.key = file-provided-key-pw\n")
    return make(f"""clusters = A, B
A->B.enabled = true
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
config.providers = env, file
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
A.security.protocol = SASL_SSL
A.sasl.mechanism = PLAIN
A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \\
  username="u" password={jaas_password.replace("SECRETS", str(secrets))};
ssl.truststore.password = ${{env:REF_TEST_TRUST_PW}}
B.ssl.key.password = ${{file:{secrets}:b.key}}
""")


def test_by_default_the_stored_config_is_javas_with_provider_references(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The default: what Java stores (placeholders kept for each worker, Java's included, to resolve)."""
    monkeypatch.setenv("REF_TEST_TRUST_PW", "env-trust-pw")
    config = provided(tmp_path)
    checked(config)
    for connector_class in CONNECTOR_CLASSES:
        stored = config.connector_stored_config(PAIR, connector_class)
        assert stored == config.connector_base_config(PAIR, connector_class)
        assert 'password="${file:' in stored["source.cluster.sasl.jaas.config"]
        assert stored["target.producer.ssl.key.password"].startswith("${file:")
        assert stored["target.cluster.ssl.truststore.password"] == "${env:REF_TEST_TRUST_PW}"
        text = repr(stored)
        assert all(secret not in text for secret in ("file-provided-jaas-pw", "env-trust-pw", "file-provided-key-pw"))
        resolved = resolve(stored, config.worker_providers())
        assert 'password="file-provided-jaas-pw"' in resolved["source.cluster.sasl.jaas.config"]


@pytest.mark.parametrize(("line", "key", "number"), [
    ('A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
     'password="literal";', "A.sasl.jaas.config", 5),
    ("B.ssl.truststore.password = changeit", "B.ssl.truststore.password", 5),
    ("A->B.producer.override.ssl.keystore.password = flow-level-pw", "A->B.producer.override.ssl.keystore.password",
     5),
])
def test_by_default_a_literal_secret_is_refused_naming_the_key_and_the_fix(line: str, key: str, number: int) -> None:
    with pytest.raises(ConfigError) as error:
        checked(make("clusters = A, B\nA->B.enabled = true\nA.bootstrap.servers = a:9092\n"
                                          f"B.bootstrap.servers = b:9092\n{line}\n"))
    message = str(error.value)
    assert message.startswith(f"mm2.properties:{number}: {key} holds a secret in clear")
    assert "config provider" in message and "configs.topic.compatibility = python" in message
    assert "\n" not in message
    assert all(secret not in message for secret in ('"literal"', "changeit", "flow-level-pw"))


def test_a_jaas_line_is_a_reference_only_when_every_secret_option_is_a_placeholder(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    monkeypatch.setenv("REF_TEST_TRUST_PW", "env-trust-pw")
    checked(provided(tmp_path, '"${file:SECRETS:a.pw}" unrelatedOption="x"'))
    with pytest.raises(ConfigError, match=r"mm2.properties:10: A.sasl.jaas.config holds a secret in clear"):
        checked(provided(tmp_path, '"${file:SECRETS:a.pw}" clientSecret="literal"'))


def test_python_compatibility_allows_literal_secrets_as_references(tmp_path: Path) -> None:
    checked(secured(tmp_path), resolve_providers=False)


def test_config_storage_compatibility_takes_python_or_java() -> None:
    with pytest.raises(ConfigError, match=r"configs.topic.compatibility.*expected one of python, java"):
        checked(make(
            "clusters = A, B\nA->B.enabled = true\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"
            "configs.topic.compatibility = jvm\n"))


def test_mm2_task_configs_name_java_task_classes() -> None:
    """Java MirrorMaker starts the task configs we store (docs/migration.md, "Handing a flow back")."""
    assert [c().stored_task_class() for c in (MirrorSourceConnector, MirrorCheckpointConnector,
                                              MirrorHeartbeatConnector)] == [
        f"org.apache.kafka.connect.mirror.Mirror{kind}Task" for kind in ("Source", "Checkpoint", "Heartbeat")]
