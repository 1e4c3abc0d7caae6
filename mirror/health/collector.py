"""The health figures of the running driver: a background monitor, its Prometheus metrics and the status page.

``start_health_monitor(config, pairs, registry)`` starts a :class:`HealthMonitor`: a daemon thread
that runs a :class:`~mirror.health.probe.HealthProbe` pass every ``health.refresh.interval.ms``
(default 2000; further apart when a pass takes more than :data:`MAX_PASS_SHARE` of that) and keeps the
latest :class:`~mirror.health.flow_health.HealthReport` plus a short time series
for the status page. A :class:`HealthCollector` registered on the given registry turns the latest
report into metrics at scrape time: a scrape never talks to Kafka, so it is cheap and cannot hang.

Metric names and labels are listed in ``docs/metrics.md``.

The status page (:func:`ui_routes`): ``GET /ui`` (HTML + JS, no external resources) and
``GET /ui/api/status`` (JSON). The page polls the JSON every two seconds and draws its charts itself
(inline SVG), so it works on machines and networks without Internet access. Mount with
``create_app(herders, registry, extra_routes=ui_routes(monitor))``.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from connect_runtime.api.errors import ConfigError
from mirror.config.mirror_maker_config import MirrorMakerConfig, SourceAndTarget
from mirror.health.flow_health import FlowHealth, HealthReport, State, ThresholdError
from mirror.health.probe import HealthProbe

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

logger = logging.getLogger(__name__)

REFRESH_INTERVAL = "health.refresh.interval.ms"
REFRESH_INTERVAL_DEFAULT_MS = 2000
HISTORY_POINTS = 300  # 10 minutes at the default refresh interval
GROUPS_INTERVAL_S = 10.0  # consumer groups (one request per group) are re-listed at most this often
#: The most of the monitor thread's time its passes take. A pass reads and models every replicated
#: partition: at thousands of partitions it takes seconds of Python, and passes back to back at the
#: refresh interval would hold the GIL beside the tasks and the group membership's heartbeats. Passes
#: then come further apart (the lag figures age a few seconds more), the cost per second stays bounded.
MAX_PASS_SHARE = 0.25
_ASSETS = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}


class HealthMonitor:
    """Runs probe passes in a daemon thread; :meth:`latest` and :meth:`history` are thread-safe."""

    def __init__(self, probe: HealthProbe, interval_s: float = REFRESH_INTERVAL_DEFAULT_MS / 1000,
                 history_points: int = HISTORY_POINTS) -> None:
        self._probe = probe
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._latest: HealthReport | None = None
        self._history: collections.deque[dict[str, Any]] = collections.deque(maxlen=history_points)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> HealthMonitor:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="mirror-health", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 15.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                logger.warning("health monitor thread did not stop within %.0fs", timeout_s)
                return  # the daemon thread still uses the probe's clients: leave them to it
            self._thread = None
        self._probe.close()

    def latest(self) -> HealthReport | None:
        with self._lock:
            return self._latest

    def history(self) -> list[dict[str, Any]]:
        """Per pass: ``{"t": epoch s, "flows": {"A->B": {heartbeat_age, latency, lag_records, ...}}}``."""
        with self._lock:
            return list(self._history)

    def refresh(self) -> HealthReport:
        """One probe pass now (also used by the thread); stores and returns the report."""
        report = self._probe.check()
        point = {"t": report.checked_at, "flows": {f.name: _point(f) for f in report.flows}}
        with self._lock:
            self._latest = report
            self._history.append(point)
        return report

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            period = self.interval_s
            try:
                self.refresh()
                period = pass_period(self.interval_s, time.monotonic() - started)
                # between passes, watch the replicated heartbeats closely: latency to ~0.2 s
                remaining = period - (time.monotonic() - started)
                if remaining > 0.3:
                    self._probe.watch_latency(remaining - 0.1, stop=self._stop.is_set)
            except Exception:  # one bad pass must not end monitoring
                logger.warning("health probe pass failed", exc_info=True)
            self._stop.wait(max(0.1, period - (time.monotonic() - started)))


def pass_period(interval_s: float, pass_s: float) -> float:
    """Seconds from the start of a pass that took ``pass_s`` to the start of the next: the refresh
    interval, or longer when the pass would otherwise take more than :data:`MAX_PASS_SHARE` of the time."""
    return max(interval_s, pass_s / MAX_PASS_SHARE)


def _point(flow: FlowHealth) -> dict[str, Any]:
    return {"state": flow.state.label, "heartbeat_age": flow.heartbeat_age_seconds,
            "latency": flow.latency_seconds, "lag_records": flow.lag_records,
            "lag_seconds": flow.max_lag_seconds, "rpo": flow.rpo_seconds}


class HealthCollector(Collector):
    """Exposes the monitor's latest report; emits nothing until the first pass finished."""

    def __init__(self, monitor: HealthMonitor) -> None:
        self._monitor = monitor

    def describe(self) -> Iterable[Any]:
        return []  # no samples at registration time: the report does not exist yet

    def collect(self) -> Iterator[GaugeMetricFamily]:
        report = self._monitor.latest()
        if report is None:
            return
        flow_labels = ["source", "target"]
        heartbeat = GaugeMetricFamily("mirror_heartbeat_age_seconds",
                                      "Age of the newest heartbeat replicated onto the target", labels=flow_labels)
        latency = GaugeMetricFamily("mirror_replication_latency_seconds",
                                    "End-to-end latency of the newest replicated heartbeat (upper bound)",
                                    labels=flow_labels)
        part_labels = [*flow_labels, "topic", "partition"]
        lag_records = GaugeMetricFamily("mirror_replication_lag_records",
                                        "Source records not yet replicated, per remote partition", labels=part_labels)
        lag_seconds = GaugeMetricFamily("mirror_replication_lag_seconds",
                                        "Age of the oldest source record not yet replicated", labels=part_labels)
        rpo = GaugeMetricFamily("mirror_flow_rpo_seconds", "Estimated recovery point objective of the flow",
                                labels=flow_labels)
        group_labels = [*flow_labels, "group"]
        translatable = GaugeMetricFamily("mirror_group_translatable",
                                         "1 when every committed partition of the group has a checkpoint",
                                         labels=group_labels)
        checkpoint_age = GaugeMetricFamily("mirror_checkpoint_age_seconds",
                                           "Age of the group's newest checkpoint on the target", labels=group_labels)
        # An idle group's checkpoint ages without anything being wrong (MM2 checkpoints only offsets that
        # moved): a stale checkpoint is one that is old *and* behind the group's newer commit on the source.
        behind = GaugeMetricFamily("mirror_group_checkpoints_behind",
                                   "Partitions whose newest checkpoint is older than the group's commit on the "
                                   "source", labels=group_labels)
        health = GaugeMetricFamily("mirror_flow_health", "1 for the flow's current state",
                                   labels=[*flow_labels, "state"])
        for flow in report.flows:
            names = [flow.source, flow.target]
            if flow.heartbeat_age_seconds is not None:
                heartbeat.add_metric(names, flow.heartbeat_age_seconds)
            if flow.latency_seconds is not None:
                latency.add_metric(names, flow.latency_seconds)
            if flow.rpo_seconds is not None:
                rpo.add_metric(names, flow.rpo_seconds)
            for p in flow.partitions:
                labels = [*names, p.remote_topic, str(p.partition)]
                if p.lag_records is not None:
                    lag_records.add_metric(labels, p.lag_records)
                if p.lag_seconds is not None:
                    lag_seconds.add_metric(labels, p.lag_seconds)
            for g in flow.groups:
                translatable.add_metric([*names, g.group], 1.0 if g.translatable else 0.0)
                behind.add_metric([*names, g.group], g.behind)
                if g.checkpoint_age_seconds is not None:
                    checkpoint_age.add_metric([*names, g.group], g.checkpoint_age_seconds)
            for state in State:
                health.add_metric([*names, state.label], 1.0 if flow.state is state else 0.0)
        yield from (heartbeat, latency, lag_records, lag_seconds, rpo, translatable, checkpoint_age, behind, health)


def start_health_monitor(config: MirrorMakerConfig, pairs: Iterable[SourceAndTarget],
                         registry: CollectorRegistry, node: str = "") -> HealthMonitor:
    """Start monitoring ``pairs`` and register the metrics on ``registry``; call ``stop()`` at shutdown.
    ``node``: the node's id (its worker id), which the monitor's clients carry in their ``client.id``
    (``<node>|mirror-health|health-consumer``).

    Raises ConfigError (naming ``file:line``) for a malformed ``health.*`` key. Heartbeat-only pairs are
    ignored; a cluster that cannot be reached is reported as ``down``, never raised.
    """
    raw = config.raw_properties()
    try:
        interval_ms = int(raw.get(REFRESH_INTERVAL, REFRESH_INTERVAL_DEFAULT_MS))
    except ValueError:
        logger.warning("%s=%r is not an integer; using %d", REFRESH_INTERVAL, raw.get(REFRESH_INTERVAL),
                       REFRESH_INTERVAL_DEFAULT_MS)
        interval_ms = REFRESH_INTERVAL_DEFAULT_MS
    try:
        probe = HealthProbe.from_config(config, list(pairs), groups_interval_s=GROUPS_INTERVAL_S,
                                        client_label="|".join(filter(None, (node, "mirror-health"))))
    except ThresholdError as exc:
        raise ConfigError(f"{config.location(exc.key)}: {exc}", exc.key) from exc
    monitor = HealthMonitor(probe, max(0.5, interval_ms / 1000))
    registry.register(HealthCollector(monitor))
    return monitor.start()


def _asset(name: str) -> bytes:
    return resources.files("mirror").joinpath("ui").joinpath(name).read_bytes()


def ui_routes(monitor: HealthMonitor) -> list[BaseRoute]:
    """The routes of the status page, reading ``monitor``'s latest report and history."""
    # Imported here: only the driver serves the page; `mirror status --watch` runs the monitor without it.
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def page(_: Request) -> Response:
        return Response(_asset("index.html"), media_type="text/html; charset=utf-8",
                        headers={"Cache-Control": "no-cache"})

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:
            return Response(status_code=404)
        return Response(_asset(name), media_type=_ASSETS[name], headers={"Cache-Control": "no-cache"})

    async def status(_: Request) -> Response:
        report = monitor.latest()
        body = {"report": report.to_dict() if report is not None else None,
                "history": monitor.history(), "refresh_interval_seconds": monitor.interval_s}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return [
        Route("/ui", page, methods=["GET"]),
        Route("/ui/", page, methods=["GET"]),
        Route("/ui/api/status", status, methods=["GET"]),
        Route("/ui/static/{name}", asset, methods=["GET"]),
    ]
