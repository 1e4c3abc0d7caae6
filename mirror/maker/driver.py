"""The MM2 driver: one distributed herder per source->target pair, on one shared runtime in the process.

What ``connect-mirror-maker mm2.properties [--clusters B ...]`` runs (Kafka's ``MirrorMaker.java`` and
``MirrorHerder.java``):

* For each herder pair of :meth:`MirrorMakerConfig.herder_pairs` (the target clusters named by
  ``--clusters``, all without it, including the heartbeat-only reverse pairs of docs/architecture.md) one
  :class:`MirrorHerder`: a Connect cluster member of group ``<src>-mm2`` on the *target* cluster, with
  its own config/offset/status topics (``mm2-*.<src>.internal``). Several processes started with the
  same file share each pair's connectors and tasks through Kafka's group coordinator.
* Shared by all herders of the process: one plugin registry, one REST server (each herder's Connect
  API under ``/<src>/<tgt>/``, forwarding between nodes included, KIP-710 in spirit), one ``/metrics``
  (each herder's metrics labelled ``source``/``target``), the health monitor and the status page
  (``/ui``).
* A herder whose leader role is newly acquired writes the three MM2 connector configs
  (Source, Heartbeat, Checkpoint, in Java's order) when they differ from what is stored, so the
  leader's file wins, as in Java.
* A herder that cannot reach its cluster is rebuilt with exponential backoff (1 s up to 60 s) by its
  :class:`HerderSlot`; its REST namespace answers 503/409 meanwhile and ``/health`` says why; the other
  herders are not disturbed.

Differences from Java MM2, on purpose: the public Connect REST API is served (namespaced), not only the
internal endpoints, with state changes refused unless basic auth or an explicit opt-in is configured
(:mod:`mirror.maker.rest_wiring`); worker ids are ``<host>:<port>`` of the node's REST server (Java uses
the flow name, so its statuses cannot tell nodes apart); secrets are stored in the configs topic as
references to the node's own mm2.properties (:mod:`mirror.config.secret_references`).
"""

from __future__ import annotations

import argparse
import functools
import logging
import socket
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.errors import ConflictError, ConnectError, NotFoundError
from connect_runtime.cli.process import ExitCode, run_until_stopped
from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.logging_context import set_context
from connect_runtime.metrics import LabelledRegistries
from connect_runtime.model import ConnectorTaskId, TargetState
from connect_runtime.rest.app import create_app, namespace_path
from connect_runtime.rest.server import RestServer
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.assembly import build_herder, kafka_membership
from connect_runtime.runtime.distributed_herder import DistributedHerder
from connect_runtime.runtime.herder import (
    ConfigInfos,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStateInfo,
    Created,
    Herder,
    PluginInfo,
    TaskInfo,
    TaskStateInfo,
    WorkerHealth,
)
from connect_runtime.runtime.plugins import Plugins
from connect_runtime.runtime.process_metrics import register_process_metrics
from mirror.config.mirror_maker import (
    CONNECTOR_CLASSES,
    SOURCE_CONNECTOR_CLASS,
    MirrorMakerConfig,
    SourceAndTarget,
    parse_boolean,
)
from mirror.health.collector import start_health_monitor
from mirror.health.ui_routes import ui_routes
from mirror.maker.rest_wiring import install_code_policy, rest_listeners, rest_security, task_config_forwarder
from mirror.maker.translation_routes import translation_routes

logger = logging.getLogger(__name__)

_BACKOFF_INITIAL_S = 1.0
_BACKOFF_MAX_S = 60.0
_READY_TIMEOUT_S = 120.0
_STOP_TIMEOUT_S = 25.0
_PROBE_TIMEOUT_S = 10.0
_PROBE_SLICE_S = 0.5
#: How long a stop waits for the health monitor's probe pass; its thread is a daemon, left behind after.
_MONITOR_STOP_S = 2.0


class MirrorHerder(DistributedHerder):
    """A herder for one replication flow; as a newly elected leader it (re)configures MM2's connectors."""

    def __init__(self, *, pair: SourceAndTarget, mm_config: MirrorMakerConfig,
                 metrics: CollectorRegistry | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pair = pair
        self._mm_config = mm_config
        self._metrics = metrics
        #: False for a heartbeat-only herder: it never replicates a record.
        self.replicates = parse_boolean(mm_config.connector_base_config(pair, SOURCE_CONNECTOR_CLASS).get("enabled"))

    def replicated_records(self) -> float:
        """Records this node's source tasks replicated (acknowledged by the target), from its metrics.

        Read once a second by the slot until the first record shows (the start-up narration), never on
        the per-record path: the source task's counters are plain ints read at scrape time.
        """
        if self._metrics is None:
            return 0.0
        return sum(sample.value for family in self._metrics.collect() if family.name == "mirror_source_record_count"
                   for sample in family.samples if sample.name == "mirror_source_record_count_total")

    def on_tick_thread_start(self) -> None:
        """Every log line of this herder's thread names its flow."""
        set_context(flow=str(self.pair))

    def on_leadership_gained(self) -> None:
        """Write each connector's config from mm2.properties when it differs from the stored one
        (Java's ``MirrorHerder.rebalanceSuccess``: the newly elected leader's file wins)."""
        for connector_class in CONNECTOR_CLASSES:
            config = self._mm_config.connector_stored_config(self.pair, connector_class)
            name = config["name"]
            try:
                if self.connector_config(name) == config:
                    continue
            except NotFoundError:
                pass
            try:
                self.put_connector_config(name, config, allow_replace=True)
                logger.info("%s: configured %s", self.pair, name)
            except ConnectError as exc:
                # Java logs and carries on: e.g. the checkpoint connector is invalid when offset syncs
                # are disabled, and the other two must still run.
                logger.error("%s: connector %s not configured: %s", self.pair, name, exc)


class HerderSlot(Herder):
    """A stable REST target for one flow whose herder may be rebuilt (cluster unreachable at start).

    Supervision runs on the slot's own thread: build, start, wait until ready; on a start failure log
    it, keep the reason for ``/health``, back off and build a new herder. Once a herder is ready the
    slot only watches it (a herder that dies later is rebuilt the same way).

    The REST app is built once, before any herder exists, so the slot is the :class:`Herder` REST
    sees: every method of the contract is written out and delegates to the running herder, which lets
    mypy check that nothing is missing.
    """

    def __init__(self, pair: SourceAndTarget, build: Callable[[], MirrorHerder]) -> None:
        self.pair = pair
        self._build = build
        self._herder: MirrorHerder | None = None
        self._ready = False
        self._problem = "starting"
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._supervise, name=f"supervisor-{pair}", daemon=True)

    # -- supervision -------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def _supervise(self) -> None:
        set_context(flow=str(self.pair))
        backoff = _BACKOFF_INITIAL_S
        while not self._stopping.is_set():
            try:
                herder = self._build()
            except Exception as exc:
                if self._stopping.is_set():
                    return  # the build gave up because we stop: nothing to retry
                self._retry_later(f"cannot build the herder: {exc}", backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
                continue
            with self._lock:
                self._herder, self._ready = herder, False
            herder.start()
            try:
                ready = herder.wait_until_ready(_READY_TIMEOUT_S)
            except ConnectError as exc:
                ready = False
                reason = str(exc.__cause__ or exc)
            else:
                reason = f"not ready after {_READY_TIMEOUT_S:.0f}s"
            if ready:
                with self._lock:
                    self._ready, self._problem = True, ""
                logger.info("%s: herder running", self.pair)
                backoff = _BACKOFF_INITIAL_S
                first_record = herder.replicates
                if first_record:
                    herder.narrator.waiting_for(f"the first record replicated on {self.pair} by this node")
                while not self._stopping.wait(1.0):
                    if first_record and herder.replicated_records() > 0:
                        herder.narrator.reached("First record replicated on %s", self.pair)
                        first_record = False
                    if herder.failed():
                        break
                if self._stopping.is_set():
                    return
                reason = "the herder failed while running; see the log"
            herder.stop(_STOP_TIMEOUT_S)
            with self._lock:
                self._herder, self._ready = None, False
            self._retry_later(reason, backoff)
            backoff = min(backoff * 2, _BACKOFF_MAX_S)

    def _retry_later(self, reason: str, backoff_s: float) -> None:
        with self._lock:
            self._problem = f"{reason}; retrying in {backoff_s:.0f}s"
        logger.warning("%s: %s; retrying in %.0fs", self.pair, reason, backoff_s)
        self._stopping.wait(backoff_s)

    def stop(self, timeout_s: float = _STOP_TIMEOUT_S) -> None:
        self._stopping.set()
        with self._lock:
            herder = self._herder
        if herder is not None:
            herder.stop(timeout_s)
        if self._thread.ident is not None:  # a start that failed early never started the thread
            self._thread.join(timeout_s)

    @property
    def herder(self) -> MirrorHerder | None:
        with self._lock:
            return self._herder if self._ready else None

    def require(self) -> MirrorHerder:
        herder = self.herder
        if herder is None:
            raise ConflictError(f"The herder of flow {self.pair} is not running: {self._problem}")
        return herder

    # -- Herder: each method is served by the running herder ---------------------------------------
    # Until a herder is ready, calls that need one raise ConflictError (409, with the reason);
    # health and the session key answer for the slot itself; an optional capability answers what a
    # herder without it would (Herder's default), so the REST answer does not depend on timing.
    def health(self) -> WorkerHealth:
        herder = self.herder
        if herder is None:
            return WorkerHealth("starting", f"Flow {self.pair}: {self._problem}")
        return herder.health()

    def worker_id(self) -> str:
        return self.require().worker_id()

    def kafka_cluster_id(self) -> str | None:
        return self.require().kafka_cluster_id()

    def connectors(self) -> list[str]:
        return self.require().connectors()

    def connector_info(self, name: str) -> ConnectorInfo:
        return self.require().connector_info(name)

    def connector_config(self, name: str) -> dict[str, str]:
        return self.require().connector_config(name)

    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        return self.require().put_connector_config(name, config, allow_replace, initial_state)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        return self.require().patch_connector_config(name, patch)

    def delete_connector(self, name: str) -> None:
        self.require().delete_connector(name)

    def connector_status(self, name: str) -> ConnectorStateInfo:
        return self.require().connector_status(name)

    def task_status(self, task: ConnectorTaskId) -> TaskStateInfo:
        return self.require().task_status(task)

    def task_configs(self, name: str) -> list[TaskInfo]:
        return self.require().task_configs(name)

    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        return self.require().restart_connector(name, include_tasks, only_failed)

    def restart_task(self, task: ConnectorTaskId) -> None:
        self.require().restart_task(task)

    def pause_connector(self, name: str) -> None:
        self.require().pause_connector(name)

    def resume_connector(self, name: str) -> None:
        self.require().resume_connector(name)

    def stop_connector(self, name: str) -> None:
        self.require().stop_connector(name)

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        return self.require().connector_offsets(name)

    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> None:
        self.require().alter_connector_offsets(name, offsets)

    def reset_connector_offsets(self, name: str) -> None:
        self.require().reset_connector_offsets(name)

    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        return self.require().connector_plugins(connectors_only)

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        return self.require().plugin_config(plugin)

    def validate_connector_config(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        return self.require().validate_connector_config(config, plugin)

    def connector_active_topics(self, name: str) -> Collection[str]:
        herder = self.herder
        return super().connector_active_topics(name) if herder is None else herder.connector_active_topics(name)

    def reset_connector_active_topics(self, name: str) -> None:
        herder = self.herder
        if herder is None:
            super().reset_connector_active_topics(name)
        else:
            herder.reset_connector_active_topics(name)

    def set_cluster_logger_level(self, namespace: str, level: str) -> bool:
        herder = self.herder
        return False if herder is None else herder.set_cluster_logger_level(namespace, level)

    # -- internal endpoints (KIP-507/KIP-710) -------------------------------------------------------
    def session_key(self) -> bytes | None:
        herder = self.herder
        return None if herder is None else herder.session_key()  # None: 503 until the key is known

    def put_task_configs(self, connector: str, configs: list[dict[str, str]]) -> None:
        self.require().put_task_configs(connector, configs)

    def fence_zombies(self, connector: str) -> None:
        self.require().fence_zombies(connector)

    def verification_algorithms(self) -> Sequence[str]:
        herder = self.herder
        return super().verification_algorithms() if herder is None else herder.verification_algorithms()


def _target_cluster_id(worker_config: wc.DistributedWorkerConfig, pair: SourceAndTarget,
                       stopping: threading.Event | None = None) -> str | None:
    """The target cluster's id; ConnectError if the cluster cannot be reached within a few seconds.

    A herder lives on its target cluster. Probing it first (a metadata request, which every Kafka
    answers) turns an unreachable cluster into one short, clear failure that the slot retries with
    backoff, instead of a herder that spends its start timeout on internal-topic creation and then
    reports a topic timeout. The probe asks in short slices so that a stop (SIGTERM) is not held up
    by a cluster that does not answer (librdkafka's metadata call cannot be interrupted).
    """
    bootstrap = ",".join(worker_config[wc.BOOTSTRAP_SERVERS])
    deadline = time.monotonic() + _PROBE_TIMEOUT_S
    try:
        admin = TopicAdmin(worker_config.admin_config("cluster-id"))
    except Exception as exc:
        raise ConnectError(f"cluster {pair.target} is unreachable at {bootstrap}: {exc}") from exc
    while True:
        try:
            metadata = admin.client.list_topics(timeout=min(_PROBE_SLICE_S, max(0.01, deadline - time.monotonic())))
        except Exception as exc:
            if time.monotonic() >= deadline or (stopping is not None and stopping.is_set()):
                raise ConnectError(f"cluster {pair.target} is unreachable at {bootstrap}: {exc}") from exc
            continue
        return str(metadata.cluster_id) if metadata.cluster_id else None


class MirrorMaker:
    """All herders of one node, their shared REST server, metrics and health monitor."""

    def __init__(self, config: MirrorMakerConfig, clusters: list[str] | None, *, rest_port: int | None = None,
                 metrics_port: int | None = None, health: bool = True) -> None:
        self.config = config
        self.pairs = config.herder_pairs(clusters)
        self.registry = CollectorRegistry()
        self._herder_metrics = LabelledRegistries()
        self.registry.register(self._herder_metrics)
        register_process_metrics(self.registry, "mirror")
        self.plugins = Plugins()
        listeners, self._loopback_by_default = rest_listeners(config, rest_port)
        self.security = rest_security(config, listeners)
        self.rest = RestServer(None, listeners, ssl_context=self.security.server_ssl)
        self._metrics_port = metrics_port
        self._metrics_server: Any = None
        self._health = health
        self._previous_code_policy: plugin_allowlist.CodePolicy | None = None
        self._monitor: Any = None
        self.slots: dict[SourceAndTarget, HerderSlot] = {}
        #: Set first thing in stop(): what a herder being built checks, so SIGTERM is not held up by it.
        self._stopping = threading.Event()
        self.worker_id = ""
        self.url = ""

    def start(self) -> None:
        """Bind the REST server, start every herder (in the background), the REST server and the health
        monitor."""
        self._previous_code_policy = install_code_policy(self.config)
        self.rest.bind()
        listener = urlsplit(self.rest.url)
        # A node on loopback by default still needs an id no other node shares: its host name.
        bound_to_any = listener.hostname in (None, "", "0.0.0.0") or self._loopback_by_default
        advertised_host = self.config.raw_properties().get("rest.advertised.host.name") or (
            socket.getfqdn() if bound_to_any else listener.hostname)
        self.worker_id = f"{advertised_host}:{self.rest.port}"
        self.url = f"{self.rest.scheme}://{self.worker_id}"
        for pair in self.pairs:
            self.slots[pair] = HerderSlot(pair, functools.partial(self._build_herder, pair))
        extra_routes = [*self._start_health(), *translation_routes(self.config, self.pairs)]
        self.rest.app = create_app({(p.source, p.target): slot for p, slot in self.slots.items()},
                                   registry=self.registry, extra_routes=extra_routes, security=self.security,
                                   internal_endpoints=bool(self.config.enable_internal_rest))
        # Herders first: their start waits on the target cluster (internal topics read to their end)
        # while this thread starts the REST server. The socket is bound, so requests queue meanwhile.
        for slot in self.slots.values():
            slot.start()
        self.rest.start()
        logger.info("REST server listening on %s; herders: %s", self.rest.url,
                    ", ".join(str(p) for p in self.pairs))
        logger.info("REST API: %s; internal endpoints %s", self.security.describe(),
                    "on" if self.config.enable_internal_rest else "off (dedicated.mode.enable.internal.rest=false)")
        if self._metrics_port is not None:
            import prometheus_client

            self._metrics_server = prometheus_client.start_http_server(self._metrics_port, registry=self.registry)
            logger.info("Metrics served on port %d", self._metrics_port)

    def _start_health(self) -> list[Any]:
        if not self._health:
            return []
        self._monitor = start_health_monitor(self.config, self.pairs, self.registry)
        return list(ui_routes(self._monitor))

    def _build_herder(self, pair: SourceAndTarget) -> MirrorHerder:
        worker_config = wc.DistributedWorkerConfig(self.config.worker_config(pair))
        cluster_id = _target_cluster_id(worker_config, pair, self._stopping)
        providers = self.config.worker_providers()
        registry = CollectorRegistry()
        forwarder = task_config_forwarder(self.config, self.security, f"forward-tasks-{pair}",
                                          worker_config[wc.REST_REQUEST_TIMEOUT_MS] / 1000)
        herder = build_herder(
            worker_config, worker_id=self.worker_id, advertised_url=self.url, plugins=self.plugins,
            registry=registry, providers=providers, herder_class=MirrorHerder, log_flow=str(pair), forwarder=forwarder,
            membership=functools.partial(kafka_membership, internal_rest=bool(self.config.enable_internal_rest)),
            cluster_id=cluster_id, start_timeout_s=_READY_TIMEOUT_S,
            rest_prefix=namespace_path((pair.source, pair.target)), pair=pair, mm_config=self.config,
            metrics=registry)
        self._herder_metrics.put({"source": pair.source, "target": pair.target}, registry)
        assert isinstance(herder, MirrorHerder)  # build_herder instantiates herder_class
        return herder

    def ready(self) -> bool:
        return all(slot.herder is not None for slot in self.slots.values())

    def stop(self) -> None:
        """Stop every herder and the health monitor in parallel (tasks stopped, offsets flushed, groups
        left), then REST. Nothing here waits on a cluster that does not answer: the herder probe gives
        up on ``_stopping``, a slot backing off wakes at once, and the monitor's pass is given
        ``_MONITOR_STOP_S`` (its probe calls cannot be interrupted; its thread is a daemon)."""
        self._stopping.set()
        threads = [threading.Thread(target=slot.stop, name=f"stop-{pair}") for pair, slot in self.slots.items()]
        if self._monitor is not None:
            threads.append(threading.Thread(target=self._monitor.stop, args=(_MONITOR_STOP_S,), name="stop-health",
                                            daemon=True))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(_STOP_TIMEOUT_S + 5)
        if self._metrics_server is not None:
            server, _thread = self._metrics_server
            server.shutdown()
        self.rest.stop()
        if self._previous_code_policy is not None:
            plugin_allowlist.install(self._previous_code_policy)


def run(config: MirrorMakerConfig, clusters: list[str] | None, options: argparse.Namespace) -> ExitCode:
    """Run until SIGTERM/SIGINT/SIGHUP: :func:`connect_runtime.cli.process.run_until_stopped` and its exit codes.

    Herders start in the background (each slot retries its own cluster), so readiness is announced
    once every herder runs; only a REST or metrics port that cannot be bound fails the start.
    """
    node = MirrorMaker(config, clusters, rest_port=getattr(options, "rest_port", None),
                       metrics_port=getattr(options, "metrics_port", None))

    def announce_ready(elapsed_s: float) -> None:
        logger.info("All %d herder(s) running after %.1fs", len(node.slots), elapsed_s)

    return run_until_stopped(node, name="connect-mirror-maker", announce_ready=announce_ready,
                             poll_interval_s=0.5, start_errors=(OSError, ConnectError), log=logger)
