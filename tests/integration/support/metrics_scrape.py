"""One scrape of a node's ``/metrics``, as Prometheus stores it: sample name -> the label sets it has."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


def scrape(url: str) -> dict[str, list[dict[str, str]]]:
    """Sample name (``..._total``, ``..._bucket`` as PromQL selects them) -> the label sets it has."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    samples: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(dict(sample.labels))
    return samples
