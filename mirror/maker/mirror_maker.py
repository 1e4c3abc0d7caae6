"""MirrorMaker: one MM2 node, every herder of the process and what they share, and its run loop.

What ``connect-mirror-maker mm2.properties [--clusters B ...]`` runs (Kafka's ``MirrorMaker.java`` and
``MirrorHerder.java``):

* For each herder pair of :meth:`MirrorMakerConfig.herder_pairs` (the target clusters named by
  ``--clusters``, all without it, including the heartbeat-only reverse pairs of docs/architecture.md) one
  :class:`~mirror.maker.mirror_herder.MirrorHerder`: a Connect cluster member of group ``<src>-mm2``
  on the *target* cluster, with its own config/offset/status topics (``mm2-*.<src>.internal``).
  Several processes started with the same file share each pair's connectors and tasks through Kafka's group coordinator.
* Shared by all herders of the process: one plugin registry, one REST server (each herder's Connect
  API under ``/<src>/<tgt>/``, forwarding between nodes included, KIP-710 in spirit), one ``/metrics``
  (each herder's metrics labelled ``source``/``target``), the health monitor and the status page
  (``/ui``).
* A herder whose leader role is newly acquired writes the three MM2 connector configs
  (Source, Heartbeat, Checkpoint, in Java's order) when they differ from what is stored, so the
  leader's file wins, as in Java.
* A herder that cannot reach its cluster is rebuilt with exponential backoff (1 s up to 60 s) by its
  :class:`~mirror.maker.herder_slot.HerderSlot`; its REST namespace answers 503/409 meanwhile and
  ``/health`` says why; the other herders are not disturbed.

:class:`MirrorMaker` builds each flow's herder through the runtime's typed factory
(:func:`connect_runtime.runtime.distributed.assembly.build_herder`), after probing the target cluster so that an
unreachable cluster is one short, clear failure; the supervision of one flow is its
:class:`~mirror.maker.herder_slot.HerderSlot`. :func:`run` is the command's run loop (Java's
``MirrorMaker.main``).

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
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.errors import ConnectError
from connect_runtime.cli.process import ExitCode, run_until_stopped
from connect_runtime.cli.process_metrics import register_process_metrics
from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.metrics import LabelledRegistries, MergedFamilies
from connect_runtime.rest.app import create_app, namespace_path
from connect_runtime.rest.server import RestServer
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.distributed.assembly import build_herder, kafka_membership
from connect_runtime.runtime.worker.plugins import Plugins
from mirror.config.mirror_maker_config import MirrorMakerConfig, SourceAndTarget
from mirror.health.collector import start_health_monitor, ui_routes
from mirror.maker.flow_commit import flow_commit_routes
from mirror.maker.herder_slot import READY_TIMEOUT_S, STOP_TIMEOUT_S, HerderSlot
from mirror.maker.mirror_herder import MirrorHerder
from mirror.maker.rest_wiring import install_code_policy, rest_listeners, rest_security, task_config_forwarder
from mirror.maker.translation_routes import translation_routes

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 10.0
PROBE_SLICE_S = 0.5
#: How long a stop waits for the health monitor's probe pass; its thread is a daemon, left behind after.
MONITOR_STOP_S = 2.0


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
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    try:
        admin = TopicAdmin(worker_config.admin_config("cluster-id"))
    except Exception as exc:
        raise ConnectError(f"cluster {pair.target} is unreachable at {bootstrap}: {exc}") from exc
    while True:
        try:
            metadata = admin.client.list_topics(timeout=min(PROBE_SLICE_S, max(0.01, deadline - time.monotonic())))
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
        extra_routes = [*self._start_health(), *translation_routes(self.config, self.pairs, self.worker_id),
                        *flow_commit_routes(self.slots)]
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

            self._metrics_server = prometheus_client.start_http_server(self._metrics_port,
                                                                       registry=MergedFamilies(self.registry))
            logger.info("Metrics served on port %d", self._metrics_port)

    def _start_health(self) -> list[Any]:
        if not self._health:
            return []
        self._monitor = start_health_monitor(self.config, self.pairs, self.registry, self.worker_id)
        return list(ui_routes(self._monitor))

    def _build_herder(self, pair: SourceAndTarget) -> MirrorHerder:
        worker_config = wc.DistributedWorkerConfig(self.config.worker_config(pair))
        cluster_id = _target_cluster_id(worker_config, pair, self._stopping)
        providers = self.config.worker_providers()
        registry = CollectorRegistry()
        forwarder = task_config_forwarder(self.config, self.security, f"forward-tasks-{pair}",
                                          worker_config[wc.REST_REQUEST_TIMEOUT_MS] / 1000)
        flow_herder = functools.partial(MirrorHerder, pair=pair, mm_config=self.config, metrics=registry)
        herder = build_herder(
            worker_config, flow_herder, worker_id=self.worker_id, advertised_url=self.url, plugins=self.plugins,
            registry=registry, providers=providers, log_flow=str(pair), forwarder=forwarder,
            membership=functools.partial(kafka_membership, internal_rest=bool(self.config.enable_internal_rest)),
            cluster_id=cluster_id, start_timeout_s=READY_TIMEOUT_S,
            rest_prefix=namespace_path((pair.source, pair.target)))
        self._herder_metrics.put({"source": pair.source, "target": pair.target}, registry)
        return herder

    def ready(self) -> bool:
        return all(slot.herder is not None for slot in self.slots.values())

    def stop(self) -> None:
        """Stop REST, then every herder and the health monitor in parallel (tasks stopped, offsets flushed,
        groups left), then the metrics endpoint. REST goes first, as in Java's ``MirrorMaker.stop`` (and
        ``Connect.stop``): requests in flight are answered by herders still running, and a later one (a
        follower's ``PUT .../fence``, a forwarded config) finds the port closed and goes to the next leader,
        instead of reaching a herder that is stopping. Nothing here waits on a cluster that does not answer:
        the herder probe gives up on ``_stopping``, a slot backing off wakes at once, and the monitor's pass
        is given ``MONITOR_STOP_S`` (its probe calls cannot be interrupted; its thread is a daemon)."""
        self._stopping.set()
        self.rest.stop()
        threads = [threading.Thread(target=slot.stop, name=f"stop-{pair}") for pair, slot in self.slots.items()]
        if self._monitor is not None:
            threads.append(threading.Thread(target=self._monitor.stop, args=(MONITOR_STOP_S,), name="stop-health",
                                            daemon=True))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(STOP_TIMEOUT_S + 5)
        if self._metrics_server is not None:
            server, _thread = self._metrics_server
            server.shutdown()
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
