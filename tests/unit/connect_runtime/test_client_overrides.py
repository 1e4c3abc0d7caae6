"""``producer.override.*`` & co under ``connector.client.config.override.policy``, and the refused keys.

The task producer is a FakeProducer (tests/support/fakes.py) so the test sees the exact librdkafka
config the worker built; the override reaching a real broker is in
tests/integration/test_declared_keys_integration.py.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from connect_runtime.api.client_overrides import ALLOWLIST_DEFAULT, OverridePolicy, parse_policy
from connect_runtime.api.errors import BadRequestError, ConfigError
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.worker import connector_validation
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.worker import Worker
from connect_runtime.runtime.worker_config import DistributedWorkerConfig
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.sequence_source import SequenceSourceConnector
from tests.support.fakes import FakeProducer
from tests.unit.connect_runtime.test_worker_connectors import CLASS, RecordingConnector

WORKER = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}


@pytest.mark.parametrize(("name", "canonical"), [
    ("All", "All"), ("none", "None"), ("PRINCIPAL", "Principal"), ("Allowlist", "Allowlist"),
    ("org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy", "All"),
    ("org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy", "None"),
    ("org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy", "Principal"),
    ("org.apache.kafka.connect.connector.policy.AllowlistConnectorClientConfigOverridePolicy", "Allowlist"),
])
def test_policy_names_are_connects(name: str, canonical: str) -> None:
    assert parse_policy(name).name == canonical


def test_each_policy_allows_what_connect_allows() -> None:
    keys = ["linger.ms", "sasl.jaas.config", "sasl.mechanism", "security.protocol", "compression.type"]
    allowed = {name: [k for k in keys if parse_policy(name, ["compression.type"]).allows(k)]
               for name in ("All", "None", "Principal", "Allowlist")}
    assert allowed == {"All": keys, "None": [],
                       "Principal": ["sasl.jaas.config", "sasl.mechanism", "security.protocol"],
                       "Allowlist": ["compression.type"]}


def test_worker_config_defaults_to_the_tuning_allowlist_and_refuses_an_unknown_policy() -> None:
    """KIP-1188's Allowlist by default (issue 27), with tuning keys only: no host, principal, file or class."""
    default = DistributedWorkerConfig(WORKER).override_policy
    assert default == OverridePolicy("Allowlist", frozenset(ALLOWLIST_DEFAULT))
    assert default.allows("linger.ms") and default.allows("fetch.min.bytes")
    for key in ("bootstrap.servers", "security.protocol", "sasl.jaas.config", "sasl.login.callback.handler.class",
                "ssl.keystore.location", "client.id", "transactional.id", "interceptor.classes"):
        assert not default.allows(key), key
    assert DistributedWorkerConfig({**WORKER, "connector.client.config.override.allowlist": ""}).override_policy \
        == OverridePolicy("Allowlist", frozenset())  # Kafka's own default: nothing
    assert DistributedWorkerConfig({**WORKER, "connector.client.config.override.policy": "All"}).override_policy \
        .allows("bootstrap.servers")  # the old default, back on request
    config = DistributedWorkerConfig({**WORKER, "connector.client.config.override.policy": "Allowlist",
                                      "connector.client.config.override.allowlist": "linger.ms, acks"})
    assert config.override_policy == OverridePolicy("Allowlist", frozenset({"linger.ms", "acks"}))
    with pytest.raises(ConfigError, match=r"connector\.client\.config\.override\.policy"):
        DistributedWorkerConfig({**WORKER, "connector.client.config.override.policy": "Some"})


def test_worker_config_exactly_once_source_support() -> None:
    assert not DistributedWorkerConfig({**WORKER, "exactly.once.source.support": "preparing"}) \
        .exactly_once_source_enabled
    assert DistributedWorkerConfig({**WORKER, "exactly.once.source.support": "Enabled"}).exactly_once_source_enabled
    with pytest.raises(ConfigError, match=r"exactly\.once\.source\.support"):
        DistributedWorkerConfig({**WORKER, "exactly.once.source.support": "on"})


def test_override_keys_never_reach_the_worker_clients_as_plain_keys() -> None:
    config = DistributedWorkerConfig({**WORKER, "connector.client.config.override.policy": "None"})
    assert not any(k.startswith("connector.") for k in config.producer_config())


class _Producers:
    """A producer factory that records each config and hands out FakeProducers."""

    def __init__(self) -> None:
        self.configs: list[dict[str, Any]] = []
        self.built = threading.Event()

    def __call__(self, config: Mapping[str, Any]) -> FakeProducer:
        self.configs.append(dict(config))
        self.built.set()
        return FakeProducer(config)


def _worker(policy: OverridePolicy, producers: _Producers,
            listener: RecordingStatusListener) -> Worker:
    return Worker("w1", MemoryOffsetStore(), Plugins(), ConnectMetrics.create(CollectorRegistry()), listener,
                  {"bootstrap.servers": "127.0.0.1:1", "linger.ms": "10"}, producer_factory=producers,
                  override_policy=policy)


def test_producer_overrides_reach_the_task_producer_in_librdkafka_names() -> None:
    producers, listener = _Producers(), RecordingStatusListener()
    worker = _worker(OverridePolicy("All"), producers, listener)
    connector = {"connector.class": CLASS, "producer.override.linger.ms": "250",
                 "producer.override.max.request.size": "2000000", "consumer.override.fetch.min.bytes": "5"}
    task = ConnectorTaskId("c", 0)
    try:
        assert worker.start_task(task, connector, {"topic": "t", "task.class": _task_class()}, TargetState.STARTED)
        assert producers.built.wait(10)
    finally:
        worker.stop_tasks([task], 5)
    config = producers.configs[0]
    assert config["linger.ms"] == "250" and config["message.max.bytes"] == "2000000"
    assert "fetch.min.bytes" not in config and not any("override" in k for k in config)


def test_a_refused_override_fails_the_connector_and_the_task_naming_the_key() -> None:
    producers, listener = _Producers(), RecordingStatusListener()
    worker = _worker(parse_policy("Principal"), producers, listener)
    connector = {"connector.class": CLASS, "producer.override.sasl.jaas.config": "x required;",
                 "producer.override.linger.ms": "250"}
    assert not worker.start_connector("c", connector, TargetState.STARTED, lambda name: None)
    assert listener.state("c") is State.FAILED
    trace = listener.last("c").trace or ""  # type: ignore[union-attr]
    assert "The 'Principal' policy does not allow 'linger.ms'" in trace and "producer.override.linger.ms" in trace
    task = ConnectorTaskId("c", 0)
    assert not worker.start_task(task, connector, {"topic": "t", "task.class": _task_class()}, TargetState.STARTED)
    assert listener.state(task) is State.FAILED and not producers.configs


def test_tasks_max_enforce_false_runs_the_extra_tasks() -> None:
    worker = _worker(OverridePolicy(), _Producers(), RecordingStatusListener())
    worker.start_connector("lenient", {"connector.class": CLASS, "extra.tasks": "1", "tasks.max.enforce": "false"},
                           TargetState.STARTED, lambda name: None)
    assert len(worker.connector_task_configs("lenient", 2)) == 3
    assert RecordingConnector.instances


@pytest.mark.parametrize(("key", "value"), [
    ("key.converter", "org.apache.kafka.connect.json.JsonConverter"),
    ("offsets.storage.topic", "mine"), ("topic.creation.groups", "g"), ("transaction.boundary", "connector"),
    ("exactly.once.support", "required"), ("producer.override.linger.ms", "5"),
])
def test_rest_validation_refuses_unsupported_keys(key: str, value: str) -> None:
    """PUT .../config/validate lists the error on the key; a create/update answers 400 with it."""
    config = {"name": "seq", "connector.class": "SequenceSourceConnector", "topic": "t", key: value}
    infos = connector_validation.validate(SequenceSourceConnector(), config, parse_policy("None"))
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos.configs if c["value"]["errors"]}
    assert list(errors) == [key] and infos.error_count == 1
    with pytest.raises(BadRequestError, match=key.replace(".", r"\.")):
        connector_validation.raise_if_invalid(infos)


def _task_class() -> str:
    from connect_runtime.testing.sequence_source import SequenceSourceTask

    return f"{SequenceSourceTask.__module__}.SequenceSourceTask"
