"""The group client (kafka-python): it refuses, at import, a kafka-python it was not written for; its config
comes from the worker's; kafka-python's connection errors are logged once per kind, without a traceback.

The coordinator itself (JoinGroup, SyncGroup, heartbeats) runs against a broker in
tests/integration/test_kafka_membership.py.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from connect_runtime.clients import group_client
from connect_runtime.clients.group_client import (
    KAFKA_PYTHON_FILTER,
    KafkaPythonRepeatFilter,
    limit_kafka_python_logs,
)
from connect_runtime.runtime.worker_config import DistributedWorkerConfig

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("installed", ["2.2.15", "3.1.0", "3.10.1", "4.0.0rc1", "unknown"])
def test_an_unsupported_version_fails_naming_the_installed_and_the_supported_versions(installed: str) -> None:
    with pytest.raises(group_client.UnsupportedKafkaPython) as failure:
        group_client.check_kafka_python_version(installed)
    message = str(failure.value)
    assert f"kafka-python {installed} is installed" in message
    assert "kafka-python>=3.0,<3.1" in message


@pytest.mark.parametrize("installed", ["3.0.0", "3.0.12", "3.0.13.dev1"])
def test_a_supported_version_passes(installed: str) -> None:
    group_client.check_kafka_python_version(installed)


def test_importing_the_group_client_under_another_kafka_python_fails_with_the_version_message() -> None:
    code = ("import kafka; kafka.__version__ = '3.1.0'; "
            "import connect_runtime.clients.group_client")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode != 0
    assert "UnsupportedClientLibrary" in result.stderr
    assert "kafka-python 3.1.0 is installed" in result.stderr
    assert ">=3.0,<3.1" in result.stderr


def test_the_installed_coordinator_has_every_internal_the_group_client_relies_on() -> None:
    from kafka.coordinator.base import BaseCoordinator

    assert group_client.missing_internals(BaseCoordinator) == []


def test_a_coordinator_with_a_missing_or_changed_internal_is_reported() -> None:
    from kafka.coordinator.base import BaseCoordinator

    class Changed(BaseCoordinator):  # type: ignore[misc]
        _do_join_and_sync_async = None  # gone

        def _handle_heartbeat_response(self, response: Any) -> None:  # lost its send_time
            """A release that dropped the send time."""

        def _on_join_complete_async(self, generation: int, member_id: str, protocol: str,  # no longer async
                                    member_assignment_bytes: bytes) -> None:
            """A release that made the hook synchronous."""

    problems = group_client.missing_internals(Changed)
    assert len(problems) == 3
    assert "_do_join_and_sync_async()" in problems
    assert ("_handle_heartbeat_response(self, response) (expected _handle_heartbeat_response(self, response, "
            "send_time))") in problems
    assert ("_on_join_complete_async(self, generation, member_id, protocol, member_assignment_bytes) (expected "
            "async _on_join_complete_async(self, generation, member_id, protocol, member_assignment_bytes))"
            ) in problems


def test_settings_use_kafka_pythons_name_for_the_rebalance_timeout() -> None:
    settings = group_client.CoordinatorSettings("g", 6000, 1000, 45_000, retry_backoff_ms=50, request_timeout_ms=9000)
    assert settings.coordinator_config() == {
        "group_id": "g", "session_timeout_ms": 6000, "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 45_000, "retry_backoff_ms": 50, "request_timeout_ms": 9000}


def test_the_group_client_config_takes_the_admin_clients_connection_and_security_settings() -> None:
    config = DistributedWorkerConfig({
        "bootstrap.servers": "h:9092", "group.id": "connect-cluster", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s", "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="u" password="p";'})
    assert config.group_client_config("coordinator") == {
        "bootstrap_servers": "h:9092", "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
        "client_id": "connect-connect-cluster-coordinator", "sasl_plain_username": "u", "sasl_plain_password": "p"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _error(logger: logging.Logger, node: int) -> None:
    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        logger.exception("Error sending request to node %d: [Errno 104] Connection reset by peer", node)


def test_repeats_are_held_back_and_counted_tracebacks_dropped_info_untouched(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    logger = logging.getLogger("kafka.test_net")
    gate = KafkaPythonRepeatFilter(interval_s=60, clock=clock)
    logger.addFilter(gate)
    try:
        with caplog.at_level(logging.INFO, logger="kafka.test_net"):
            for node in range(40):  # the same line, another node id each time: one kind
                _error(logger, node)
                clock.now += 0.1
            logger.info("(Re-)joining group g")
            logger.info("(Re-)joining group g")
            clock.now += 60
            _error(logger, 7)
    finally:
        logger.removeFilter(gate)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        "Error sending request to node 0: [Errno 104] Connection reset by peer",
        "Error sending request to node 7: [Errno 104] Connection reset by peer (39 more like this in the last 60s)"]
    assert all(r.exc_info is None for r in errors) and "Traceback" not in caplog.text
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == ["(Re-)joining group g"] * 2


def test_every_kafka_python_logger_gets_the_filter_once() -> None:
    limit_kafka_python_logs()
    limit_kafka_python_logs()
    names = [n for n, lg in logging.Logger.manager.loggerDict.items()
             if n.startswith("kafka.") and isinstance(lg, logging.Logger)]
    assert "kafka.coordinator" in names and "kafka.cluster" in names
    for name in names:
        assert logging.getLogger(name).filters.count(KAFKA_PYTHON_FILTER) == 1, name
    assert KAFKA_PYTHON_FILTER not in logging.getLogger("connect_runtime").filters
