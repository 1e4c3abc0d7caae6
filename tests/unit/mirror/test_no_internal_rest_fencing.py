"""Without ``dedicated.mode.enable.internal.rest`` a follower cannot ask the leader for a fencing: its
exactly-once tasks wait and it says why with Java's message (the herder retries)."""

from __future__ import annotations

from connect_runtime.api.errors import ConnectError
from connect_runtime.storage.config_records import SessionKey
from mirror.maker.rest_wiring import NoInternalRestForwarder


def test_a_fencing_request_without_internal_rest_is_refused_with_javas_advice() -> None:
    answers: list[ConnectError | None] = []
    NoInternalRestForwarder().fence("http://leader:8083/A/B", "MirrorSourceConnector",
                                    SessionKey(b"k", "HmacSHA256", 1), answers.append)
    [error] = answers
    assert error is not None
    assert "required for exactly-once source tasks" in str(error)
    assert "dedicated.mode.enable.internal.rest" in str(error)
