"""Translation of confluent-kafka errors into the runtime's exception tree.

Everything above the client layer handles :class:`~connect_runtime.api.errors.ConnectError` only, so
every call into confluent-kafka that can raise is wrapped here. Whether the caller may retry comes from
librdkafka itself (``KafkaError.retriable()``), plus the transport-level codes librdkafka does not flag
as retriable although a later attempt usually succeeds (timeouts, broker down, no leader yet).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import KafkaError, KafkaException

from connect_runtime.api.errors import ConnectError, RetriableError

#: Codes treated as transient although librdkafka does not always mark them retriable.
_TRANSIENT_CODES = frozenset({
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._MSG_TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.NETWORK_EXCEPTION,
})


def kafka_error_of(exc: BaseException | KafkaError) -> KafkaError | None:
    """The :class:`KafkaError` carried by ``exc`` (a KafkaException, or a bare KafkaError), if any."""
    if isinstance(exc, KafkaError):
        return exc
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def is_retriable(error: KafkaError) -> bool:
    if error.fatal():
        return False
    return bool(error.retriable()) or error.code() in _TRANSIENT_CODES


def to_connect_error(exc: BaseException | KafkaError, context: str | None = None) -> ConnectError:
    """The ConnectError for a client exception or a bare KafkaError (futures and callbacks hand those).

    A ConnectError passes through unchanged. ``context`` (e.g. "creating topic x") prefixes the message.
    The result is chained to ``exc`` when it is an exception; callers still write ``raise ... from exc``.
    """
    if isinstance(exc, ConnectError):
        return exc
    error = kafka_error_of(exc)
    detail = error.str() if error is not None else str(exc)
    message = f"{context}: {detail}" if context else detail
    retriable = error is not None and is_retriable(error)
    result = RetriableError(message) if retriable else ConnectError(message)
    if isinstance(exc, BaseException):
        result.__cause__ = exc
    return result


@contextmanager
def map_kafka_errors(context: str | None = None) -> Iterator[None]:
    """Re-raise confluent-kafka errors raised in the block as ConnectError / RetriableError, chained."""
    try:
        yield
    except KafkaException as exc:  # KafkaError is not an exception class; futures wrap it in this
        raise to_connect_error(exc, context) from exc
