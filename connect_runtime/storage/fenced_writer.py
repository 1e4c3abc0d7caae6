"""Writes that a newer writer can fence: transactional producers used for fencing, not for atomicity alone.

Kafka fences producers by ``transactional.id``: ``init_transactions`` with an id bumps the id's
producer epoch on the transaction coordinator, aborts the previous holder's open transaction, and
from then on every produce or commit of the previous holder fails with PRODUCER_FENCED / ``_FENCED``.
Connect uses this twice (docs/exactly-once.md):

* **the leader's config-topic writes** (:class:`TransactionalWriter`): each worker that becomes the
  group leader initialises the one leader transactional id, so a stale leader (one that lost its
  membership but does not know yet) can no longer write connector or task configs;
* **zombie source tasks** (:func:`fence_producers`, KIP-618): before a new generation of a
  connector's tasks starts, the leader initialises each task's transactional id once, which is
  exactly what Java's ``Admin.fenceProducers`` does (confluent-kafka has no such admin call).

Readers of a topic written this way should use ``isolation.level=read_committed`` (librdkafka's
default): the records of a transaction aborted by fencing then stay invisible on Apache Kafka.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.errors import to_connect_error
from connect_runtime.clients.factory import new_producer

logger = logging.getLogger(__name__)

#: Settings every fencing producer needs, whatever the user's producer config says.
_FORCED = {"acks": "all", "enable.idempotence": "true"}


def leader_transactional_id(group_id: str) -> str:
    """The config-topic writer's id of a Connect group's leader (Java's ``connect-cluster-<group.id>``)."""
    return f"connect-cluster-{group_id}"


def task_transactional_id(group_id: str, connector: str, task: int) -> str:
    """A source task's transactional id (KIP-618, Java's ``<group.id>-<connector>-<task>``): the one
    place it is computed, for the task's producer and for zombie fencing alike."""
    return f"{group_id}-{connector}-{task}"


class FencedError(ConnectError):
    """A newer holder of this transactional id exists: this writer must stop writing for good."""


def _kafka_error(exc: KafkaException) -> KafkaError | None:
    return exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None


def _unwrap(exc: SystemError) -> KafkaException:
    """The KafkaException behind a SystemError: when a transactional call fails, confluent-kafka may run a
    pending delivery callback while the call's exception is already set, and CPython reports that as a
    SystemError caused by the original exception. Anything else is re-raised as it is."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, KafkaException):
        return cause
    raise exc


def _init_error(exc: KafkaException, transactional_id: str, doing: str = "initialising") -> ConnectError:
    """The error of ``init_transactions``; a refused transactional id names the ACL the principal lacks, so
    an operator does not have to decode TRANSACTIONAL_ID_AUTHORIZATION_FAILED (docs/acls.md)."""
    error = _kafka_error(exc)
    if error is not None and error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        result = ConnectError(
            f"{doing} transactional id {transactional_id}: the broker refused it (TRANSACTIONAL_ID_AUTHORIZATION_"
            f"FAILED); grant this worker's principal WRITE and DESCRIBE on TRANSACTIONAL_ID {transactional_id} "
            f"(kafka-acls --add --allow-principal User:<name> --operation Write --operation Describe "
            f"--transactional-id {transactional_id}), see docs/acls.md")
        result.__cause__ = exc
        return result
    return to_connect_error(exc, f"{doing} transactional id {transactional_id}")


def _is_fenced(error: KafkaError | None) -> bool:
    return error is not None and error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                                    KafkaError.INVALID_PRODUCER_EPOCH)


def _producer(producer_config: Mapping[str, Any], transactional_id: str) -> Producer:
    config = {k: v for k, v in producer_config.items() if k != "transactional.id"}
    return new_producer({**config, **_FORCED, "transactional.id": transactional_id})


class TransactionalWriter:
    """One topic partition written in transactions by the current holder of ``transactional_id``.

    Creating it fences every earlier holder (``init_transactions``). :meth:`write` puts a batch of
    records in one transaction: a reader sees all of them or none (so a leader that dies between a
    connector's task records and their commit record leaves nothing half-written). Once fenced, the
    writer is dead: every later :meth:`write` raises :class:`FencedError` without touching the broker.
    """

    def __init__(self, topic: str, producer_config: Mapping[str, Any], transactional_id: str,
                 timeout_s: float = 30.0, partition: int = 0) -> None:
        self.topic = topic
        self.transactional_id = transactional_id
        self._partition = partition
        self._fenced = False
        self._producer = _producer(producer_config, transactional_id)
        try:
            self._producer.init_transactions(timeout_s)
        except KafkaException as exc:
            try:
                self._producer.flush(0)
            except KafkaException:
                pass  # a fatal producer error is raised again by flush: the one to report is init's
            raise _init_error(exc, transactional_id) from exc
        logger.info("Transactional writer for %s initialised with transactional id %s (earlier holders are "
                    "fenced)", topic, transactional_id)

    @property
    def fenced(self) -> bool:
        return self._fenced

    def write(self, records: Sequence[tuple[bytes, bytes | None]], timeout_s: float = 30.0) -> int | None:
        """All of ``records`` in one committed transaction. Raises FencedError or ConnectError.

        Returns the offset of the last record (None if the broker did not report it), so the caller
        can wait for exactly that record to be read back rather than for a whole read-to-end round.
        """
        if self._fenced:
            raise FencedError(f"transactional id {self.transactional_id} is held by a newer writer")
        # commit_transaction succeeds only if every record was delivered, so the delivery callback only
        # notes offsets: it must not raise (confluent-kafka turns an exception raised in a callback run
        # inside commit_transaction into SystemError, see _unwrap).
        offsets: list[int] = []

        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                offsets.append(msg.offset())

        producer = self._producer
        try:
            try:
                producer.begin_transaction()
                for key, value in records:
                    producer.produce(self.topic, value=value, key=key, partition=self._partition,
                                     on_delivery=delivered)
                producer.commit_transaction(timeout_s)
            except SystemError as exc:
                raise _unwrap(exc) from exc
        except KafkaException as exc:
            error = _kafka_error(exc)
            if _is_fenced(error) or (error is not None and error.fatal()):
                self._fenced = True
                logger.error("Writes to %s with transactional id %s were fenced by a newer writer: %s",
                             self.topic, self.transactional_id, error)
                raise FencedError(f"transactional id {self.transactional_id} was fenced: {error}") from exc
            if error is not None and error.txn_requires_abort():
                try:
                    producer.abort_transaction(timeout_s)
                except KafkaException as abort_exc:
                    logger.warning("Aborting a transaction on %s failed: %s", self.topic, abort_exc)
            raise to_connect_error(exc, f"transactional write to topic {self.topic}") from exc
        return max(offsets) if len(offsets) == len(records) else None

    def close(self) -> None:
        self._producer.flush(5)


def fence_producers(transactional_ids: Iterable[str], producer_config: Mapping[str, Any],
                    timeout_s: float = 30.0, parallelism: int = 8) -> None:
    """Fence every current holder of each id (Java's ``Admin.fenceProducers``). Raises ConnectError.

    Each id is initialised once by a short-lived producer, which bumps its epoch and aborts any open
    transaction of the previous holder; the producer is then closed without writing anything.
    """
    ids = list(transactional_ids)
    if not ids:
        return
    began = time.monotonic()

    def fence(transactional_id: str) -> None:
        producer = _producer(producer_config, transactional_id)
        try:
            producer.init_transactions(timeout_s)
        except KafkaException as exc:
            raise _init_error(exc, transactional_id, "fencing") from exc
        finally:
            producer.flush(0)

    with ThreadPoolExecutor(max_workers=min(parallelism, len(ids)), thread_name_prefix="fence") as pool:
        for future in [pool.submit(fence, i) for i in ids]:
            future.result()
    logger.info("Fenced %d transactional id(s) in %.2f s", len(ids), time.monotonic() - began)
