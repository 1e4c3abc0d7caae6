"""errors.tolerance as the task runtime applies it to records the target refuses."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from connect_runtime.api.errors import ConnectError
from connect_runtime.runtime.task.error_policy import ErrorPolicy


def test_policy_from_the_connector_keys() -> None:
    assert ErrorPolicy.from_config({}) == ErrorPolicy(False, False, False)
    assert ErrorPolicy.from_config({"errors.tolerance": "all", "errors.log.enable": "true",
                                    "errors.log.include.messages": "TRUE"}) == ErrorPolicy(True, True, True)
    with pytest.raises(ConnectError, match=r"errors\.tolerance must be 'none' or 'all', got 'some'"):
        ErrorPolicy.from_config({"errors.tolerance": "some"})
    with pytest.raises(ConnectError, match=r"errors\.log\.enable must be true or false"):
        ErrorPolicy.from_config({"errors.log.enable": "yes"})


def test_fatal_producer_errors_are_never_tolerated() -> None:
    """A fatal error fails every later record too: tolerating it would skip everything after it."""
    policy = ErrorPolicy(tolerate=True)
    fatal = KafkaError(KafkaError._FATAL, "fenced", fatal=True)
    assert not policy.tolerates(fatal) and not policy.tolerates(KafkaException(fatal))
    assert policy.tolerates(KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)))
    assert not ErrorPolicy().tolerates(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
