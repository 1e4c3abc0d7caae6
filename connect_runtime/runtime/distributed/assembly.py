"""Assembling one Connect cluster member: stores, Worker, membership and herder, from a worker config.

``connect-distributed`` assembles one member per process; the MM2 driver assembles one per
source->target pair, all in one process, sharing the plugin registry and the REST server. Both use
:func:`build_herder` so that the wiring (which store reads which topic with which client settings,
how the worker id and generations are chosen) exists once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from prometheus_client import CollectorRegistry

from connect_runtime.api.client_overrides import OverridePolicy
from connect_runtime.api.config_provider import ConfigProvider, resolve
from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.metrics import ConnectMetrics, RebalanceMetrics
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.coordination.assignor import ConnectorsAndTasks
from connect_runtime.runtime.coordination.membership import GroupMembership
from connect_runtime.runtime.distributed.distributed_herder import DistributedHerder
from connect_runtime.runtime.leader.stalled_handoffs import StalledHandoffs
from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.runtime.task.topic_tracking import ActiveTopicRecorder, TopicTracking
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.status_writer import StatusWriter
from connect_runtime.runtime.worker.worker import Worker
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.fenced_writer import fence_producers, leader_transactional_id
from connect_runtime.storage.kafka_offset_store import KafkaOffsetStore
from connect_runtime.storage.status_store import KafkaStatusStore

logger = logging.getLogger(__name__)

#: Builds the group membership once the status store exists (SoleMember needs its generation floor).
#: The last argument is the ``notify`` callback to hand the membership: it wakes the herder's tick
#: thread (the herder does not exist yet when the membership is built; see :class:`WakeupRelay`).
MembershipFactory = Callable[[wc.DistributedWorkerConfig, str, KafkaStatusStore, Callable[[], None],
                              CollectorRegistry],
                             GroupMembership]


H_co = TypeVar("H_co", bound=DistributedHerder, covariant=True)
H = TypeVar("H", bound=DistributedHerder)


class HerderFactory(Protocol[H_co]):
    """What :func:`build_herder` calls with the parts it assembled: ``DistributedHerder`` itself, or a
    herder built on it with its own arguments already bound (the MM2 driver binds its flow).

    Typed, not ``**kwargs``, so that the caller gets back the herder class it asked for (no cast) and
    mypy checks the parts against the constructor.
    """

    def __call__(self, *, worker_id: str, worker: Worker, plugins: Plugins, config_store: KafkaConfigStore,
                 status_store: KafkaStatusStore, offset_store: KafkaOffsetStore, membership: GroupMembership,
                 status_writer: StatusWriter, kafka_cluster_id: str | None, group_id: str,
                 fence_producers: Callable[[list[str]], None], request_timeout_s: float,
                 task_shutdown_timeout_s: float, start_timeout_s: float, session_key_ttl_s: float,
                 override_policy: OverridePolicy, topic_tracking: TopicTracking, exactly_once: bool,
                 stalls: StalledHandoffs, rest_prefix: str, forwarder: TaskConfigForwarder | None) -> H_co: ...


class WakeupRelay:
    """The membership's ``notify``: calls ``wakeup()`` on the herder once it exists.

    The membership must be built before the herder (the herder takes it as an argument), yet its
    notify must reach the herder; a notify that arrives before the herder is set is dropped, which
    is harmless because the herder polls the membership at its first tick anyway.
    """

    def __init__(self) -> None:
        self.target: DistributedHerder | None = None

    def __call__(self) -> None:
        target = self.target
        if target is not None:
            target.wakeup()


def released_work(statuses: KafkaStatusStore, work: ConnectorsAndTasks) -> ConnectorsAndTasks:
    """The part of ``work`` its last owner let go of cleanly: latest status UNASSIGNED, not a stale write of
    an older generation (see :meth:`KafkaStatusStore.released_by_last_owner`). The leader's way to tell a
    restart from a crash.

    The group protocol cannot say why a member is gone: a LeaveGroup and an expired session look the same
    to the leader (a member id missing from the new generation). The status topic can. A worker that
    stops cleanly stops its connectors and tasks first, and each stop writes UNASSIGNED (Java's
    ``onShutdown``, which Java workers write too) before the worker leaves the group; a worker that
    crashed, was killed or lost its network leaves its statuses saying RUNNING (or PAUSED, FAILED). The
    assignor holds released work for the returning worker and reassigns the rest at once (its invariant D).

    Read lag only errs towards moving work: if the leader has not yet read a clean leaver's UNASSIGNED
    records when it assigns, that work counts as crashed and moves at once, as it would after a crash.
    """
    connectors = [c for c in work.connectors if statuses.released_by_last_owner(c)]
    tasks = [t for t in work.tasks if statuses.released_by_last_owner(t.connector, t.task)]
    return ConnectorsAndTasks.of(connectors, tasks)


def kafka_membership(config: wc.DistributedWorkerConfig, advertised_url: str, status_store: KafkaStatusStore,
                     notify: Callable[[], None], registry: CollectorRegistry, *,
                     internal_rest: bool = True) -> GroupMembership:
    """Membership through Kafka's group coordinator for ``group.id`` (several workers share the work);
    the leader tells a clean departure from a crash by the statuses (see :func:`released_work`).
    ``internal_rest=False``: this worker cannot reach the leader over internal REST, so the group keeps
    every connector on its leader (MM2 without ``dedicated.mode.enable.internal.rest``)."""
    from connect_runtime.runtime.coordination.kafka_membership import KafkaGroupMembership

    return KafkaGroupMembership.from_worker_config(
        config, advertised_url, notify=notify, released_work=functools.partial(released_work, status_store),
        metrics=RebalanceMetrics(registry), internal_rest=internal_rest)


def kafka_cluster_id(config: wc.DistributedWorkerConfig) -> str | None:
    """The target cluster's id for ``GET /``; informational, so a failure is only logged."""
    try:
        admin = TopicAdmin(config.admin_config("cluster-id"))
        return str(admin.client.describe_cluster(request_timeout=10).result(timeout=15).cluster_id)
    except Exception as exc:
        logger.warning("Could not look up the Kafka cluster id: %s", exc)
        return None


def build_herder(config: wc.DistributedWorkerConfig, herder_factory: HerderFactory[H], *, worker_id: str,
                 advertised_url: str, plugins: Plugins, registry: CollectorRegistry,
                 providers: Mapping[str, ConfigProvider], membership: MembershipFactory = kafka_membership,
                 log_flow: str | None = None, cluster_id: str | None = None, start_timeout_s: float = 120.0,
                 rest_prefix: str = "", forwarder: TaskConfigForwarder | None = None) -> H:
    """One cluster member made by ``herder_factory`` (e.g. ``DistributedHerder``), not started: call
    ``start()`` on the result.

    Metrics of the worker and of its tasks go to ``registry``; ``log_flow`` names the member in every
    log line of its task threads (the MM2 driver passes ``A->B``). ``rest_prefix`` and ``forwarder``
    are the herder's (its REST namespace; the client that hands task configs to the leader).
    """

    def clients(suffix: str) -> dict[str, Any]:
        return {"producer_config": config.producer_config(suffix),
                "consumer_config": config.consumer_config(suffix),
                "admin_config": config.admin_config(suffix)}

    status_store = KafkaStatusStore(config[wc.STATUS_TOPIC], partitions=config[wc.STATUS_PARTITIONS],
                                    replication_factor=config[wc.STATUS_RF], **clients("statuses"))
    # Leader fencing of config writes (see DistributedHerder's docstring): Java's leader transactional id.
    config_store = KafkaConfigStore(config[wc.CONFIG_TOPIC], replication_factor=config[wc.CONFIG_RF],
                                    leader_transactional_id=leader_transactional_id(config.group_id),
                                    **clients("configs"))
    fencing_producer = config.producer_config("fencing")
    offset_store = KafkaOffsetStore(config[wc.OFFSET_TOPIC], partitions=config[wc.OFFSET_PARTITIONS],
                                    replication_factor=config[wc.OFFSET_RF], **clients("offsets"))
    status_writer = StatusWriter(status_store, worker_id)
    topic_tracking = TopicTracking(config[wc.TOPIC_TRACKING_ENABLE], config[wc.TOPIC_TRACKING_ALLOW_RESET])

    def topic_recorder(task: ConnectorTaskId) -> ActiveTopicRecorder | None:
        return ActiveTopicRecorder(task, status_store) if topic_tracking.enabled else None

    worker = Worker(worker_id, offset_store, plugins, ConnectMetrics.create(registry), status_writer,
                    config.producer_config(), offset_flush_interval_ms=config[wc.OFFSET_FLUSH_INTERVAL_MS],
                    task_shutdown_timeout_ms=config[wc.TASK_SHUTDOWN_TIMEOUT_MS],
                    config_transformer=lambda c: resolve(c, providers),
                    offset_flush_timeout_ms=config[wc.OFFSET_FLUSH_TIMEOUT_MS], metrics_registry=registry,
                    log_flow=log_flow, override_policy=config.override_policy, topic_recorder=topic_recorder,
                    exactly_once_group=config.group_id if config.exactly_once_source_enabled else None,
                    producer_properties=config.client_properties("producer"))
    relay = WakeupRelay()
    herder = herder_factory(
        worker_id=worker_id, worker=worker, plugins=plugins, config_store=config_store,
        status_store=status_store, offset_store=offset_store,
        membership=membership(config, advertised_url, status_store, relay, registry), status_writer=status_writer,
        kafka_cluster_id=cluster_id, group_id=config.group_id,
        fence_producers=lambda ids: fence_producers(ids, fencing_producer),
        request_timeout_s=config[wc.REST_REQUEST_TIMEOUT_MS] / 1000,
        task_shutdown_timeout_s=config[wc.TASK_SHUTDOWN_TIMEOUT_MS] / 1000, start_timeout_s=start_timeout_s,
        session_key_ttl_s=config[wc.INTER_WORKER_KEY_TTL_MS] / 1000, override_policy=config.override_policy,
        topic_tracking=topic_tracking, exactly_once=config.exactly_once_source_enabled,
        stalls=StalledHandoffs(registry, status_writer.on_connector_stalled), rest_prefix=rest_prefix,
        forwarder=forwarder)
    relay.target = herder
    return herder
