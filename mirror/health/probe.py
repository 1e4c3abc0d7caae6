"""Measure every flow's health from the clusters alone (works whether or not replication runs here).

Per flow ``A->B`` (all topic names through the configured replication policy):

* **Heartbeat age**: now minus the newest timestamp in ``A.heartbeats`` on B. Those heartbeats were
  emitted into A (by the ``X->A`` heartbeat connectors) and copied by this flow, so a fresh one proves
  that data flows A->B. When that topic has none, B's own ``heartbeats`` records keyed ``(A, B)`` are
  used: they prove the A->B herder is alive, not that data flows (``heartbeat_basis = "emitted"``).
  They are used too when every heartbeat on A is already replicated and B's own are newer: nobody emits
  into A any more (a removed ``X->A`` flow, or ``--clusters`` without A), so the newest replicated one
  only says how long ago A was last fed, not how far behind the flow is.
* **End-to-end latency**: when a read finds *new* records in ``A.heartbeats`` on B, their arrival is
  bounded by the read time, so ``read time - heartbeat timestamp`` of the newest new record is an upper
  bound of the latency from emit on A to visibility on B; its resolution is the time since the
  previous read (samples with a resolution above :data:`LATENCY_RESOLUTION_S` are kept only when a watch
  window got no finer one: on a loaded machine every read can take longer than that, and a coarse upper
  bound beats no latency at all). The first read only sets the baseline.
  :meth:`HealthProbe.watch_latency` reads every 0.2 s for a short window to get samples (``mirror
  status`` once; the monitor between its passes). The last sample is kept.
* **Lag per remote partition**: ``source end offset - replicated offset`` where the replicated offset
  (next upstream offset to copy) is the larger of (1) the flow's Connect offsets topic
  (``mm2-offsets.A.internal`` on B: last replicated upstream offset + 1; it trails by up to
  ``offset.flush.interval.ms``) and (2) the newest offset sync ``(U, D)`` plus the remote partition's
  end ``R``: ``U + (R - D)``, a lower bound of the progress that is exact when the source partition
  has no offset gaps. Lag in seconds is the age of the oldest source record not yet replicated (its
  timestamp is read). Ends are read by ListOffsets, a few requests per broker for every partition of
  the flow on each cluster; only a *doubtful* partition is fetched (:func:`doubtful_partitions`), on the source
  at its replicated offset (the fetch response's high watermark is its end, its first record the lag's
  timestamp) and on the target at its newest sync's downstream offset (the remote end of the estimate).
  A partition with no replicated offset yet has no lag to read: its end is ListOffsets' answer, unfetched.
  A partition is doubtful when ListOffsets' answer is not its replicated offset: it lags (its first
  unreplicated record is wanted), it has no replicated offset yet, or the answer is *below* what was
  replicated, which Kafka answers only for a source topic re-created or truncated (the fetch confirms it)
  and Tansu, the test broker, for every partition whose last batch holds several records: its ListOffsets
  answers that batch's base offset + 1 (docs/tansu.md), so there the fetch keeps the figures exact. The
  one partition a broker like Tansu can still show as caught up while it lags is one whose replicated
  offset is exactly one past the first record of its last, multi-record batch. At thousands of partitions
  a steady flow on Kafka thus costs a few ListOffsets requests instead of a fetch per partition.
* **Checkpoints per group** (groups on A that pass the group filter and committed on topics the flow
  replicates): age of the newest checkpoint in ``A.checkpoints.internal`` on B, and whether every
  committed partition has a checkpoint (``translatable``).
* **Exact translation and group sync per group**: how many checkpoints sit at the exact position the
  offset map (``mm2-offset-map.A.internal`` on B) gives for their upstream offset, and, with
  ``sync.group.offsets.enabled``, whether the group's offsets on B match its checkpoints, and if not why
  (:func:`mirror.health.flow_health.group_sync_state`).
* **RPO estimate**: see :func:`mirror.health.flow_health.estimate_rpo`.

Reads are incremental: a :class:`HealthProbe` keeps, per flow, its positions in the internal topics
and the newest facts found there (heartbeats, checkpoints, Connect offsets, offset syncs, the offset
map, stalled hand-offs) in a :class:`FlowState`, so the background monitor only reads what is new at
each refresh. What to probe per flow (policy, filters, internal topic names, thresholds) is a
:class:`FlowSpec`, built once from mm2.properties by ``mirror status`` and the monitor, and by hand in
tests. A status tool must not die on one bad record: each decoder of the internal topics' records skips
what it cannot read.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from confluent_kafka import OFFSET_BEGINNING, KafkaException, Message

from connect_runtime.api.errors import ConnectError
from mirror.client.mirror_client import ReaderKind, reader_config
from mirror.client.models import Checkpoint, Heartbeat, MalformedRecordError, OffsetSync
from mirror.client.offset_map import OffsetMap, offset_map_topic
from mirror.client.replication_policy import ReplicationPolicy, policy_from_config
from mirror.config.checkpoint import SYNC_GROUP_OFFSETS_ENABLED
from mirror.config.connector_base import OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT
from mirror.config.heartbeat import EMIT_HEARTBEATS_INTERVAL_SECONDS, EMIT_HEARTBEATS_INTERVAL_SECONDS_DEFAULT
from mirror.config.mirror_maker_config import (
    CHECKPOINT_CONNECTOR_CLASS,
    HEARTBEAT_CONNECTOR_CLASS,
    SOURCE_CONNECTOR_CLASS,
    MirrorMakerConfig,
    SourceAndTarget,
    parse_boolean,
)
from mirror.filters import GroupFilter, TopicFilter, load_group_filter, load_topic_filter
from mirror.health.flow_health import (
    FlowHealth,
    GroupCheckpointHealth,
    HealthReport,
    PartitionLag,
    Thresholds,
    estimate_rpo,
    evaluate,
    group_sync_state,
    lag_of,
    loss_of,
)
from mirror.health.kafka_io import TP, ClusterIO, LatestOffsets, PartitionProbe

logger = logging.getLogger(__name__)

#: Latency samples whose arrival time is known less precisely than this are dropped.
LATENCY_RESOLUTION_S = 0.5
DEFAULT_TIMEOUT_S = 10.0


# ---- what to probe per flow, from mm2.properties ----


@dataclass(frozen=True)
class FlowSpec:
    """What the probe needs to know about one flow, taken from mm2.properties."""

    source: str
    target: str
    policy: ReplicationPolicy
    topic_filter: TopicFilter
    group_filter: GroupFilter
    offsets_topic: str
    offset_syncs_on_source: bool
    heartbeat_interval_s: float
    thresholds: Thresholds
    sync_group_offsets: bool = False
    #: the flow's Connect status topic: a node that cannot do its part says so there (stalled_handoffs.py)
    status_topic: str = ""

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"


#: Who reads, in the health clients' ``client.id`` when the caller does not say (``mirror status``).
HEALTH_CLIENT_LABEL = "mirror-status"


def cluster_io(config: MirrorMakerConfig, alias: str, client_label: str = HEALTH_CLIENT_LABEL) -> ClusterIO:
    """A read-only client pair for ``alias``: its Java client keys from mm2.properties made librdkafka's.

    Each client is named ``[<user client.id>|]<client_label>|health-<kind>``, the form of the tasks'
    clients (Java's ``addClientId``), so that a broker's request log and quotas tell the health reads
    apart from replication (librdkafka's default would be ``rdkafka``)."""
    raw = config.client_config(alias)
    configs: dict[ReaderKind, dict[str, Any]] = {}
    for kind in ("consumer", "admin"):
        configs[kind] = reader_config(raw, kind)
        user = configs[kind].pop("client.id", None)
        configs[kind]["client.id"] = "|".join(filter(None, (user, client_label, f"health-{kind}")))
    return ClusterIO(alias, configs["consumer"], configs["admin"])


def flow_specs(config: MirrorMakerConfig, pairs: Iterable[SourceAndTarget],
               overrides: Mapping[str, Any] | None = None) -> list[FlowSpec]:
    """One :class:`FlowSpec` per enabled flow among ``pairs`` (heartbeat-only pairs are left out);
    thresholds from ``health.*`` keys, then ``overrides`` (flags)."""
    raw = config.raw_properties()
    specs = []
    for pair in pairs:
        source_cfg = config.connector_base_config(pair, SOURCE_CONNECTOR_CLASS)
        if not parse_boolean(source_cfg.get("enabled")):
            continue  # a heartbeat-only herder: it replicates nothing, so it has no health to judge
        checkpoint_cfg = config.connector_base_config(pair, CHECKPOINT_CONNECTOR_CLASS)
        heartbeat_cfg = config.connector_base_config(pair, HEARTBEAT_CONNECTOR_CLASS)
        policy = policy_from_config(source_cfg)
        interval = float(heartbeat_cfg.get(EMIT_HEARTBEATS_INTERVAL_SECONDS,
                                           EMIT_HEARTBEATS_INTERVAL_SECONDS_DEFAULT))
        location = source_cfg.get(OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT)
        thresholds = Thresholds.from_properties(raw, str(pair)).with_overrides(overrides or {})
        specs.append(FlowSpec(
            source=pair.source, target=pair.target, policy=policy,
            topic_filter=load_topic_filter(source_cfg), group_filter=load_group_filter(checkpoint_cfg),
            offsets_topic=config.worker_config(pair)["offset.storage.topic"],
            status_topic=config.worker_config(pair)["status.storage.topic"],
            offset_syncs_on_source=location.strip().lower() != "target",
            heartbeat_interval_s=interval, thresholds=thresholds,
            sync_group_offsets=parse_boolean(checkpoint_cfg.get(SYNC_GROUP_OFFSETS_ENABLED, "false"))))
    return specs


# ---- what was read so far for one flow, and the latency rule ----


@dataclass
class FlowState:
    """What the probe has read so far for one flow (positions and the newest facts)."""

    target_positions: dict[TP, int] = field(default_factory=dict)
    source_positions: dict[TP, int] = field(default_factory=dict)
    primed: bool = False
    last_heartbeat_read: float | None = None
    newest_replicated_ms: int | None = None
    newest_emitted_ms: int | None = None
    latency_s: float | None = None
    latency_sampled: int = 0
    #: the finest sample coarser than LATENCY_RESOLUTION_S since the last kept one: (resolution, latency)
    coarse_latency: tuple[float, float] | None = None
    #: (group, remote topic, partition) -> (upstream offset, downstream offset, record timestamp ms)
    checkpoints: dict[tuple[str, str, int], tuple[int, int, int | None]] = field(default_factory=dict)
    #: (source topic, partition) -> last replicated upstream offset, from the Connect offsets topic
    connect_offsets: dict[TP, int] = field(default_factory=dict)
    #: (source topic, partition) -> newest offset sync (upstream, downstream)
    syncs: dict[TP, tuple[int, int]] = field(default_factory=dict)
    offset_map: OffsetMap = field(default_factory=OffsetMap)
    #: connector -> why its node cannot hand its task configs to the leader (from the status topic)
    stalled: dict[str, str] = field(default_factory=dict)
    #: the target's topics (name -> partitions) as the last pass found them: the latency watch between
    #: passes reads the heartbeats five times a second, and asking for every topic's metadata each time
    #: cost a copy of 100-byte records 15% of its rate (bench/results.md, "where the brokers' extra CPU goes").
    #: A watch before any pass (``mirror status``'s, beside its pass) asks only for the heartbeat topics
    target_topics: dict[str, int] | None = None


def sample_latency(state: FlowState, newest_new_ms: int, read_at: float) -> None:
    """A read found replicated heartbeats up to ``newest_new_ms`` that the previous read had not."""
    previous = state.last_heartbeat_read
    if state.primed and previous is not None:
        resolution, latency = read_at - previous, max(0.0, read_at - newest_new_ms / 1000)
        if resolution <= LATENCY_RESOLUTION_S:
            state.latency_s = latency
            state.latency_sampled += 1
            state.coarse_latency = None
        elif state.coarse_latency is None or resolution < state.coarse_latency[0]:
            state.coarse_latency = (resolution, latency)
    state.newest_replicated_ms = max(state.newest_replicated_ms or newest_new_ms, newest_new_ms)


def settle_latency(state: FlowState) -> None:
    """Keep the finest coarse sample taken since the last kept one (no fine one came after it).

    Called at the end of a latency watch and before each full report: on a loaded machine a watch may
    not fit between two passes, and each pass's own read is a second or more after the previous one.
    """
    if state.coarse_latency is not None:
        state.latency_s = state.coarse_latency[1]
        state.latency_sampled += 1
        state.coarse_latency = None


# ---- the internal topics' records (each decoder skips what it cannot read) ----


def heartbeat_ts(msg: Message, source: str | None = None, target: str | None = None) -> int | None:
    try:
        heartbeat = Heartbeat.from_record(msg.key(), msg.value())
    except MalformedRecordError:
        return None
    if source is not None and (heartbeat.source_cluster_alias, heartbeat.target_cluster_alias) != (source, target):
        return None
    return heartbeat.timestamp


def apply_checkpoint(msg: Message, store: dict[tuple[str, str, int], tuple[int, int, int | None]]) -> None:
    try:
        cp = Checkpoint.from_record(msg.key(), msg.value())
    except MalformedRecordError:
        return
    kind, ts = msg.timestamp()
    store[(cp.consumer_group_id, cp.topic, cp.partition)] = (
        cp.upstream_offset,
        cp.downstream_offset,
        ts if kind and ts >= 0 else None,
    )


def apply_sync(msg: Message, store: dict[TP, tuple[int, int]]) -> bool:
    """Store the sync's offsets under its source partition; False if the record is not a sync."""
    try:
        sync = OffsetSync.from_record(msg.key(), msg.value())
    except MalformedRecordError:
        return False
    store[(sync.topic_partition.topic, sync.topic_partition.partition)] = (sync.upstream_offset, sync.downstream_offset)
    return True


def apply_newest_syncs(messages: list[Message], store: dict[TP, tuple[int, int]]) -> None:
    """:func:`apply_sync` for the newest readable sync of each source partition only, as applying all of
    them in order would leave it.

    The source task writes a sync every ``offset.lag.max`` records, a thousand or more a second during a
    backlog, and the probe keeps only the newest of each partition: decoding each one cost the probe's
    thread more than the rest of its reading. A sync's key is its source partition, so walking back from
    the newest, a key already applied is skipped without decoding.
    """
    done: set[bytes | None] = set()
    for msg in reversed(messages):
        key = msg.key()
        if key not in done and apply_sync(msg, store):
            done.add(key)


def apply_connect_offset(msg: Message, source: str, store: dict[TP, int]) -> None:
    """A MirrorSourceConnector offset: key ``[name, {cluster, partition, topic}]``, value ``{offset: N}``."""
    try:
        # decoded first: json.loads of bytes guesses their encoding in Python, longer than the parse itself
        key = json.loads((msg.key() or b"").decode("utf-8"))
        raw = msg.value()
        value = json.loads(raw.decode("utf-8")) if raw is not None else None
    except ValueError:  # UnicodeDecodeError too
        return
    if not (isinstance(key, list) and len(key) == 2 and isinstance(key[1], dict)):
        return
    partition = key[1]
    if partition.get("cluster") != source or "topic" not in partition or "partition" not in partition:
        return
    tp = (str(partition["topic"]), int(partition["partition"]))
    if value is None:
        store.pop(tp, None)
    elif isinstance(value, dict) and isinstance(value.get("offset"), int):
        store[tp] = value["offset"]


def apply_connector_status(msg: Message, store: dict[str, str]) -> None:
    """A ``status-connector-<name>`` record: a RUNNING connector with a trace is one whose node cannot hand
    its task configs to the group leader (connect_runtime/runtime/leader/stalled_handoffs.py); any later status
    of the connector without one clears it."""
    key = (msg.key() or b"").decode("utf-8", "replace")
    if not key.startswith("status-connector-"):
        return
    name = key[len("status-connector-"):]
    try:
        raw = msg.value()
        value = json.loads(raw) if raw is not None else None
    except ValueError:
        return
    if isinstance(value, dict) and value.get("state") == "RUNNING" and value.get("trace"):
        store[name] = f"connector {name} on {value.get('worker_id')}: {value['trace']}"
    else:
        store.pop(name, None)


def remote_topics(spec: FlowSpec, source_topics: Mapping[str, int], target_topics: Mapping[str, int]) -> dict[str, str]:
    """Source topic -> its remote topic on the target, for every topic the flow replicates that both show."""
    policy = spec.policy
    remote: dict[str, str] = {}
    for topic in target_topics:
        if policy.is_internal_topic(topic) or policy.topic_source(topic) != spec.source:
            continue
        upstream = policy.upstream_topic(topic)
        if (upstream is None or upstream not in source_topics or policy.is_heartbeats_topic(upstream)
                or not spec.topic_filter.should_replicate_topic(upstream)):
            continue
        remote[upstream] = topic
    return remote


def replicated_offsets(state: FlowState, partitions: Iterable[TP], remote: Mapping[str, str],
                       remote_ends: Mapping[TP, int]) -> dict[TP, tuple[int, str]]:
    """The next upstream offset to copy of each source partition and where it comes from, the larger of
    its Connect offset + 1 and its newest offset sync ``(U, D)`` moved on by the remote partition's end
    ``R`` (``U + R - D``, counted only when ``R > D``); a partition with neither is left out."""
    result: dict[TP, tuple[int, str]] = {}
    for t, p in partitions:
        candidates: list[tuple[int, str]] = []
        if (t, p) in state.connect_offsets:
            candidates.append((state.connect_offsets[(t, p)] + 1, "connect-offsets"))
        end = remote_ends.get((remote[t], p))
        if (t, p) in state.syncs and end is not None:
            sync_up, sync_down = state.syncs[(t, p)]
            if end > sync_down:
                candidates.append((sync_up + end - sync_down, "offset-sync"))
        if candidates:
            result[(t, p)] = max(candidates)
    return result


def doubtful_partitions(partitions: Iterable[TP], source_latest: Mapping[TP, int],
                        replicated: Mapping[TP, tuple[int, str]]) -> list[TP]:
    """The partitions whose ListOffsets answer does not settle their lag, so they are fetched: every one
    whose answer is not its replicated offset, or that has no answer or no replicated offset.

    An answer equal to the replicated offset is a caught-up partition, the steady state of every partition
    of a healthy flow. One above it lags: the fetch at the replicated offset brings its first unreplicated
    record (the lag in seconds) and its exact end. One below it contradicts what was replicated: a source
    topic re-created or truncated on Kafka (the fetch's end shows it), or a broker whose "latest" is not
    the end (Tansu: the base offset of the last batch + 1), where only the fetch is exact.
    """
    return [tp for tp in partitions
            if tp not in replicated or tp not in source_latest or source_latest[tp] != replicated[tp][0]]


class _SourceSide(NamedTuple):
    """What a pass started on the source (:meth:`HealthProbe._start_source`)."""

    topics: dict[str, int]
    remote: dict[str, str]
    partitions: list[TP]
    ends: tuple[LatestOffsets, LatestOffsets]
    syncs: Future[None]


def _done() -> Future[None]:
    done: Future[None] = Future()
    done.set_result(None)
    return done


class HealthProbe:
    """Measures :class:`FlowHealth` for a set of flows; keeps read positions between calls. Not thread-safe."""

    def __init__(self, specs: list[FlowSpec], clusters: Mapping[str, ClusterIO], *,
                 clock: Callable[[], float] = time.time, timeout_s: float = DEFAULT_TIMEOUT_S,
                 groups_interval_s: float = 0.0) -> None:
        self.specs = specs
        self._clusters = dict(clusters)
        self._clock = clock
        self._timeout_s = timeout_s
        #: listing every group's offsets is the costliest read: the monitor does it less often
        self._groups_interval_s = groups_interval_s
        self._group_cache: dict[str, tuple[float, dict[str, dict[TP, int]]]] = {}
        self._state = {spec.name: FlowState() for spec in specs}
        #: a pass reads the source on this thread while it reads the target (:meth:`_check_flow`)
        self._source_reads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mirror-health-source")

    @classmethod
    def from_config(cls, config: MirrorMakerConfig, pairs: Iterable[SourceAndTarget],
                    overrides: Mapping[str, Any] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                    groups_interval_s: float = 0.0, client_label: str = HEALTH_CLIENT_LABEL) -> HealthProbe:
        """``client_label``: who reads, in the clients' ``client.id`` (:func:`cluster_io`)."""
        specs = flow_specs(config, pairs, overrides)
        aliases = dict.fromkeys(a for s in specs for a in (s.source, s.target))
        return cls(specs, {a: cluster_io(config, a, client_label) for a in aliases}, timeout_s=timeout_s,
                   groups_interval_s=groups_interval_s)

    def close(self) -> None:
        self._source_reads.shutdown()
        for io in self._clusters.values():
            io.close()

    # ---- public passes ----

    def check(self) -> HealthReport:
        """One full pass over every flow."""
        flows = [self._check_flow(spec) for spec in self.specs]
        return HealthReport(self._clock(), flows)

    def watch_latency(self, window_s: float, interval_s: float = 0.2,
                      stop: Callable[[], bool] | None = None) -> None:
        """Read only the replicated heartbeats, every ``interval_s``, until each flow got a fresh latency
        sample, ``window_s`` passed or ``stop()`` is true. Unreachable targets are skipped (check() reports them)."""
        deadline = time.monotonic() + window_s
        waiting = {s.name for s in self.specs}
        for spec in self.specs:  # the first read of a flow is the baseline
            if not self._state[spec.name].primed:
                self._watch_once(spec, waiting, baseline=True)
        while waiting and time.monotonic() < deadline and not (stop is not None and stop()):
            time.sleep(min(interval_s, max(0.0, deadline - time.monotonic())))
            for spec in self.specs:
                if spec.name in waiting:
                    self._watch_once(spec, waiting, baseline=False)
        for spec in self.specs:  # no fine sample after it: the finest coarse one
            settle_latency(self._state[spec.name])

    def latency(self, flow: str) -> float | None:
        """The newest end-to-end latency sample of ``flow`` (its name, ``A->B``), None before any."""
        return self._state[flow].latency_s

    def _watch_once(self, spec: FlowSpec, waiting: set[str], baseline: bool) -> None:
        state = self._state[spec.name]
        sampled = state.latency_sampled
        try:
            self._read_target(spec, heartbeats_only=True)
        except KafkaException as exc:
            logger.debug("%s: heartbeat read failed: %s", spec.name, exc)
            waiting.discard(spec.name)
            return
        if baseline:
            state.primed = True
        elif state.latency_sampled != sampled:
            waiting.discard(spec.name)

    # ---- one flow ----

    def _check_flow(self, spec: FlowSpec) -> FlowHealth:
        """One flow's figures. The source is read on a thread of its own while the target is: its metadata
        beside the target's, then its offset syncs beside the target's internal topics, with both clusters'
        ListOffsets answers coming in meanwhile (each cluster's clients are used by one thread at a time)."""
        now = self._clock()
        state = self._state[spec.name]
        flow = FlowHealth(spec.source, spec.target, now, heartbeat_interval_seconds=spec.heartbeat_interval_s)
        source_topics = self._source_reads.submit(self._clusters[spec.source].topics, self._timeout_s)
        source: _SourceSide | KafkaException | None = None
        try:
            target_topics = state.target_topics = self._clusters[spec.target].topics(self._timeout_s)
            source = self._start_source(spec, source_topics, target_topics)
            self._read_target(spec, topics=target_topics)
        except KafkaException as exc:
            flow.errors.append(f"target cluster {spec.target} unreachable: {exc}")
            started: list[Future[Any]] = [source_topics, *([source.syncs] if isinstance(source, _SourceSide) else [])]
            wait(started)  # the source's thread is done with its clients before the next pass
            return self._finish(flow, spec, source_readable=False)
        state.primed = True
        flow.stalled = sorted(state.stalled.values())
        if state.newest_replicated_ms is not None:
            flow.heartbeat_age_seconds = max(0.0, now - state.newest_replicated_ms / 1000)
            flow.heartbeat_basis = "replicated"
            settle_latency(state)
            flow.latency_seconds = state.latency_s
            flow.latency_basis = "heartbeats" if state.latency_s is not None else "none"
        elif state.newest_emitted_ms is not None:
            flow.heartbeat_age_seconds = max(0.0, now - state.newest_emitted_ms / 1000)
            flow.heartbeat_basis = "emitted"
        try:
            if isinstance(source, KafkaException):
                raise source
            assert source is not None
            source.syncs.result()
            if self._source_heartbeats_idle(spec, state, source.topics):
                assert state.newest_emitted_ms is not None
                flow.heartbeat_age_seconds = max(0.0, now - state.newest_emitted_ms / 1000)
                flow.heartbeat_basis = "emitted"
            flow.partitions = self._lags(spec, state, source.remote, source.partitions, source.ends, now)
        except KafkaException as exc:
            flow.errors.append(f"source cluster {spec.source} unreachable: {exc}")
            return self._finish(flow, spec, source_readable=False)
        try:
            flow.groups = self._groups(spec, state, {p.source_topic: p.remote_topic for p in flow.partitions}, now)
        except (KafkaException, ConnectError, TimeoutError) as exc:
            # e.g. no Describe permission on groups: the data figures above still stand
            logger.warning("%s: cannot read consumer groups on %s: %s", spec.name, spec.source, exc)
            flow.notes.append(f"consumer groups on {spec.source} unreadable: {exc}")
        return self._finish(flow, spec, source_readable=True)

    def _start_source(self, spec: FlowSpec, source_topics: Future[dict[str, int]],
                      target_topics: Mapping[str, int]) -> _SourceSide | KafkaException:
        """Once both clusters' topics are known: ask every end of the flow by ListOffsets on both clusters and
        start reading the source's offset syncs on the source's thread. A source that cannot be read is
        returned (reported once the target was read), a target's ListOffsets refusal raised."""
        try:
            topics = source_topics.result()
        except KafkaException as exc:
            return exc
        remote = remote_topics(spec, topics, target_topics)
        partitions = [(t, p) for t in remote for p in range(topics[t])]
        ends = (self._clusters[spec.source].latest_offsets(partitions, self._timeout_s),
                self._clusters[spec.target].latest_offsets([(remote[t], p) for t, p in partitions], self._timeout_s))
        syncs: Future[None] = (
            self._source_reads.submit(self._read_syncs, spec, self._clusters[spec.source], topics,
                                      spec.policy.offset_syncs_topic(spec.target),
                                      self._state[spec.name].source_positions)
            if spec.offset_syncs_on_source else _done())
        return _SourceSide(topics, remote, partitions, ends, syncs)

    def _finish(self, flow: FlowHealth, spec: FlowSpec, source_readable: bool) -> FlowHealth:
        flow.rpo_seconds, flow.rpo_basis = estimate_rpo(flow.partitions, flow.heartbeat_age_seconds,
                                                        source_readable)
        flow.state, flow.reasons = evaluate(flow, spec.thresholds)
        return flow

    def _source_heartbeats_idle(self, spec: FlowSpec, state: FlowState, source_topics: Mapping[str, int]) -> bool:
        """True when B's own heartbeats are newer than the replicated ones and the source's heartbeats topic
        holds nothing this flow has not copied yet (its Connect offsets say so): a stale replicated heartbeat
        is then the age of the source's last heartbeat, not a replication delay."""
        if (state.newest_replicated_ms is None or state.newest_emitted_ms is None
                or state.newest_emitted_ms <= state.newest_replicated_ms):
            return False
        topic = spec.policy.heartbeats_topic()
        partitions = range(source_topics.get(topic, 0))
        if any((topic, p) not in state.connect_offsets for p in partitions):
            return False
        positions = {(topic, p): state.connect_offsets[(topic, p)] + 1 for p in partitions}
        ends = self._clusters[spec.source].probe(positions, self._timeout_s)
        return all((tp in ends and ends[tp].end_offset <= position) for tp, position in positions.items())

    def _read_target(self, spec: FlowSpec, heartbeats_only: bool = False,
                     topics: Mapping[str, int] | None = None) -> None:
        """Read what is new in the flow's internal topics on the target, whose ``topics`` a pass has just asked
        for; a watch reuses those of the last pass, or before any pass asks for the ones it reads."""
        io = self._clusters[spec.target]
        state = self._state[spec.name]
        policy = spec.policy
        replicated_hb = policy.format_remote_topic(spec.source, policy.heartbeats_topic())
        wanted = [replicated_hb, policy.heartbeats_topic()]
        topics = topics or state.target_topics
        if topics is None:
            topics = state.target_topics = io.topics(self._timeout_s, wanted)
        map_topic = offset_map_topic(policy, spec.source)
        if not heartbeats_only:
            wanted += [policy.checkpoints_topic(spec.source), spec.offsets_topic, spec.status_topic]
            if state.checkpoints:  # else read after the checkpoints, if any (_read_offset_map)
                wanted.append(map_topic)
            if not spec.offset_syncs_on_source:
                wanted.append(policy.offset_syncs_topic(spec.source))
        records = self._read_from_positions(io, state.target_positions, topics, wanted)
        read_at = self._clock()
        newest_new: int | None = None
        syncs: list[Message] = []
        by_topic: dict[str, Callable[[Message], object]] = {
            map_topic: lambda m: state.offset_map.add_record(m.key(), m.value()),
            spec.status_topic: lambda m: apply_connector_status(m, state.stalled)}
        for msg in records:
            name = msg.topic()
            if name == replicated_hb:
                ts = heartbeat_ts(msg)
                if ts is not None:
                    newest_new = ts if newest_new is None else max(newest_new, ts)
            elif name == policy.heartbeats_topic():
                ts = heartbeat_ts(msg, spec.source, spec.target)
                if ts is not None:
                    state.newest_emitted_ms = max(state.newest_emitted_ms or ts, ts)
            elif name == spec.offsets_topic:
                apply_connect_offset(msg, spec.source, state.connect_offsets)
            elif name == policy.checkpoints_topic(spec.source):
                apply_checkpoint(msg, state.checkpoints)
            elif name in by_topic:
                by_topic[name](msg)
            else:
                syncs.append(msg)
        apply_newest_syncs(syncs, state.syncs)
        if newest_new is not None:
            sample_latency(state, newest_new, read_at)
        state.last_heartbeat_read = read_at
        if not heartbeats_only and map_topic not in wanted:
            self._read_offset_map(io, state, topics, map_topic)

    def _read_offset_map(self, io: ClusterIO, state: FlowState, topics: Mapping[str, int], map_topic: str) -> None:
        """Read the offset map once the flow has a checkpoint: it only tells which checkpoints are exact, and a
        fresh read of it is a record per replicated batch and partition to decode (8,000 at 2,000 topics x 4
        partitions); from then on each pass reads it with the other internal topics."""
        if state.checkpoints:
            for msg in self._read_from_positions(io, state.target_positions, topics, [map_topic]):
                state.offset_map.add_record(msg.key(), msg.value())

    def _read_from_positions(self, io: ClusterIO, store: dict[TP, int], topics: Mapping[str, int],
                             wanted: list[str]) -> list[Message]:
        """Every record of the ``wanted`` topics after the positions in ``store`` (from the start of a partition
        not read yet), which advance."""
        positions = {tp: o for tp, o in store.items() if tp[0] in wanted}
        for topic in wanted:
            for p in range(topics.get(topic, 0)):
                positions.setdefault((topic, p), OFFSET_BEGINNING)
        records, _ = io.read(positions, self._timeout_s)
        store.update(positions)
        return records

    def _read_syncs(self, spec: FlowSpec, io: ClusterIO, topics: Mapping[str, int], topic: str,
                    store: dict[TP, int]) -> None:
        apply_newest_syncs(self._read_from_positions(io, store, topics, [topic]), self._state[spec.name].syncs)

    def _lags(self, spec: FlowSpec, state: FlowState, remote: Mapping[str, str], partitions: list[TP],
              ends: tuple[LatestOffsets, LatestOffsets], now: float) -> list[PartitionLag]:
        """Each partition's lag from the ListOffsets answers ``ends`` (source, target), fetching only the
        doubtful partitions (:func:`doubtful_partitions`)."""
        # the newest sync's downstream offset of each remote partition that has one
        synced = {(remote[t], p): state.syncs[(t, p)][1] for t, p in partitions if (t, p) in state.syncs}
        source_io, target_io = self._clusters[spec.source], self._clusters[spec.target]
        source_latest, remote_ends = ends[0].result(), ends[1].result()
        replicated = replicated_offsets(state, partitions, remote, remote_ends)
        doubtful = doubtful_partitions(partitions, source_latest, replicated)
        # a doubtful partition's offset-sync estimate is taken from a fetch of its remote end too
        exact_remote = {(remote[t], p): synced[(remote[t], p)] for t, p in doubtful if (remote[t], p) in synced}
        if exact_remote:
            remote_ends.update({tp: probe.end_offset
                                for tp, probe in target_io.probe(exact_remote, self._timeout_s).items()})
            replicated.update(replicated_offsets(state, doubtful, remote, remote_ends))
        positions = {tp: replicated.get(tp, (OFFSET_BEGINNING, ""))[0] for tp in partitions}
        # No replicated offset yet (neither a sync nor a Connect offset: most partitions in the first half-minute
        # of a start of thousands): no lag to measure, so nothing to fetch; ListOffsets' answer is the end.
        unreplicated = [tp for tp in doubtful if tp not in replicated and tp in source_latest]
        fetched = [tp for tp in doubtful if tp in replicated or tp not in source_latest]
        probes = source_io.probe({tp: positions[tp] for tp in fetched}, self._timeout_s)
        settled = set(partitions).difference(doubtful)  # caught up: ListOffsets' answer is the replicated offset
        probes.update({tp: PartitionProbe(source_latest[tp], None, None) for tp in (*settled, *unreplicated)})
        result = []
        for (t, p) in sorted(positions):
            probe = probes.get((t, p))
            known = replicated.get((t, p))
            source_end = probe.end_offset if probe is not None else None
            lag_records = lag_of(source_end, known[0]) if known else None
            lag_seconds: float | None = None
            if probe is not None and known is not None:
                if probe.first_timestamp_ms is not None and lag_records:
                    lag_seconds = max(0.0, now - probe.first_timestamp_ms / 1000)
                else:
                    lag_seconds = 0.0
            result.append(PartitionLag(t, remote[t], p, source_end, known[0] if known else None,
                                       known[1] if known else "unknown", lag_records, lag_seconds,
                                       loss_of(source_end, known[0] if known else None,
                                               # the offset-sync estimate is a lower bound: only an exact
                                               # Connect offset can prove records were skipped
                                               probe.start_offset if probe is not None and known is not None
                                               and known[1] == "connect-offsets" else None)))
        return result

    def _committed(self, alias: str) -> dict[str, dict[TP, int]]:
        """Every group's committed offsets on ``alias``, re-listed at most every ``groups_interval_s``."""
        cached = self._group_cache.get(alias)
        if cached is not None and time.monotonic() - cached[0] < self._groups_interval_s:
            return cached[1]
        committed = self._clusters[alias].committed_offsets(self._timeout_s)
        self._group_cache[alias] = (time.monotonic(), committed)
        return committed

    def _groups(self, spec: FlowSpec, state: FlowState, remote: Mapping[str, str],
                now: float) -> list[GroupCheckpointHealth]:
        committed = self._committed(spec.source)
        by_group: dict[str, list[tuple[str, int, int, int | None]]] = {}
        exact: dict[str, int] = {}
        downstream: dict[str, dict[TP, int]] = {}
        for (group, topic, partition), (upstream, down, ts) in state.checkpoints.items():
            by_group.setdefault(group, []).append((topic, partition, upstream, ts))
            downstream.setdefault(group, {})[(topic, partition)] = down
            source_topic = spec.policy.upstream_topic(topic) or topic
            if state.offset_map.downstream((source_topic, partition), upstream) == down:
                exact[group] = exact.get(group, 0) + 1
        target_offsets: dict[str, dict[TP, int]] = {}
        target_states: dict[str, str] = {}
        if spec.sync_group_offsets and by_group:
            try:
                target_offsets = self._committed(spec.target)
                target_states = self._clusters[spec.target].group_states(sorted(by_group), self._timeout_s)
            except (KafkaException, ConnectError, TimeoutError) as exc:
                logger.warning("%s: cannot read consumer groups on %s: %s", spec.name, spec.target, exc)
        result = []
        for group in sorted(committed):
            if not spec.group_filter.should_replicate_group(group):
                continue
            in_scope = {tp: o for tp, o in committed[group].items() if tp[0] in remote}
            if not in_scope:
                continue
            checkpoints = {(t, p): (u, ts) for t, p, u, ts in by_group.get(group, [])}
            missing, behind, have = [], 0, 0
            for (topic, partition), offset in sorted(in_scope.items()):
                cp = checkpoints.get((remote[topic], partition))
                if cp is None:
                    missing.append(f"{topic}-{partition}")
                    continue
                have += 1
                if cp[0] < offset:
                    behind += 1
            stamps = [ts for _, ts in checkpoints.values() if ts is not None]
            age = max(0.0, now - max(stamps) / 1000) if stamps else None
            sync, reason = (group_sync_state(downstream.get(group, {}), target_offsets.get(group, {}),
                                             target_states.get(group)) if spec.sync_group_offsets
                            else ("off", "sync.group.offsets.enabled is false"))
            result.append(GroupCheckpointHealth(group, len(in_scope), have, missing, behind, age,
                                                exact.get(group, 0), sync, reason))
        return result
