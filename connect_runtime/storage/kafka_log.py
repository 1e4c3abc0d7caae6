"""KafkaBasedLog: a compacted topic used as a replicated log of key/value records (Connect's util).

The config, status and offsets stores of a Connect cluster are each one KafkaBasedLog. On ``start`` the
topic is created if missing (compacted, with the configured partitions and replication factor), then
read from the beginning to its end before ``start`` returns, then followed by a background thread that
hands every record to the consumer callback, in log order per partition.

How "the end" is found. Java asks ListOffsets for the end offsets and consumes up to them. We instead
take the end from the *fetch responses*, through :func:`connect_runtime.clients.log_reader.read_to_end`:
the consumer runs with ``enable.partition.eof=true``, and a partition is at its end when librdkafka
reports ``_PARTITION_EOF``, i.e. a fetch response came back whose high watermark (last stable offset
under read_committed) equals our position. That is exact on Apache Kafka and also on brokers whose
ListOffsets "latest" is wrong (Tansu returns the base offset of the last batch + 1, so a
ListOffsets-based reader would stop early or wait for ever). It costs one empty fetch round trip per
partition, which is why the consumer's ``fetch.wait.max.ms`` defaults to 100 ms.

``read_to_end`` (a barrier: every record written before the call has been consumed when it returns)
is one such read, run by the log thread in rounds: it re-assigns every partition at its current
position, which discards prefetched data and starts new fetches, and librdkafka reports EOF again once
a fetch issued *after* that reaches the high watermark. Records acknowledged before the call are below
that watermark. Barriers requested during a round wait for the next one. Between rounds the thread
follows the topic; a log built with ``idle_rest_s`` rests at its end (below).

The consumer keeps librdkafka's default ``isolation.level=read_committed`` unless the caller sets it:
without transactions it reads the same as read_uncommitted (Java's default), and with transactional
writers (exactly-once offsets, the fencing leader) aborted and open writes stay invisible.

Partitions are assigned, not subscribed: there is no consumer group. librdkafka still wants a
``group.id``, so a unique throwaway id is set and nothing is ever committed.

Writes are asynchronous with a callback, or synchronous (wait for the acknowledgement); a full local
producer queue makes a write wait, as Java's blocking send does. With ``transactional_id`` set, writes
go through a transactional producer, one transaction per write (used by the leader for fencing: a
zombie leader's writes fail with a fenced error). Delivery callbacks run on a producer thread of their
own, so they never wait for the consumer thread's fetch cycle.

Resting at the end
------------------
A log's consumer at the end of its topic sends the next fetch as soon as the broker answers the last
one, and the broker holds an empty fetch only ``fetch.wait.max.ms`` (100 ms here, so that a read-to-end
barrier sees the end quickly). That is ten fetches a second per log for as long as the worker runs, each
listing every partition of the topic (librdkafka sends full fetches, no KIP-227 sessions): 25 for the
offsets topic. A node's herders follow six such logs on the two clusters: without a rest they are 59 of
the 82 requests a second an idle node sends its brokers (bench/results.md, what an idle node asks of
the brokers), though not a share of the brokers' CPU that separates from the noise.

So a log built with a rest (:class:`IdleRest`) lets go of its partitions once a follow fetch found the
end and brought nothing, and takes them back at its own positions after the rest, or at once when
someone waits for the log: a read-to-end barrier, a read-your-writes wait, ``stop``. Assigning at known
positions fetches at once (no offset lookup) and reports the end again, so every rest is followed by one
fetch that reads what other workers wrote meanwhile. Pausing the partitions instead does not do: a
paused follower was measured to fetch next to never, since after a resume librdkafka had not fetched
before the next empty consume paused it again. Barriers and writes are as fast as without a rest; what
a rest delays is how soon the node sees a record *another* worker wrote while nobody here waited for
it: up to the rest later. Only the offsets log takes one (:data:`LOG_IDLE_REST_S`): its readers go
through barriers (task start, REST offsets), and with 25 partitions its fetches are the largest. The
config and status logs do not: followers act on what the leader writes, and the leader on the statuses
it reads (a clean release by a task's last owner: with a status follower resting, a worker's view of a
newer owner's RUNNING comes too late for it, which tests/integration/test_config_status_store.py
catches).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.clients.errors import map_kafka_errors, to_connect_error
from connect_runtime.clients.factory import close_producer, learn_leaders, new_consumer, new_producer
from connect_runtime.clients.log_reader import read_to_end
from connect_runtime.logging_context import carry_context

logger = logging.getLogger(__name__)

_BATCH = 10_000
_POLL_S = 0.1
_EOF = KafkaError._PARTITION_EOF

#: Consumer settings the log needs to work at all; they override the caller's.
_CONSUMER_FORCED = {
    "enable.partition.eof": "true",
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "auto.offset.reset": "earliest",
}
#: Consumer defaults the caller may override: fast EOF detection and a fast bulk read at start
#: (librdkafka's default queued.min.messages=100000 / fetch.queue.backoff.ms=1000 pause the fetcher
#: for a second every 100k records).
_CONSUMER_DEFAULTS = {
    "fetch.wait.max.ms": "100",
    "queued.min.messages": "1000000",
    "fetch.queue.backoff.ms": "10",
    "allow.auto.create.topics": "false",
}
#: Java's KafkaBasedLog producer writes with acks=all and in order; idempotence keeps order on retries.
_PRODUCER_DEFAULTS = {"acks": "all", "enable.idempotence": "true"}
#: The rest of the offsets log's follower at its end (see "Resting at the end").
LOG_IDLE_REST_S = 0.5


@dataclass(frozen=True, slots=True)
class LogRecord:
    """What the log hands its callbacks (and the stores built on it read): one record of its topic,
    consumed or just written."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


ConsumedCallback = Callable[[LogRecord], None]
#: Called once the write is acknowledged (error None) or failed (error set).
WriteCallback = Callable[[Exception | None, LogRecord | None], None]


def _record(msg: Message) -> LogRecord:
    return LogRecord(msg.topic() or "", msg.partition() or 0, msg.offset() or 0, msg.key(), msg.value(),
                     msg.timestamp()[1])


class KafkaBasedLog:
    """A compacted topic read to the end at start and followed afterwards.

    ``producer_config`` / ``consumer_config`` / ``admin_config`` are librdkafka configs (the factory in
    ``connect_runtime.clients`` builds them from worker properties). ``partitions`` and
    ``replication_factor`` apply when the topic has to be created. ``consumed`` runs on the log's own
    thread for every record read, including during the initial read. ``transactional_id``: one
    transaction per write; ``idle_rest_s``: the follower's rest at the end, 0 for none (module doc).
    """

    def __init__(self, topic: str, *, producer_config: Mapping[str, str], consumer_config: Mapping[str, str],
                 admin_config: Mapping[str, str], consumed: ConsumedCallback, partitions: int = 1,
                 replication_factor: int = 3, topic_config: Mapping[str, str] | None = None,
                 transactional_id: str | None = None, idle_rest_s: float = 0.0) -> None:
        self.topic = topic
        self._producer_config: dict[str, Any] = {**_PRODUCER_DEFAULTS, **producer_config}
        if transactional_id is not None:
            self._producer_config["transactional.id"] = transactional_id
        self._consumer_config: dict[str, Any] = {**_CONSUMER_DEFAULTS, **consumer_config, **_CONSUMER_FORCED,
                                                 "group.id": f"connect-log-{topic}-{uuid.uuid4().hex}"}
        for config in (self._producer_config, self._consumer_config):
            config.setdefault("error_cb", self._client_error)
        self._admin_config = dict(admin_config)
        self._consumed = consumed
        self._partitions_wanted = partitions
        self._replication_factor = replication_factor
        self._topic_config = dict(topic_config or {})
        self._transactional = transactional_id is not None
        #: None before start and after stop: a write then fails with ConnectError.
        self._producer: Producer | None = None
        self._txn_lock = threading.Lock()

        self._consumer: Consumer | None = None
        self._partitions: list[int] = []
        self._assignment: list[TopicPartition] = []
        self._positions: dict[int, int] = {}  # next offset to consume, per partition (under _consumed_cond)
        self._consumed_cond = threading.Condition()
        self._batch_consumed: Callable[[list[Message]], None] | None = None
        self._lock = threading.Lock()
        self._pending: list[Future[None]] = []
        self._round: list[Future[None]] | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._producer_thread: threading.Thread | None = None
        self._error_logged: dict[int, float] = {}
        self._idle = IdleRest(idle_rest_s)  # between follow fetches at the end

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def partitions(self) -> list[int]:
        """The topic's partitions (known once started)."""
        return list(self._partitions)

    def start(self, timeout_s: float = 120.0) -> None:
        """Create the topic if needed, read it to the end, then follow it. Raises ConnectError."""
        if self._thread is not None:
            raise ConnectError(f"log on topic {self.topic} already started")
        deadline = time.monotonic() + timeout_s
        logger.info("Starting KafkaBasedLog with topic %s", self.topic)
        admin = TopicAdmin(self._admin_config, timeout_s=min(30.0, timeout_s))
        admin.create_topic(self.topic, self._partitions_wanted, self._replication_factor, self._topic_config,
                           compacted=True)
        count = self._wait_for_partitions(admin, deadline)
        self._partitions = list(range(count))
        self._assignment = [TopicPartition(self.topic, p) for p in self._partitions]
        try:
            with map_kafka_errors(f"creating clients for topic {self.topic}"):
                producer = self._producer = new_producer(self._producer_config)
                if self._transactional:
                    producer.init_transactions(max(1.0, deadline - time.monotonic()))
                self._consumer = new_consumer(self._consumer_config)
            learn_leaders(self._consumer, [self.topic], max(0.1, min(5.0, deadline - time.monotonic())))
        except BaseException:  # a start that fails here (e.g. the cluster stopped answering) opens nothing
            self._close_clients()
            raise
        started: Future[None] = Future()
        self._round = [started]  # the first round reads every partition from its beginning
        self._stopping.clear()
        self._producer_thread = threading.Thread(target=carry_context(self._serve_producer), daemon=True,
                                                 name=f"kafka-log-producer-{self.topic}")
        self._producer_thread.start()
        self._thread = threading.Thread(target=carry_context(self._follow), daemon=True, name=f"kafka-log-{self.topic}")
        self._thread.start()
        try:
            started.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout as exc:
            self.stop()
            raise ConnectError(f"Timed out after {timeout_s}s reading topic {self.topic} to its end") from exc
        logger.info("Finished reading KafkaBasedLog for topic %s (%d partitions)", self.topic, count)

    def _wait_for_partitions(self, admin: TopicAdmin, deadline: float) -> int:
        while True:
            count = admin.describe_topics([self.topic]).get(self.topic, 0)
            if count > 0:
                return count
            if time.monotonic() >= deadline:
                raise ConnectError(f"Could not look up partition metadata for topic {self.topic} in the "
                                   "allotted period; it does not exist and could not be created")
            time.sleep(0.2)

    def stop(self) -> None:
        """Flush pending writes, stop following, close clients."""
        logger.info("Stopping KafkaBasedLog for topic %s", self.topic)
        if self._producer is not None:
            remaining = self._producer.flush(30)
            if remaining:
                logger.warning("%d writes to topic %s not acknowledged before stop", remaining, self.topic)
        self._stopping.set()
        self._idle.wake()
        for thread in (self._thread, self._producer_thread):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=30)
        self._thread = self._producer_thread = None
        self._close_clients()
        with self._lock:
            waiting = (self._round or []) + self._pending
            self._round, self._pending = None, []
        for future in waiting:
            if not future.done():
                future.set_exception(ConnectError(f"log on topic {self.topic} stopped"))

    def _close_clients(self) -> None:
        """Close the consumer and destroy the producer (what :meth:`stop` flushed is delivered)."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                consumer.close()
            except (KafkaException, RuntimeError) as exc:
                logger.warning("Closing the consumer of topic %s failed: %s", self.topic, exc)
        producer, self._producer = self._producer, None
        if producer is not None:
            close_producer(producer)

    # -- writing ---------------------------------------------------------------------------------

    def _serve_producer(self) -> None:
        """Delivery callbacks run here, so they never wait for the consumer thread's fetch cycle."""
        while not self._stopping.is_set():
            if (producer := self._producer) is None:
                return
            try:
                producer.poll(_POLL_S)
            except KafkaException as exc:  # fatal errors (e.g. fenced) also go to _client_error
                self._client_error(exc.args[0] if exc.args else KafkaError(KafkaError._FAIL))
                time.sleep(_POLL_S)

    def _client_error(self, err: KafkaError) -> None:
        """librdkafka's error_cb: connection trouble (it retries by itself) and fatal errors."""
        now = time.monotonic()
        if now - self._error_logged.get(err.code(), 0.0) > 60.0:  # a down broker repeats this every poll
            self._error_logged[err.code()] = now
            level = logging.ERROR if err.fatal() else logging.WARNING
            logger.log(level, "Client error on topic %s: %s", self.topic, err.str())

    def _require_producer(self) -> Producer:
        if self._producer is None:
            raise ConnectError(f"log on topic {self.topic} is not started")
        return self._producer

    def _produce(self, key: bytes | None, value: bytes | None, on_delivery: Callable[[Any, Any], None],
                 partition: int | None) -> None:
        producer = self._require_producer()
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        deadline = time.monotonic() + 30.0
        while True:
            try:
                with map_kafka_errors(f"writing to topic {self.topic}"):
                    producer.produce(self.topic, **kwargs)
                return
            except BufferError as exc:  # local queue full: wait for deliveries, as Java's send blocks
                if time.monotonic() >= deadline:
                    raise RetriableError(f"producer queue for topic {self.topic} stayed full") from exc
                producer.poll(0.05)

    def send(self, key: bytes | None, value: bytes | None, callback: WriteCallback | None = None,
             partition: int | None = None) -> None:
        """Write asynchronously; ``callback`` runs once acknowledged or failed."""
        if self._transactional:
            # One transaction per write: run it here and report through the callback like async sends.
            try:
                record = self.send_sync(key, value, partition=partition)
            except ConnectError as exc:
                self._call(callback, exc, None)
            else:
                self._call(callback, None, record)
            return

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                self._call(callback, to_connect_error(err, f"writing to topic {self.topic}"), None)
            else:
                self._call(callback, None, _record(msg))

        self._produce(key, value, delivered, partition)

    def _call(self, callback: WriteCallback | None, error: Exception | None,
              record: LogRecord | None) -> None:
        if callback is None:
            if error is not None:
                logger.error("Write to topic %s failed: %s", self.topic, error)
            return
        try:
            callback(error, record)
        except Exception:
            logger.exception("Write callback for topic %s raised", self.topic)

    def send_sync(self, key: bytes | None, value: bytes | None, timeout_s: float = 30.0,
                  partition: int | None = None) -> LogRecord:
        """Write and wait for the acknowledgement. Raises ConnectError on failure."""
        result: Future[LogRecord] = Future()

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                result.set_exception(to_connect_error(err, f"writing to topic {self.topic}"))
            else:
                result.set_result(_record(msg))

        if self._transactional:
            self._send_in_transaction(key, value, delivered, partition, timeout_s)
        else:
            self._produce(key, value, delivered, partition)
        try:
            return result.result(timeout=timeout_s)
        except FutureTimeout as exc:
            raise RetriableError(f"write to topic {self.topic} not acknowledged within {timeout_s}s") from exc

    def _send_in_transaction(self, key: bytes | None, value: bytes | None,
                             delivered: Callable[[Any, Any], None], partition: int | None,
                             timeout_s: float) -> None:
        producer = self._require_producer()
        with self._txn_lock:
            try:
                producer.begin_transaction()
                self._produce(key, value, delivered, partition)
                producer.commit_transaction(timeout_s)
            except KafkaException as exc:
                error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                if error is not None and error.txn_requires_abort():
                    try:
                        producer.abort_transaction(timeout_s)
                    except KafkaException as abort_exc:
                        logger.warning("Aborting the transaction on topic %s failed: %s", self.topic,
                                       abort_exc)
                raise to_connect_error(exc, f"transactional write to topic {self.topic}") from exc

    def flush(self, timeout_s: float = 30.0) -> None:
        remaining = self._require_producer().flush(timeout_s)
        if remaining:
            raise RetriableError(f"{remaining} writes to topic {self.topic} not acknowledged in {timeout_s}s")

    # -- reading --------------------------------------------------------------------------------

    def read_to_end_async(self) -> Future[None]:
        """A future completed once every record written before this call has been consumed."""
        future: Future[None] = Future()
        with self._lock:
            if self._thread is None:
                future.set_exception(ConnectError(f"log on topic {self.topic} is not started"))
            else:
                self._pending.append(future)
        self._idle.wake()
        return future

    def read_to_end(self, timeout_s: float = 30.0) -> None:
        """Block until every record written to the topic before this call has been consumed."""
        if threading.current_thread() is self._thread:
            raise ConnectError("read_to_end from the log's own thread (a consumed callback) would deadlock")
        future = self.read_to_end_async()
        try:
            future.result(timeout=timeout_s)
        except FutureTimeout as exc:
            raise RetriableError(f"Timed out after {timeout_s}s reading topic {self.topic} to its end") \
                from exc

    def _follow(self) -> None:
        """The log thread: read-to-end rounds while barriers wait for one, following the topic between."""
        consumer = self._consumer
        assert consumer is not None
        while not self._stopping.is_set():
            if self._round_due():
                self._read_round(consumer)
            elif self._follow_batch(consumer):
                self._idle.rest(consumer, self._next_positions, self._round_due)

    def _round_due(self) -> bool:
        """Whether a round is running, starting one for the barriers requested so far if none is."""
        with self._lock:
            if self._round is None and self._pending:
                self._round, self._pending = self._pending, []
            return self._round is not None

    def _next_positions(self) -> dict[tuple[str, int], int]:
        with self._consumed_cond:
            return {(self.topic, p): self._positions.get(p, OFFSET_BEGINNING) for p in self._partitions}

    def _read_round(self, consumer: Consumer) -> None:
        """Read every partition from what was consumed so far to its end, then complete the round."""
        try:
            reached = read_to_end(consumer, self._next_positions(), partial(self._deliver, consumer), None,
                                  on_error=self._client_error, stop=self._stopping.is_set)
        except (KafkaException, RuntimeError) as exc:  # the round stays open: the next try reads on
            if not self._stopping.is_set():
                logger.warning("Reading topic %s failed: %s", self.topic, exc)
                time.sleep(_POLL_S)
            return
        with self._consumed_cond:
            for (_, partition), end in reached.ends.items():
                if end > self._positions.get(partition, -1):
                    self._positions[partition] = end
            self._consumed_cond.notify_all()
        if reached.complete:
            self._finish_round()

    def _follow_batch(self, consumer: Consumer) -> bool:
        """One consume between rounds; whether the follower may rest now (:meth:`IdleRest.at_end`)."""
        try:
            messages = consumer.consume(_BATCH, _POLL_S)
        except (KafkaException, RuntimeError) as exc:
            if not self._stopping.is_set():
                logger.warning("Reading topic %s failed: %s", self.topic, exc)
                time.sleep(_POLL_S)
            return False
        records = [msg for msg in messages if msg.error() is None]
        if records:
            self._deliver(consumer, records)
        for msg in messages if len(records) < len(messages) else ():
            err = msg.error()
            if err is not None and err.code() != _EOF:  # at the end: nothing to do between rounds
                self._client_error(err)
        return self._idle.at_end(bool(records), len(records) < len(messages))

    def _deliver(self, consumer: Consumer, records: list[Message]) -> None:
        """Hand records to the callbacks, then record how far each partition was consumed."""
        topic = self.topic
        batch_consumed = self._batch_consumed
        if batch_consumed is not None:
            try:
                batch_consumed(records)
            except Exception:
                logger.exception("Batch callback for topic %s raised", topic)
        else:
            consumed = self._consumed
            for msg in records:
                try:
                    consumed(LogRecord(topic, msg.partition() or 0, msg.offset() or 0, msg.key(), msg.value(),
                                       msg.timestamp()[1]))
                except Exception:
                    logger.exception("Consumer callback for topic %s raised on offset %s of partition %s",
                                     topic, msg.offset(), msg.partition())
        self._advance(consumer)

    def _advance(self, consumer: Consumer) -> None:
        """Record how far each partition has been consumed (one position() call per batch, not per
        record), for :meth:`position` and :meth:`wait_until_consumed`."""
        try:
            positions = consumer.position(self._assignment)
        except KafkaException as exc:
            logger.debug("position() on topic %s failed: %s", self.topic, exc)
            return
        with self._consumed_cond:
            applied = self._positions
            for tp in positions:
                if tp.offset >= 0 and tp.offset > applied.get(tp.partition, -1):
                    applied[tp.partition] = tp.offset
            self._consumed_cond.notify_all()

    def position(self, partition: int) -> int:
        """The next offset of ``partition`` to be consumed: every record below it was handed over."""
        with self._consumed_cond:
            return self._positions.get(partition, 0)

    def wait_until_consumed(self, offsets: Mapping[int, int], timeout_s: float = 30.0) -> None:
        """Block until the record at ``offsets[partition]`` (e.g. one just written) was handed to the
        callbacks for every partition given: read-your-writes without a full read_to_end round."""
        if threading.current_thread() is self._thread:
            raise ConnectError("wait_until_consumed from the log's own thread would deadlock")
        deadline = time.monotonic() + timeout_s
        with self._idle.waiting(), self._consumed_cond:
            while any(self._positions.get(p, 0) <= o for p, o in offsets.items()):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._thread is None:
                    raise RetriableError(f"records written to topic {self.topic} not read back within "
                                         f"{timeout_s}s")
                self._consumed_cond.wait(min(remaining, 1.0))

    def use_batch_callback(self, callback: Callable[[list[Message]], None]) -> None:
        """Hand every consumed batch of raw confluent-kafka Messages to ``callback`` instead of calling
        ``consumed`` per record. For bulk loaders (the offset store reads millions of records at start):
        it saves building a LogRecord per record. The list holds records only (no error events).
        Call before :meth:`start`."""
        if self._thread is not None:
            raise ConnectError("use_batch_callback must be called before start")
        self._batch_consumed = callback

    def _finish_round(self) -> None:
        self._idle.end_reached()
        with self._lock:
            done, self._round = self._round or [], None
        for future in done:
            if not future.done():
                future.set_result(None)


class IdleRest:
    """The follower's rest at the end of its topic (module doc, "Resting at the end"): :meth:`at_end`
    and :meth:`rest` on the log thread, :meth:`wake` and :meth:`waiting` from others."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._waiters = 0
        self._end_seen = False

    def wake(self) -> None:
        """End the current rest (if any) now: a barrier was requested, or the log stops."""
        self._wake.set()

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """No rest while a thread waits for records to be read back (read-your-writes)."""
        with self._lock:
            self._waiters += 1
        self._wake.set()
        try:
            yield
        finally:
            with self._lock:
                self._waiters -= 1

    def end_reached(self) -> None:
        """A read-to-end round ended: the follower may rest from its next empty consume."""
        self._end_seen = True

    def at_end(self, records: bool, eof: bool) -> bool:
        """After a follow consume: whether to rest now. Only after the end was reported (an EOF event, in
        this batch or an earlier one with records) and this batch brought no record."""
        if records:
            self._end_seen = eof
            return False
        self._end_seen = self._end_seen or eof
        return self.seconds > 0 and self._end_seen

    def rest(self, consumer: Consumer, positions: Callable[[], Mapping[tuple[str, int], int]],
             busy: Callable[[], bool]) -> None:
        """Unassign for up to :attr:`seconds` unless ``busy()`` (barriers pending) or a reader waits, then
        assign ``positions()`` (the next offset of each partition)."""
        self._wake.clear()  # before the checks: a wake after them ends the rest below at once
        with self._lock:
            if self._waiters:
                return
        if busy():
            return
        self._end_seen = False
        try:
            consumer.unassign()
        except KafkaException:
            return
        try:
            self._wake.wait(self.seconds)
        finally:
            consumer.assign([TopicPartition(topic, partition, offset)
                             for (topic, partition), offset in positions().items()])
