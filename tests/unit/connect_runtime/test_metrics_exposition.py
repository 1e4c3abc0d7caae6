"""/metrics over several herders' registries: one family per name in the text, the text generate_latest gives
for the merged families, rendered a family at a time."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Iterator

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from connect_runtime.metrics import LabelledRegistries, MergedFamilies, exposition


def _herder_registry(flow: str, series: int) -> CollectorRegistry:
    registry = CollectorRegistry()
    records = Counter("mirror_records", "Records copied", ["topic"], registry=registry)
    for i in range(series):
        records.labels(f"{flow}.topic-{i}").inc(i)
    Histogram("mirror_latency_seconds", "Latency", registry=registry).observe(0.2)
    if flow == "B":  # a family only one herder has
        Gauge("mirror_only_b", "Only on B", registry=registry).set(1)

    class Custom(prometheus_client.registry.Collector):
        def collect(self) -> list[CounterMetricFamily]:
            family = CounterMetricFamily("mirror_custom", "From a collector", labels=["flow"])
            family.add_metric([flow], 3)
            return [family]

    registry.register(Custom())
    return registry


def _node(series: int) -> CollectorRegistry:
    node = CollectorRegistry()
    herders = LabelledRegistries()
    node.register(herders)
    herders.add({"source": "A", "target": "B"}, _herder_registry("A", series))
    herders.add({"source": "B", "target": "A"}, _herder_registry("B", 2))
    return node


def test_the_text_is_generate_latest_of_the_merged_families_with_one_header_per_family() -> None:
    node = _node(5)
    text = exposition(node)
    assert text == prometheus_client.generate_latest(MergedFamilies(node))
    helps = re.findall(rb"^# HELP (\S+) ", text, re.MULTILINE)
    assert len(helps) == len(set(helps))
    assert b"mirror_records_created" in helps and b"mirror_only_b" in helps
    lines = text.decode().splitlines()
    assert 'mirror_records_total{source="A",target="B",topic="A.topic-4"} 4.0' in lines
    assert 'mirror_records_total{source="B",target="A",topic="B.topic-1"} 1.0' in lines
    assert 'mirror_custom_total{flow="B",source="B",target="A"} 3.0' in lines
    # a family's suffix section follows all of its samples, from both herders
    created = lines.index("# TYPE mirror_records_created gauge")
    assert max(i for i, line in enumerate(lines) if line.startswith("mirror_records_total{")) < created


class _ManyFamilies(prometheus_client.registry.Collector):
    """Twelve families of 1,000 series each, built when collected, as the source metrics are."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for f in range(12):
            family = GaugeMetricFamily(f"mirror_family_{f}", "One of many", labels=["topic", "partition"])
            for i in range(1_000):
                family.add_metric([f"topic-{i}", "0"], i)
            yield family


def test_a_scrape_holds_one_family_of_samples_at_a_time_not_all() -> None:
    node = CollectorRegistry()
    herders = LabelledRegistries()
    node.register(herders)
    registry = CollectorRegistry()
    registry.register(_ManyFamilies())
    herders.add({"source": "A", "target": "B"}, registry)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        merged = prometheus_client.generate_latest(MergedFamilies(node))
        merged_peak = tracemalloc.get_traced_memory()[1] - before
        del merged
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        text = exposition(node)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert text.count(b"\n") == 12 * (1_000 + 2)
    assert peak < 0.5 * merged_peak, (peak, merged_peak)
