"""Heartbeat-based health monitoring of MirrorMaker 2 flows: model, probe, Prometheus collector, status page.

``mirror status`` (one probe pass) and the driver's background :class:`~mirror.health.collector.HealthMonitor`
share :class:`~mirror.health.probe.HealthProbe`; the figures and rules live in :mod:`mirror.health.flow_health`.
"""
