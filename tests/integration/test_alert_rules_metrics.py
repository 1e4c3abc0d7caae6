"""etc/prometheus/alerts.yml selects only what a live node serves: every metric and label of every rule,
against a real ``/metrics``.

The real ``connect-mirror-maker`` replicates a few records between two Tansu brokers, with a consumer group
committed on the source (so checkpoints and group figures exist); its ``/metrics`` is scraped until every
metric a rule selects is there with every label the rule matches on (``{label="value"}``, with that value),
aggregates by (``by (...)``) or joins on against a bare metric (``on (...) metric``). A rule that names a
metric or label the node does not serve would never fire: this test fails instead.

Not from the node, so not looked for: ``up`` (Prometheus's own series for each scrape), the ``instance`` and
``job`` labels (Prometheus adds them to every scraped series) and the ``mirror:*`` recording rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.conftest import Cluster
from tests.integration.support.metrics_scrape import scrape
from tests.integration.support.mm2_process import MirrorMakerProcess
from tests.integration.support.replication import ROOT, write_properties
from tests.support.kafka import commit_group_offsets, create_topic, produce, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RULES = ROOT / "etc" / "prometheus" / "alerts.yml"
#: What Prometheus itself provides: not served by the node.
FROM_PROMETHEUS_METRICS = frozenset({"up"})
FROM_PROMETHEUS_LABELS = frozenset({"instance", "job"})

_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
                       "bool", "offset", "inf", "nan"})
_CLAUSE = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^{}]*\})?")
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"([^"]*)"')


def _metrics_in(expr: str) -> list[tuple[str, dict[str, str]]]:
    """Every metric selector of ``expr``: (name, its ``label="value"`` matchers, ``=`` only)."""
    bare = _CLAUSE.sub(" ", expr)
    bare = re.sub(r"\[[^\]]*\]", " ", bare)  # range selectors and subqueries
    found: list[tuple[str, dict[str, str]]] = []
    for match in _SELECTOR.finditer(bare):
        name, braces = match.group(1), match.group(2) or ""
        following = bare[match.end():].lstrip()
        if name.lower() in _KEYWORDS or following.startswith("(") or re.fullmatch(r"[0-9e.]+", name):
            continue  # a function, an aggregation, a keyword or a number
        matchers = {label: value for label, op, value in _MATCHER.findall(braces) if op == "="}
        found.append((name, matchers))
    return found


def _balanced(text: str, start: int) -> str:
    """The parenthesised expression opening at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i + 1]
    raise ValueError(f"unbalanced parentheses in {text!r}")


def _grouped_labels(expr: str) -> list[tuple[str, set[str]]]:
    """(metric, labels) for each ``by (labels) (inner)`` over the metrics of ``inner``, and each
    ``on (labels) [group_left (...)] metric`` over that bare metric."""
    pairs: list[tuple[str, set[str]]] = []
    for clause in _CLAUSE.finditer(expr):
        kind, labels = clause.group(1), {a.strip() for a in clause.group(2).split(",") if a.strip()}
        rest = expr[clause.end():]
        if kind == "by":
            opening = clause.end() + len(rest) - len(rest.lstrip())
            if expr[opening] == "(":
                pairs += [(name, labels) for name, _ in _metrics_in(_balanced(expr, opening))]
        elif kind == "on":
            rest = re.sub(r"^\s*group_(?:left|right)\s*\([^()]*\)", "", rest)
            bare = re.match(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{|$|\s|\))", rest)
            after = rest[bare.end(1):].lstrip() if bare else ""
            if bare and not after.startswith("(") and not re.match(r"(by|without)\b", after):
                pairs.append((bare.group(1), labels))
    return pairs


@dataclass
class Need:
    """What the rules need of one metric: labels, and for some of them the values they match."""

    labels: set[str] = field(default_factory=set)
    values: dict[str, set[str]] = field(default_factory=dict)


def wanted() -> dict[str, Need]:
    """Per metric the rules select from the node: the labels they need and the values they match."""
    needs: dict[str, Need] = {}
    for group in yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]:
        for rule in group["rules"]:
            expr = rule["expr"]
            for name, matchers in _metrics_in(expr):
                need = needs.setdefault(name, Need())
                for label, value in matchers.items():
                    need.labels.add(label)
                    need.values.setdefault(label, set()).add(value)
            for name, labels in _grouped_labels(expr):
                needs.setdefault(name, Need()).labels.update(labels)
    return {name: need for name, need in needs.items()
            if name not in FROM_PROMETHEUS_METRICS and ":" not in name}


def missing(samples: dict[str, list[dict[str, str]]], needs: dict[str, Need]) -> list[str]:
    """What the scrape lacks of ``needs``, one line each."""
    problems = []
    for name, need in sorted(needs.items()):
        series = samples.get(name)
        if not series:
            problems.append(f"{name}: not served")
            continue
        for label in sorted(need.labels - FROM_PROMETHEUS_LABELS):
            if not any(label in s for s in series):
                problems.append(f"{name}: no series has the label {label!r}")
            for value in sorted(need.values.get(label, ())):
                if not any(s.get(label) == value for s in series):
                    problems.append(f"{name}: no series with {label}={value!r}")
    return problems


def test_the_rules_extraction_sees_what_the_rules_select() -> None:
    """The extraction is not vacuous: it finds the metrics, values and grouping labels the rules use."""
    needs = wanted()
    assert {"mirror_replication_lag_seconds", "mirror_source_record_count_total", "mirror_group_checkpoints_behind",
            "connect_task_status", "mirror_source_loss_events_total", "mirror_process_threads",
            "process_open_fds", "connect_worker_task_count", "mirror_heartbeat_age_seconds"} <= set(needs)
    assert needs["connect_task_status"].values == {"state": {"FAILED", "RUNNING"}}
    assert {"source", "target", "connector", "task", "state"} <= needs["connect_task_status"].labels
    assert {"source", "target", "group"} <= needs["mirror_group_checkpoints_behind"].labels
    assert {"source", "target", "reason"} <= needs["mirror_source_loss_events_total"].labels
    assert {"topic", "partition"} <= needs["mirror_replication_lag_records"].labels
    assert {"source", "target"} <= needs["mirror_heartbeat_age_seconds"].labels
    assert {"instance", "job"} <= needs["mirror_process_threads"].labels
    assert "up" not in needs and not any(":" in name for name in needs)
    assert not set(needs) & {"sum", "max", "min", "count", "delta", "increase", "changes"}, set(needs)


def test_every_metric_and_label_of_the_alert_rules_is_served_by_a_live_node(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    needs = wanted()
    src, tgt = unique("am"), unique("an")
    topic = create_topic(cluster_a.bootstrap, unique("alerts"), partitions=2)
    group = unique("alerts-group")
    produce(cluster_a.bootstrap, topic, 40)
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 5, (topic, 1): 5})
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                             topic, extra=(f"groups = {group}\n"
                                           "health.refresh.interval.ms = 1000\n"
                                           # the reverse herder creates A's heartbeats topic moments after
                                           # the forward flow's first topic listing: list again soon
                                           "refresh.topics.interval.seconds = 2\n"))
    with MirrorMakerProcess(props, "--rest-port", "0") as node:
        url = node.url
        problems: list[str] = []

        def all_served() -> bool:
            problems[:] = missing(scrape(url), needs)
            return not problems

        try:
            wait_until(all_served, 120, "every metric and label of the alert rules on /metrics", interval_s=1)
        except AssertionError as exc:
            raise AssertionError("the alert rules select what the node never served:\n" + "\n".join(problems)
                                 + f"\nits log ends:\n{node.tail()}") from exc
        samples = scrape(url)
    # The flow's own series carry its aliases: the rules' per-flow aggregation finds this flow.
    flow = {"source": src, "target": tgt}
    for name in ("mirror_flow_health", "mirror_group_checkpoints_behind", "mirror_source_loss_events_total",
                 "connect_task_status"):
        assert any(flow.items() <= labels.items() for labels in samples[name]), name
