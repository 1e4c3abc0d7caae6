"""Two pure rules of the checkpoint task (Kafka ``MirrorCheckpointTask``).

* **Renaming** (``rename_topic_partition``): a checkpoint names the *target-side* topic. A topic that came
  from the target in the first place (``target.topic1`` on the source) maps back to its original name,
  stripping **all** hops; any other topic gets the source prefix (``topic1`` -> ``source.topic1``).
* **Monotonicity** (``checkpoint_is_more_recent``): the downstream offset of the checkpoints of a
  (group, partition) never goes backwards, except when the upstream group itself rewound. Translation is
  not monotonic while the OffsetSyncStore's state changes, and consumers failing over must never be
  moved back by a stale translation.
"""

from __future__ import annotations

import logging

from mirror.client.models import Checkpoint, TopicPartition
from mirror.client.replication_policy import ReplicationPolicy

logger = logging.getLogger(__name__)


def rename_topic_partition(
    policy: ReplicationPolicy, source_cluster_alias: str, target_cluster_alias: str, upstream: TopicPartition
) -> TopicPartition:
    """The target-side name of source partition ``upstream`` (Java ``renameTopicPartition``).

    Examples for source1->target2: ``topic3`` -> ``source1.topic3``; ``target2.topic3`` -> ``topic3``;
    ``source6.topic7`` -> ``source1.source6.topic7``.
    """
    topic, partition = upstream
    if policy.topic_source(topic) == target_cluster_alias:
        # The topic came from the target cluster: us-west.topic1 -> topic1.
        return TopicPartition(policy.original_topic(topic), partition)
    return TopicPartition(policy.format_remote_topic(source_cluster_alias, topic), partition)


def checkpoint_is_more_recent(checkpoint: Checkpoint, last: Checkpoint | None) -> bool:
    """Whether ``checkpoint`` may be emitted given ``last``, the latest one for its (group, partition).

    Emit when there is no previous checkpoint, when the upstream group rewound (the downstream offset may
    then go back too), or when the downstream offset advanced. Equal downstream offsets are repeats;
    a lower downstream offset without an upstream rewind is suppressed.
    """
    if last is None:
        logger.log(5, "Emitting %s (first for this partition)", checkpoint)
        return True
    if checkpoint.upstream_offset < last.upstream_offset:
        logger.log(5, "Emitting %s (upstream offset rewind)", checkpoint)
        return True
    if checkpoint.downstream_offset > last.downstream_offset:
        logger.log(5, "Emitting %s (downstream offset advanced)", checkpoint)
        return True
    if checkpoint.downstream_offset != last.downstream_offset:
        logger.log(5, "Skipping %s (preventing downstream rewind)", checkpoint)
    else:
        logger.log(5, "Skipping %s (repeated checkpoint)", checkpoint)
    return False
