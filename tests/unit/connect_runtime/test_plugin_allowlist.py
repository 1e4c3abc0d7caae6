"""Issue 27 items 1-2: what a config may name as code, and principal overrides applied whole.

Every place a config value becomes an import is exercised under a restricted code policy (what
``connect-distributed`` and the MM2 driver install): registered plugins resolve, an operator-allowed name
resolves, anything else is refused naming the key *before* its module is imported (the module
``tests.integration.support.code_plugins`` leaves a file when it is imported). The end-to-end attack
through REST is tests/integration/test_code_injection.py.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from prometheus_client import CollectorRegistry

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.client_overrides import ALLOW_ALL, parse_policy
from connect_runtime.api.errors import ConfigError, NotFoundError
from connect_runtime.api.transforms import validate_chain
from connect_runtime.clients.factory import new_producer
from connect_runtime.clients.sasl_properties import python_callable
from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.worker import connector_validation
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.worker import Worker
from connect_runtime.runtime.worker_config import DistributedWorkerConfig
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.sequence_source import SequenceSourceConnector, SequenceSourceTask
from mirror.client.replication_policy import IdentityReplicationPolicy, load_policy_class
from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.filters import filter_class_errors
from tests.support.rest_certs import self_signed

PLUGINS = "tests.integration.support.code_plugins"


@pytest.fixture
def import_mark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The file code_plugins writes when imported; the module is unloaded before and after."""
    mark = tmp_path / "imported"
    monkeypatch.setenv("CODE_PLUGINS_IMPORT_MARK", str(mark))
    sys.modules.pop(PLUGINS, None)
    yield mark
    sys.modules.pop(PLUGINS, None)


@pytest.fixture
def restricted(import_mark: Path) -> Iterator[Path]:
    """A server's policy with nothing allowed beyond the registered plugins."""
    previous = plugin_allowlist.install(plugin_allowlist.operator_policy({}))
    yield import_mark
    plugin_allowlist.install(previous)


def test_operator_policy_takes_the_allowlist_and_the_code_its_own_file_names() -> None:
    policy = plugin_allowlist.operator_policy({
        "plugin.allowlist": "my.pkg.Exact, other.pkg.*",
        "A->B.replication.policy.class": "ops.Policy", "producer.sasl.login.callback.handler.class": "ops:token",
        "A->B.transforms.t.type": "ops.Transform", "rest.extension.classes": "x.Ext, y.Ext",
        "ssl.keystore.type": "PKCS12", "A->B.topics": "os.system"})
    for allowed in ("my.pkg.Exact", "other.pkg.mod.Name", "ops.Policy", "ops.token", "ops:token", "ops.Transform",
                    "y.Ext"):
        assert policy.permits(allowed), allowed
    for refused in ("my.pkg.Other", "other.pkgx.Name", "os.system", "PKCS12.x", "ops"):
        assert not policy.permits(refused), refused
    assert plugin_allowlist.UNRESTRICTED.permits("os.system")  # a process that installs nothing


def test_a_token_callback_is_refused_before_it_is_imported_or_called(restricted: Path) -> None:
    with pytest.raises(ConfigError, match=r"sasl\.login\.callback\.handler\.class: not a registered plugin.*"
                                          r"plugin\.allowlist") as raised:
        python_callable(f"{PLUGINS}.token", "sasl.login.callback.handler.class")
    assert raised.value.key == "sasl.login.callback.handler.class" and "\n" not in str(raised.value)
    assert not restricted.exists()  # never imported
    plugin_allowlist.install(plugin_allowlist.operator_policy({"plugin.allowlist": f"{PLUGINS}.token"}))
    assert python_callable(f"{PLUGINS}.token", "k")("x") == ("x", 0.0)


def test_connector_class_resolves_registered_names_and_refuses_others(restricted: Path) -> None:
    plugins = Plugins()
    for name in ("SequenceSourceConnector", "SequenceSource",
                 "connect_runtime.testing.sequence_source.SequenceSourceConnector",
                 "org.example.SequenceSourceConnector"):  # a Java name maps by its last segment
        assert plugins.connector_class(name) is SequenceSourceConnector, name
    with pytest.raises(NotFoundError, match=r"connector\.class: not a registered plugin"):
        plugins.connector_class(f"{PLUGINS}.UnlistedConnector")
    with pytest.raises(NotFoundError, match=r"task\.class"):
        plugins.task_class(f"{PLUGINS}.UnlistedConnector")
    assert not restricted.exists()


def test_transforms_and_predicates_resolve_built_ins_and_refuse_python_paths(restricted: Path) -> None:
    config = {"transforms": "a,b,c", "transforms.a.type": "org.apache.kafka.connect.transforms.Filter",
              "transforms.a.predicate": "p", "predicates": "p,q",
              "predicates.p.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
              "transforms.b.type": "connect_runtime.api.transforms.builtin.RegexRouter",
              "transforms.b.regex": "x", "transforms.b.replacement": "y",
              "transforms.c.type": f"{PLUGINS}.RenamingTransform", "predicates.q.type": f"{PLUGINS}.AlwaysTrue"}
    errors = validate_chain(config)
    assert sorted(errors) == ["predicates.q.type", "transforms.c.type"], errors
    assert all("plugin.allowlist" in message for messages in errors.values() for message in messages)
    assert not restricted.exists()


def test_mm2_classes_resolve_aliases_and_refuse_unlisted_python_paths(restricted: Path) -> None:
    assert load_policy_class("org.apache.kafka.connect.mirror.IdentityReplicationPolicy") is IdentityReplicationPolicy
    assert load_policy_class("mirror.client.replication_policy.IdentityReplicationPolicy") is IdentityReplicationPolicy
    with pytest.raises(ValueError, match=r"plugin\.allowlist"):
        load_policy_class(f"{PLUGINS}.UnlistedPolicy")
    config = {"topic.filter.class": f"{PLUGINS}.UnlistedTopicFilter",
              "group.filter.class": "org.apache.kafka.connect.mirror.DefaultGroupFilter",
              "config.property.filter.class": "mirror.filters.DefaultConfigPropertyFilter"}
    errors = filter_class_errors(config, ["topic.filter.class", "group.filter.class", "config.property.filter.class"])
    assert list(errors) == ["topic.filter.class"] and "plugin.allowlist" in errors["topic.filter.class"]
    assert not restricted.exists()


def test_an_allowed_module_pattern_lets_its_classes_through(import_mark: Path) -> None:
    previous = plugin_allowlist.install(plugin_allowlist.operator_policy({"plugin.allowlist": f"{PLUGINS}.*"}))
    try:
        assert Plugins().connector_class(f"{PLUGINS}.UnlistedConnector").__name__ == "UnlistedConnector"
        assert load_policy_class(f"{PLUGINS}.UnlistedPolicy").__name__ == "UnlistedPolicy"
        assert import_mark.exists()
    finally:
        plugin_allowlist.install(previous)


@pytest.mark.parametrize("prefix", ["producer.override.", "consumer.override.", "admin.override."])
def test_validation_refuses_an_override_naming_code_even_under_the_all_policy(restricted: Path, prefix: str) -> None:
    """The reported attack, at the layer that answers REST: a 400 naming the key, one line."""
    config = {"name": "seq", "connector.class": "SequenceSourceConnector", "topic": "t",
              f"{prefix}security.protocol": "SASL_PLAINTEXT", f"{prefix}sasl.mechanism": "OAUTHBEARER",
              f"{prefix}sasl.login.callback.handler.class": "os.system",
              f"{prefix}sasl.oauthbearer.config": "touch /tmp/pwned"}
    infos = connector_validation.validate(SequenceSourceConnector(), config, ALLOW_ALL)
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos.configs if c["value"]["errors"]}
    key = f"{prefix}sasl.login.callback.handler.class"
    assert list(errors) == [key] and len(errors[key]) == 1 and "\n" not in errors[key][0]
    assert f"configuration {key}" in errors[key][0]


def test_the_default_override_policy_refuses_the_attack_keys_too() -> None:
    policy = DistributedWorkerConfig({"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o",
                                      "status.storage.topic": "s"}).override_policy
    config = {"producer.override.sasl.login.callback.handler.class": "os.system",
              "producer.override.bootstrap.servers": "evil:9092", "producer.override.linger.ms": "5"}
    assert sorted(policy.errors(config)) == ["producer.override.bootstrap.servers",
                                             "producer.override.sasl.login.callback.handler.class"]


def test_mm2_workers_allow_the_override_keys_their_own_file_sets(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\n"
                    "A->B.enabled = true\nA->B.producer.override.sasl.jaas.config = x required;\n")
    mm = MirrorMakerConfig.from_file(str(path))
    pair = mm.herder_pairs(None)[0]
    policy = DistributedWorkerConfig(mm.worker_config(pair)).override_policy
    assert policy.name == "Allowlist" and policy.allows("sasl.jaas.config") and policy.allows("linger.ms")
    assert not policy.allows("bootstrap.servers")


# --- item 2: a principal override is applied whole ---------------------------------------------------


class _RealProducers:
    """A producer factory that builds the real confluent-kafka Producer and keeps the config it was given."""

    def __init__(self) -> None:
        self.configs: list[dict[str, Any]] = []
        self.built = threading.Event()

    def __call__(self, config: Mapping[str, Any]) -> Producer:
        self.configs.append(dict(config))
        producer = new_producer(config)
        self.built.set()
        return producer


def _task_producer_config(worker_props: Mapping[str, str], connector_extra: Mapping[str, str]) -> dict[str, Any]:
    worker_config = DistributedWorkerConfig({"group.id": "g", "config.storage.topic": "c",
                                             "offset.storage.topic": "o", "status.storage.topic": "s",
                                             "bootstrap.servers": "127.0.0.1:1", **worker_props})
    producers = _RealProducers()
    worker = Worker("w1", MemoryOffsetStore(), Plugins(), ConnectMetrics.create(CollectorRegistry()),
                    RecordingStatusListener(), worker_config.producer_config(), producer_factory=producers,
                    override_policy=parse_policy("Principal" if not connector_extra.get("tls") else "All"),
                    producer_properties=worker_config.client_properties("producer"))
    connector = {"connector.class": "SequenceSourceConnector", "topic": "t",
                 **{k: v for k, v in connector_extra.items() if k != "tls"}}
    task = ConnectorTaskId("c", 0)
    task_class = f"{SequenceSourceTask.__module__}.SequenceSourceTask"
    try:
        assert worker.start_task(task, connector, {"topic": "t", "task.class": task_class}, TargetState.STARTED)
        assert producers.built.wait(20), "the task built no producer"
    finally:
        worker.stop_tasks([task], 5)
    return producers.configs[0]


def test_a_jaas_override_without_a_protocol_override_logs_in_as_the_connectors_principal() -> None:
    """Before: the override was translated alone, read as PLAINTEXT, and dropped: the task wrote as the
    worker. Now it is merged with the worker's SASL_PLAINTEXT / PLAIN settings, then translated."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="{}" password="{}";'
    config = _task_producer_config(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas.format("w", "wp")},
        {"producer.override.sasl.jaas.config": jaas.format("connector-7", "cp")})
    assert (config["security.protocol"], config["sasl.mechanism"]) == ("SASL_PLAINTEXT", "PLAIN")
    assert (config["sasl.username"], config["sasl.password"]) == ("connector-7", "cp")


def test_a_key_store_override_without_a_protocol_override_is_the_clients_identity(tmp_path: Path) -> None:
    worker_pem, connector_pem = self_signed(tmp_path, "worker"), self_signed(tmp_path, "connector")
    config = _task_producer_config(
        {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
         "ssl.truststore.location": str(worker_pem.certificate),
         "ssl.keystore.type": "PEM", "ssl.keystore.location": str(worker_pem.keystore)},
        {"tls": "1", "producer.override.ssl.keystore.type": "PEM",
         "producer.override.ssl.keystore.location": str(connector_pem.keystore)})
    assert config["security.protocol"] == "SSL"
    assert config["ssl.certificate.pem"].strip() == connector_pem.certificate.read_text().strip()
    assert config["ssl.ca.pem"].strip() == worker_pem.certificate.read_text().strip()  # the worker's trust kept


def test_a_principal_override_the_protocol_would_not_read_fails_the_task_naming_it() -> None:
    """Never half-applied: on a PLAINTEXT worker a lone sasl.jaas.config override would run the task as no
    principal at all, so the task fails naming the key instead."""
    worker_config = DistributedWorkerConfig({"group.id": "g", "config.storage.topic": "c",
                                             "offset.storage.topic": "o", "status.storage.topic": "s",
                                             "bootstrap.servers": "127.0.0.1:1"})
    listener, producers = RecordingStatusListener(), _RealProducers()
    worker = Worker("w1", MemoryOffsetStore(), Plugins(), ConnectMetrics.create(CollectorRegistry()), listener,
                    worker_config.producer_config(), producer_factory=producers, override_policy=parse_policy("All"),
                    producer_properties=worker_config.client_properties("producer"))
    connector = {"connector.class": "SequenceSourceConnector", "topic": "t",
                 "producer.override.sasl.jaas.config": "x required;"}
    task = ConnectorTaskId("c", 0)
    task_class = f"{SequenceSourceTask.__module__}.SequenceSourceTask"
    assert not worker.start_task(task, connector, {"topic": "t", "task.class": task_class}, TargetState.STARTED)
    trace = listener.last(task).trace or ""  # type: ignore[union-attr]
    assert "producer.override.sasl.jaas.config has no effect with security.protocol PLAINTEXT" in trace
    assert not producers.configs
