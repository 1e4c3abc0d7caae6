"""A refused transactional id names the ACL to grant (the Kafka tier shows it end to end:
tests/kafka/test_kafka_minimal_acls.py); other init errors keep their Kafka text."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from connect_runtime.storage.fenced_writer import _init_error  # noqa: PLC2701 (a unit test of this module's own internal)


def test_a_refused_transactional_id_names_the_acl() -> None:
    exc = KafkaException(KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id "
                                    "authorization failed.", fatal=True))
    error = _init_error(exc, "connect-cluster-A-mm2")
    assert "WRITE and DESCRIBE on TRANSACTIONAL_ID connect-cluster-A-mm2" in str(error)
    assert "--transactional-id connect-cluster-A-mm2" in str(error)
    assert error.__cause__ is exc


def test_another_init_error_keeps_its_text() -> None:
    exc = KafkaException(KafkaError(KafkaError._TIMED_OUT, "init timed out"))
    error = _init_error(exc, "connect-cluster-A-mm2", "fencing")
    assert str(error) == "fencing transactional id connect-cluster-A-mm2: init timed out"
