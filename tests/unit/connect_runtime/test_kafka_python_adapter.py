"""The kafka-python adapter refuses, at import, a kafka-python it was not written for.

The coordinator itself (JoinGroup, SyncGroup, heartbeats) runs against a broker in
tests/integration/test_kafka_membership.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from connect_runtime.runtime.coordination import kafka_python_adapter as adapter

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("installed", ["2.2.15", "3.1.0", "3.10.1", "4.0.0rc1", "unknown"])
def test_an_unsupported_version_fails_naming_the_installed_and_the_supported_versions(installed: str) -> None:
    with pytest.raises(adapter.UnsupportedKafkaPython) as failure:
        adapter.check_kafka_python_version(installed)
    message = str(failure.value)
    assert f"kafka-python {installed} is installed" in message
    assert "kafka-python>=3.0,<3.1" in message


@pytest.mark.parametrize("installed", ["3.0.0", "3.0.12", "3.0.13.dev1"])
def test_a_supported_version_passes(installed: str) -> None:
    adapter.check_kafka_python_version(installed)


def test_importing_the_adapter_under_another_kafka_python_fails_with_the_version_message() -> None:
    code = ("import kafka; kafka.__version__ = '3.1.0'; "
            "import connect_runtime.runtime.coordination.kafka_python_adapter")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode != 0
    assert "UnsupportedClientLibrary" in result.stderr
    assert "kafka-python 3.1.0 is installed" in result.stderr
    assert ">=3.0,<3.1" in result.stderr


def test_the_installed_coordinator_has_every_internal_the_adapter_relies_on() -> None:
    from kafka.coordinator.base import BaseCoordinator

    assert adapter.missing_internals(BaseCoordinator) == []


def test_a_coordinator_with_a_missing_or_changed_internal_is_reported() -> None:
    from kafka.coordinator.base import BaseCoordinator

    class Changed(BaseCoordinator):  # type: ignore[misc]
        _do_join_and_sync_async = None  # gone

        def _handle_heartbeat_response(self, response: Any) -> None:  # lost its send_time
            """A release that dropped the send time."""

        def _on_join_complete_async(self, generation: int, member_id: str, protocol: str,  # no longer async
                                    member_assignment_bytes: bytes) -> None:
            """A release that made the hook synchronous."""

    problems = adapter.missing_internals(Changed)
    assert len(problems) == 3
    assert "_do_join_and_sync_async()" in problems
    assert ("_handle_heartbeat_response(self, response) (expected _handle_heartbeat_response(self, response, "
            "send_time))") in problems
    assert ("_on_join_complete_async(self, generation, member_id, protocol, member_assignment_bytes) (expected "
            "async _on_join_complete_async(self, generation, member_id, protocol, member_assignment_bytes))"
            ) in problems


def test_settings_use_kafka_pythons_name_for_the_rebalance_timeout() -> None:
    settings = adapter.CoordinatorSettings("g", 6000, 1000, 45_000, retry_backoff_ms=50, request_timeout_ms=9000)
    assert settings.coordinator_config() == {
        "group_id": "g", "session_timeout_ms": 6000, "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 45_000, "retry_backoff_ms": 50, "request_timeout_ms": 9000}
