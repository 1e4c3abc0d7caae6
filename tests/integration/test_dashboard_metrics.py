"""etc/grafana-dashboard.json graphs only what a live node serves: its metric names against a real /metrics.

The real ``connect-mirror-maker`` replicates a few records between two Tansu brokers, with a consumer group
committed on the source (so checkpoints, translations and group offset syncs happen too); its ``/metrics``
is scraped until every sample name the dashboard's queries use is there, with at least one sample. The
comparison is on *sample* names, exactly as Prometheus stores them: a query must say
``..._total`` for a counter and ``..._bucket``/``_sum``/``_count`` for a histogram, or it fails here.

The same scrape shows every MM2 family under KIP-1280's name too (``kafka_connect_plugins_*`` with the
connector and task labels), and the runtime's task metrics of the issue (poll batch time, error counts).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import Cluster
from tests.integration.support.metrics_scrape import scrape
from tests.integration.support.mm2_process import MirrorMakerProcess
from tests.integration.support.replication import ROOT, write_properties
from tests.support.kafka import commit_group_offsets, create_topic, produce, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: A metric name in a PromQL expression: our namespaces, up to the selector, range or parenthesis after it.
_NAME = re.compile(r"\b((?:mirror|connect|kafka_connect)_[a-z0-9_]+)\b")
#: PromQL words that look like names but are not metrics (none today; label names never match the prefixes).
_NOT_METRICS: frozenset[str] = frozenset()


def dashboard_metric_names() -> set[str]:
    """Every metric name in the dashboard: panel queries and template-variable queries."""
    dashboard = json.loads((ROOT / "etc" / "grafana-dashboard.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v.get("type") == "query"]
    return {m for e in exprs for m in _NAME.findall(e)} - _NOT_METRICS


def test_every_dashboard_metric_is_served_by_a_live_driver(cluster_a: Cluster, cluster_b: Cluster,
                                                           tmp_path: Path) -> None:
    used = dashboard_metric_names()
    # The panels that matter most are there (so that a broken regex cannot make this test vacuous).
    assert {"mirror_flow_health", "mirror_source_record_count_total", "connect_source_task_poll_batch_seconds_bucket",
            "connect_worker_rebalance_completed_total", "connect_task_record_errors_total"} <= used
    src, tgt = unique("dm"), unique("dn")
    topic = create_topic(cluster_a.bootstrap, unique("dash"), partitions=2)
    group = unique("dash-group")
    produce(cluster_a.bootstrap, topic, 40)
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 5, (topic, 1): 5})
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                             topic, extra=(f"groups = {group}\n"
                                           "sync.group.offsets.enabled = true\n"
                                           "sync.group.offsets.interval.seconds = 1\n"
                                           "health.refresh.interval.ms = 1000\n"
                                           # A's heartbeats topic may not exist yet when the forward
                                           # flow first lists topics (the reverse herder creates it
                                           # moments later); the default 600 s refresh would then keep
                                           # replicated heartbeats, and so latency, away for the test
                                           "refresh.topics.interval.seconds = 2\n"))
    # The node binds a port of its own choosing (--rest-port 0) and logs it: a port picked here and
    # passed in could be taken by another test's client socket before the node binds it.
    with MirrorMakerProcess(props, "--rest-port", "0") as node:
        url = node.url
        missing = set(used)

        def all_served() -> bool:
            missing.intersection_update(used - set(scrape(url)))
            return not missing

        # checkpoints follow the first group refresh (5 s)
        try:
            wait_until(all_served, 120, "every dashboard metric on /metrics", interval_s=1)
        except AssertionError as exc:
            raise AssertionError(f"the dashboard uses metrics the driver never served: {sorted(missing)}\n"
                                 f"its log ends:\n{node.tail()}") from exc
        samples = scrape(url)

    flow = {"source": src, "target": tgt}

    def of_flow(name: str) -> list[dict[str, str]]:
        return [labels for labels in samples.get(name, []) if flow.items() <= labels.items()]

    # KIP-1280: each MM2 family also under its new name, with the connector and task labels.
    for legacy, new in (("mirror_source_record_count_total", "kafka_connect_plugins_record_count_total"),
                        ("mirror_source_byte_count_total", "kafka_connect_plugins_byte_count_total"),
                        ("mirror_source_record_age_ms", "kafka_connect_plugins_record_age_ms"),
                        ("mirror_source_replication_latency_seconds_bucket",
                         "kafka_connect_plugins_replication_latency_seconds_bucket"),
                        ("mirror_checkpoint_latency_seconds_count",
                         "kafka_connect_plugins_checkpoint_latency_seconds_count")):
        assert of_flow(legacy), legacy
        renamed = of_flow(new)
        assert renamed, new
        connectors = {labels["connector"] for labels in renamed}
        assert connectors <= {"MirrorSourceConnector", "MirrorCheckpointConnector"}, connectors
        assert all(labels["task"].isdigit() for labels in renamed)
    # The runtime's task metrics of this flow's source task (labels connector, task), errors at 0.
    source_task = {**flow, "connector": "MirrorSourceConnector", "task": "0"}
    for name in ("connect_source_task_poll_batch_seconds_count", "connect_task_record_errors_total",
                 "connect_task_errors_logged_total", "connect_task_last_error_timestamp_seconds"):
        assert any(source_task.items() <= labels.items() for labels in samples[name]), name
