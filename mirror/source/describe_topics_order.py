"""The order in which Java's MirrorSourceConnector knows its source topics, so both kinds deal the same tasks.

MirrorSourceConnector deals the known source partitions to tasks round-robin in the order of its known
list, and a Connect herder rewrites a connector's task configs whenever the list it computes differs from
the stored one (``AbstractHerder.taskConfigsChanged``). Under ``exactly.once.source.support = enabled`` a
rewrite starts a new task generation: every task producer of the old one is fenced, the running ones
included, and a Java task fenced mid-batch logs ``failed to send record ... InvalidProducerEpochException``
and dies until its worker restarts it with the new config. So in a fleet of Java nodes and ours, the
connector moving from one kind to the other must compute the very list the other stored, partition for
partition, or each move rewrites the task configs and fences the tasks running on the other kind.

Java's list (``MirrorSourceConnector.findSourceTopicPartitions``) is the topics of ``listTopics().names()``
(the key set of a ``HashMap``) that it replicates, collected into a ``HashSet`` (``Collectors.toSet()``),
passed to ``describeTopics``, whose futures map is a ``HashMap`` sized for them
(``KafkaAdminClient.handleDescribeTopicsByNames...``: ``new HashMap<>(topicNames.size())``), and whose
``allTopicNames()`` copies them into another such ``HashMap`` (``DescribeTopicsResult.all``); each topic's
partitions follow in ascending order. A ``HashMap`` iterates its buckets in ascending index, a bucket's
keys in the order they were put (a resize keeps that order), so each step reorders its input by bucket
index alone and the chain is reproduced here with Java's ``String.hashCode`` and ``HashMap.hash``.

Where Java's order falls back to the broker's (keys sharing a bucket at every step), this uses the topic
names' sort order: identical among our nodes, while Java's then follows the order in which the broker listed
the topics in its Metadata answer to ``listTopics`` (the first map's insertion order; the later maps are filled
by iterating the one before, so the ``describeTopics`` answer's own order plays no part). That order reaches
Python too: librdkafka keeps the answer's topic order (it sorts partitions only) and confluent-kafka fills
``AdminClient.list_topics().topics`` in it, though neither documents it. Passing it here as ``listed``, unsorted,
needs ``TopicAdmin.list_topics`` to return the names in that order rather than as a set.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

#: ``HashMap.DEFAULT_INITIAL_CAPACITY``: a ``HashMap()`` or ``HashSet()`` made with no size.
DEFAULT_CAPACITY = 16
#: ``HashMap.DEFAULT_LOAD_FACTOR``: a map doubles its table once it holds more than this share of it.
LOAD_FACTOR = 0.75


def string_hash(value: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a 32-bit int."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def spread(h: int) -> int:
    """``HashMap.hash``: the high half folded into the low one (``h ^ (h >>> 16)``); its low bits pick a bucket."""
    return h ^ (h >> 16)


def table_capacity(size: int, initial_capacity: int | None = None) -> int:
    """The table length of a ``HashMap`` holding ``size`` keys: ``new HashMap<>(initial_capacity)``, or
    ``new HashMap<>()`` when None. It starts at ``tableSizeFor(initial_capacity)`` (the next power of two, at
    least 1) or 16, and doubles whenever a put takes it over ``LOAD_FACTOR`` of its length."""
    capacity = DEFAULT_CAPACITY if initial_capacity is None else 1 << max(initial_capacity - 1, 0).bit_length()
    while size > int(capacity * LOAD_FACTOR):
        capacity *= 2
    return capacity


def hash_map_order(keys: Iterable[str], capacity: int) -> list[str]:
    """The iteration order of a ``HashMap`` (or ``HashSet``) of ``capacity`` buckets into which ``keys`` were
    put in this order: by bucket index, then in the order put."""
    return sorted(keys, key=lambda k: spread(string_hash(k)) & (capacity - 1))


def describe_topics_order(listed: Collection[str], replicated: Collection[str]) -> list[str]:
    """The ``replicated`` topics in the order of Java's ``describeTopics(...).allTopicNames().values()``, given
    every topic ``listTopics`` returned (``listed``, internal topics left out, as Java's admin does)."""
    listing = hash_map_order(sorted(listed), table_capacity(len(listed)))
    chosen = set(replicated)
    topic_set = hash_map_order([t for t in listing if t in chosen], table_capacity(len(chosen)))
    # describeTopics' futures map and allTopicNames()' copy of it: two maps of one size, so one order
    return hash_map_order(topic_set, table_capacity(len(topic_set), len(topic_set)))
