"""Partition leaders made known to a fresh consumer before it is assigned, so it fetches at once.

librdkafka resolves where an assigned partition starts (``OFFSET_BEGINNING``, ``OFFSET_END``,
``auto.offset.reset``) with a ListOffsets request to the partition's leader. A consumer assigned before
its first metadata response arrived knows no leader yet, and retries that query after a fixed 500 ms
("no current leader for partition: (re)starting offset query timer", librdkafka 2.x): every fresh
consumer began reading half a second late (the three internal topics of a Connect worker, one after the
other, then each task's source consumer). One metadata request for the topics first makes the leaders
known; the offset query then goes out with the assignment. This holds on any Kafka broker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaException

logger = logging.getLogger(__name__)

#: Up to this many topics are asked for one by one; more, and one request asks for every topic.
_PER_TOPIC = 8


def learn_leaders(consumer: Consumer, topics: Iterable[str], timeout_s: float = 5.0) -> None:
    """Fetch the metadata of ``topics`` into ``consumer``'s cache; a failure only costs the 500 ms back."""
    wanted = sorted(set(topics))
    try:
        if len(wanted) > _PER_TOPIC:
            consumer.list_topics(timeout=timeout_s)
            return
        for topic in wanted:
            consumer.list_topics(topic, timeout=timeout_s)
    except KafkaException as exc:
        logger.debug("Metadata for %d topic(s) not fetched before assignment: %s", len(wanted), exc)
