"""Reading one of MM2's internal topics on the target from its beginning, then following it.

Why one class: the checkpoint task tails two such topics (the offset syncs and the exact offset map) the
same way, and the rules are easy to get subtly different: partition 0 only (the only one MM2 writes), a
consumer that is assigned, never subscribed (it joins no group and commits nothing), "the end" taken from
the fetch response (``enable.partition.eof``), which is exact on every broker, including those whose
ListOffsets "latest" is wrong (Tansu: docs/architecture.md), and a reader that never dies of a bad record.

Following is batched: one ``consume`` takes what arrived in up to :data:`FOLLOW_WAIT_S`. While the source
task copies a backlog it writes an offset sync every ``offset.lag.max`` records, hundreds a second, and
a reader woken once per record took the GIL from the task thread as often (each wake-up a chance for the
copy to wait for a descheduled reader on a busy machine). Nothing needs the records sooner: a checkpoint
round follows an advance of the offset map at most once a second, and otherwise runs every
``emit.checkpoints.interval.seconds`` (60 s by default), reading the stores as they are then.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message

from connect_runtime.clients.factory import new_consumer
from connect_runtime.clients.log_reader import read_to_end
from connect_runtime.logging_context import carry_context

logger = logging.getLogger(__name__)

#: How long one follow step waits for records: the most a record waits to be handled once it arrived.
FOLLOW_WAIT_S = 0.5
#: At most this many records per follow step (a few MB of offset syncs or map runs).
FOLLOW_BATCH = 10_000
#: librdkafka fetches in the background whatever ``consume`` asks: with its default (1 byte) the broker
#: answered as soon as one sync arrived, so a reader tailing the syncs of a backlog copy sent the source
#: cluster about 50 fetches a second, each for a few records. With this, a fetch at the tail waits
#: ``fetch.wait.max.ms`` (100 ms) for more: ten a second at most; the end of the first read comes up to
#: 100 ms later. (The user's ``consumer.fetch.min.bytes`` wins.)
FOLLOW_MIN_BYTES = "1048576"


def read_only_consumer_config(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A librdkafka consumer config for reading an internal topic from the start with EOF events."""
    result = dict(config)
    result.setdefault("group.id", f"mm2-reader-{name}-{uuid.uuid4().hex[:8]}")
    result["enable.auto.commit"] = "false"
    result["enable.partition.eof"] = "true"
    result["auto.offset.reset"] = "earliest"
    result.setdefault("fetch.wait.max.ms", "100")
    return result


class TopicTail:
    """Reads ``topic`` partition 0 to its end, then follows it, on a daemon thread until :meth:`stop`.

    Subclasses say what a record means (:meth:`_handle`), what reaching the end the first time means
    (:meth:`_caught_up`), and may wait for the topic to exist (:meth:`_wait_for_topic`).
    """

    #: What the reader is, for its thread's name and its log lines ("offset-sync reader").
    what = "topic reader"

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], *,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer) -> None:
        self.topic = topic
        self._config = read_only_consumer_config(consumer_config, topic)
        self._config.setdefault("fetch.min.bytes", FOLLOW_MIN_BYTES)
        self._consumer_factory = consumer_factory
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def _start_thread(self) -> None:
        self._thread = threading.Thread(target=carry_context(self._run),
                                        name=f"{self.what.replace(' ', '-')}-{self.topic}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            consumer = self._consumer_factory(self._config)
        except (KafkaException, ValueError) as exc:
            logger.error("Cannot create the consumer of %s: %s", self.topic, exc)
            self._gave_up()
            return
        try:
            if not self._wait_for_topic(consumer):
                return
            reached = read_to_end(consumer, {(self.topic, 0): OFFSET_BEGINNING}, self._handle, None,
                                  on_error=self._warn, stop=self._stopping.is_set)
            self._caught_up(reached.complete)
            while not self._stopping.is_set():  # then follow the topic, a batch per step
                self._follow(consumer.consume(FOLLOW_BATCH, FOLLOW_WAIT_S))
        except Exception:
            logger.exception("%s of %s failed", self.what.capitalize(), self.topic)
            self._gave_up()
        finally:
            try:
                consumer.close()
            except (KafkaException, RuntimeError):
                pass

    def _follow(self, batch: list[Message]) -> None:
        """Hand over a step's records in order, error events taken out (end of partition is no error)."""
        records: list[Message] = []
        for message in batch:
            error = message.error()
            if error is None:
                records.append(message)
            elif error.code() != KafkaError._PARTITION_EOF:
                if records:  # what came before the error first, in log order
                    self._handle(records)
                    records = []
                self._warn(error)
        if records:
            self._handle(records)

    def _wait_for_topic(self, consumer: Consumer) -> bool:
        """Return False to end the reader before it reads (it was stopped meanwhile)."""
        return True

    def _handle(self, records: list[Message]) -> None:
        raise NotImplementedError

    def _caught_up(self, complete: bool) -> None:
        """The first read ended: at the topic's end when ``complete``, else stopped before it."""

    def _gave_up(self) -> None:
        """The reader ended on an error: it reads nothing more."""

    def _warn(self, error: KafkaError) -> None:
        logger.warning("Error reading %s: %s", self.topic, error)

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
