"""Pure health rules: thresholds from mm2.properties and flags, state evaluation, RPO, lag, replay bound."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mirror.client.failover import replay_bound
from mirror.health.collector import MAX_PASS_SHARE, HealthCollector, HealthMonitor, pass_period
from mirror.health.flow_health import (
    FlowHealth,
    GroupCheckpointHealth,
    HealthReport,
    PartitionLag,
    State,
    ThresholdError,
    Thresholds,
    estimate_rpo,
    evaluate,
    lag_of,
    overall_state,
)


def part(lag_records: int | None = 0, lag_seconds: float | None = 0.0, partition: int = 0) -> PartitionLag:
    return PartitionLag("t", "A.t", partition, 100, None if lag_records is None else 100 - lag_records,
                        "offset-sync", lag_records, lag_seconds)


def flow(**fields: Any) -> FlowHealth:
    values: dict[str, Any] = {"heartbeat_age_seconds": 1.0, "heartbeat_basis": "replicated"}
    values.update(fields)
    return FlowHealth("A", "B", 1000.0, **values)


def test_thresholds_top_level_then_flow_then_flags() -> None:
    props = {"health.heartbeat.max.age.ms": "5000", "A->B.health.heartbeat.max.age.ms": "7000",
             "health.lag.max.records": "10", "health.groups.require.translatable": "TRUE"}
    assert Thresholds.from_properties(props).heartbeat_max_age_ms == 5000
    per_flow = Thresholds.from_properties(props, "A->B")
    assert (per_flow.heartbeat_max_age_ms, per_flow.lag_max_records, per_flow.require_translatable) == (7000, 10, True)
    assert Thresholds.from_properties(props, "C->B").heartbeat_max_age_ms == 5000
    flagged = per_flow.with_overrides({"heartbeat_max_age_ms": 100, "lag_max_ms": None, "unknown": 1})
    assert (flagged.heartbeat_max_age_ms, flagged.lag_max_ms) == (100, Thresholds().lag_max_ms)


@pytest.mark.parametrize("key,value", [("health.rpo.max.ms", "soon"), ("health.groups.require.translatable", "yes")])
def test_bad_threshold_names_its_key(key: str, value: str) -> None:
    with pytest.raises(ThresholdError) as info:
        Thresholds.from_properties({key: value})
    assert info.value.key == key


@pytest.mark.parametrize("age,expected", [(None, State.DOWN), (1.0, State.HEALTHY), (30.0, State.HEALTHY),
                                          (30.001, State.DEGRADED), (120.0, State.DEGRADED),
                                          (120.5, State.DOWN)])
def test_heartbeat_age_rules(age: float | None, expected: State) -> None:
    state, reasons = evaluate(flow(heartbeat_age_seconds=age), Thresholds())
    assert state is expected
    assert bool(reasons) == (expected is not State.HEALTHY)


def test_lag_rules_and_disabled_rules() -> None:
    lagging = flow(partitions=[part(5, 61.0), part(0, 0.0, 1)])
    state, reasons = evaluate(lagging, Thresholds())
    assert state is State.DEGRADED and "A.t-0" in reasons[0]
    assert evaluate(lagging, Thresholds(lag_max_ms=-1))[0] is State.HEALTHY
    assert evaluate(flow(partitions=[part(11, 1.0)]), Thresholds(lag_max_records=10))[0] is State.DEGRADED
    assert evaluate(flow(partitions=[part(10, 1.0)]), Thresholds(lag_max_records=10))[0] is State.HEALTHY
    assert evaluate(flow(rpo_seconds=301.0), Thresholds(rpo_max_ms=300_000))[0] is State.DOWN
    assert evaluate(flow(errors=["source cluster A unreachable"]), Thresholds())[0] is State.DOWN


def test_group_rules() -> None:
    ok = GroupCheckpointHealth("g1", 2, 2, [], 0, 5.0)
    missing = GroupCheckpointHealth("g2", 2, 1, ["t-1"], 0, 90.0)
    assert ok.translatable and not missing.translatable
    assert not GroupCheckpointHealth("g3", 0, 0, [], 0, None).translatable
    f = flow(groups=[ok, missing])
    assert evaluate(f, Thresholds())[0] is State.HEALTHY
    assert evaluate(f, Thresholds(require_translatable=True)) == (State.DEGRADED, ["group(s) not translatable: g2"])
    assert evaluate(f, Thresholds(checkpoint_max_age_ms=60_000))[0] is State.DEGRADED


def test_rpo_is_the_oldest_unreplicated_record_or_the_heartbeat_age() -> None:
    parts = [part(3, 12.5), part(0, 0.0, 1), part(None, None, 2)]
    assert estimate_rpo(parts, 1.0, source_readable=True) == (12.5, "lag")
    assert estimate_rpo([], 1.0, source_readable=True) == (0.0, "lag")
    assert estimate_rpo(parts, 42.0, source_readable=False) == (42.0, "heartbeat")
    assert estimate_rpo([part(None, None)], 42.0, source_readable=True) == (42.0, "heartbeat")
    assert estimate_rpo([], None, source_readable=False) == (None, "none")


def test_lag_never_negative_and_unknown_when_progress_unknown() -> None:
    assert lag_of(100, 75) == 25
    assert lag_of(100, 120) == 0
    assert lag_of(100, None) is None and lag_of(None, 5) is None


def test_report_state_and_json() -> None:
    healthy, degraded = flow(), flow(heartbeat_age_seconds=40.0)
    for f in (healthy, degraded):
        f.state, f.reasons = evaluate(f, Thresholds())
    report = HealthReport(1000.0, [healthy, degraded])
    assert report.state is State.DEGRADED and overall_state([]) is State.HEALTHY
    data = report.to_dict()
    assert data["state"] == "degraded" and data["flows"][1]["flow"] == "A->B"
    assert data["flows"][0]["lag_records"] == 0


def test_replay_bound_from_offset_sync_and_remote_end() -> None:
    syncs = [(0, 1000), (50, 1050), (90, 1090)]
    # committed upstream 63: newest sync at or below is (50, 1050): E = 1063; checkpoint says 1050
    assert replay_bound(1050, 63, syncs, remote_end=1100) == (1063, 13, "offset-sync")
    assert replay_bound(1050, 63, syncs, remote_end=1060) == (1060, 10, "offset-sync")  # capped at the end
    assert replay_bound(1050, 63, [], remote_end=1100) == (1100, 50, "remote-end")
    assert replay_bound(1050, 63, [], remote_end=None) == (None, None, "unknown")
    assert replay_bound(1090, 90, syncs, remote_end=None) == (1090, 0, "offset-sync")


class _FakeProbe:
    def __init__(self, report: HealthReport) -> None:
        self.report = report
        self.closed = False

    def check(self) -> HealthReport:
        return self.report

    def watch_latency(self, window_s: float, interval_s: float = 0.2, stop: Any = None) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_collector_exposes_the_latest_report() -> None:
    f = flow(partitions=[part(7, 3.5)], groups=[GroupCheckpointHealth("g", 3, 3, [], 2, 2.0)], rpo_seconds=3.5,
             latency_seconds=0.4)
    f.state, f.reasons = evaluate(f, Thresholds())
    probe = _FakeProbe(HealthReport(1000.0, [f]))
    monitor = HealthMonitor(probe)  # type: ignore[arg-type]
    registry = CollectorRegistry()
    registry.register(HealthCollector(monitor))
    assert registry.get_sample_value("mirror_heartbeat_age_seconds", {"source": "A", "target": "B"}) is None
    monitor.refresh()
    labels = {"source": "A", "target": "B"}
    assert registry.get_sample_value("mirror_heartbeat_age_seconds", labels) == 1.0
    assert registry.get_sample_value("mirror_replication_latency_seconds", labels) == 0.4
    assert registry.get_sample_value("mirror_flow_rpo_seconds", labels) == 3.5
    tp = {**labels, "topic": "A.t", "partition": "0"}
    assert registry.get_sample_value("mirror_replication_lag_records", tp) == 7
    assert registry.get_sample_value("mirror_replication_lag_seconds", tp) == 3.5
    assert registry.get_sample_value("mirror_group_translatable", {**labels, "group": "g"}) == 1
    assert registry.get_sample_value("mirror_checkpoint_age_seconds", {**labels, "group": "g"}) == 2.0
    assert registry.get_sample_value("mirror_group_checkpoints_behind", {**labels, "group": "g"}) == 2
    assert registry.get_sample_value("mirror_flow_health", {**labels, "state": "healthy"}) == 1
    assert registry.get_sample_value("mirror_flow_health", {**labels, "state": "down"}) == 0
    assert monitor.history()[0]["flows"]["A->B"]["lag_records"] == 7
    monitor.start()
    monitor.stop()
    assert probe.closed


def test_flow_specs_from_mm2_properties() -> None:
    from mirror.config.mirror_maker_config import MirrorMakerConfig
    from mirror.health.probe import flow_specs

    config = MirrorMakerConfig({
        "clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092",
        "A->B.enabled": "true", "A->B.emit.heartbeats.interval.seconds": "5",
        "A->B.offset-syncs.topic.location": "target", "health.lag.max.ms": "1000",
        "A->B.health.heartbeat.max.age.ms": "20000", "replication.policy.separator": "_",
    })
    pairs = config.cluster_pairs()
    assert [str(p) for p in pairs] == ["A->B", "B->A"]  # B->A: the heartbeat-only herder
    [spec] = flow_specs(config, pairs, {"lag_max_records": 5})
    assert (spec.source, spec.target, spec.heartbeat_interval_s) == ("A", "B", 5.0)
    assert not spec.offset_syncs_on_source and spec.offsets_topic == "mm2-offsets.A.internal"
    assert spec.policy.format_remote_topic("A", "t") == "A_t"
    assert (spec.thresholds.lag_max_ms, spec.thresholds.heartbeat_max_age_ms, spec.thresholds.lag_max_records) == (
        1000, 20000, 5)


def test_health_clients_name_who_reads_in_their_client_id() -> None:
    """The brokers see the node and the purpose, the user's ``client.id`` first (as the tasks' clients),
    never librdkafka's default ``rdkafka``."""
    from mirror.config.mirror_maker_config import MirrorMakerConfig
    from mirror.health.probe import cluster_io

    base = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}
    io = cluster_io(MirrorMakerConfig(base), "A", "node-1:8083|mirror-health")
    assert io._consumer_config["client.id"] == "node-1:8083|mirror-health|health-consumer"
    assert io._admin_config["client.id"] == "node-1:8083|mirror-health|health-admin"
    assert cluster_io(MirrorMakerConfig(base), "B")._consumer_config["client.id"] == "mirror-status|health-consumer"
    named = cluster_io(MirrorMakerConfig({**base, "client.id": "ops"}), "A", "n|mirror-health")
    assert named._admin_config["client.id"] == "ops|n|mirror-health|health-admin"


def test_monitor_start_reports_bad_threshold_as_config_error() -> None:
    from connect_runtime.api.errors import ConfigError
    from mirror.config.mirror_maker_config import MirrorMakerConfig
    from mirror.health.collector import start_health_monitor

    config = MirrorMakerConfig({"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092",
                                "A->B.enabled": "true", "A->B.health.rpo.max.ms": "ten minutes"})
    with pytest.raises(ConfigError, match=r"A->B\.health\.rpo\.max\.ms"):
        start_health_monitor(config, config.cluster_pairs(), CollectorRegistry())


def test_lag_unknown_when_a_cluster_is_unreachable() -> None:
    assert flow().lag_records == 0 and flow().max_lag_seconds == 0.0  # no topic replicated: nothing lags
    unreachable = flow(errors=["target cluster B unreachable"])
    assert unreachable.lag_records is None and unreachable.max_lag_seconds is None


def test_a_slow_pass_spaces_the_next_one_so_the_monitor_takes_a_bounded_share_of_its_thread() -> None:
    """At thousands of partitions a pass takes seconds: the next starts no sooner than the pass took
    divided by MAX_PASS_SHARE, so passes never run back to back (the refresh interval is the floor)."""
    assert pass_period(2.0, 0.1) == 2.0
    assert pass_period(2.0, 0.5) == 2.0
    assert pass_period(2.0, 1.5) == 1.5 / MAX_PASS_SHARE
    assert 3.0 / pass_period(2.0, 3.0) == MAX_PASS_SHARE


def test_the_monitor_thread_spaces_slow_passes() -> None:
    class SlowProbe(_FakeProbe):
        def __init__(self) -> None:
            super().__init__(HealthReport(1000.0, []))
            self.passes = 0

        def check(self) -> HealthReport:
            self.passes += 1
            time.sleep(0.15)
            return self.report

    probe = SlowProbe()
    monitor = HealthMonitor(probe, interval_s=0.01)  # type: ignore[arg-type]
    monitor.start()
    time.sleep(1.0)
    monitor.stop()
    # back to back that is 6 passes in a second; spaced, one every 0.15 / MAX_PASS_SHARE = 0.6 s at least
    # (2 in a second; 3 only if the sleep overran by a fifth of a second)
    assert 1 <= probe.passes <= 3
