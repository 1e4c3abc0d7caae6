"""The pictures in docs/images/ show the current status page and Grafana dashboard.

``scripts/screenshots`` records a hash of the page's files (mirror/ui/) and of etc/grafana-dashboard.json
when it takes the pictures; when either changes, this test fails until the pictures are taken again.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_pictures_match_the_page_and_dashboard_they_show() -> None:
    loader = importlib.machinery.SourceFileLoader("screenshots", str(ROOT / "scripts" / "screenshots"))
    spec = importlib.util.spec_from_loader("screenshots", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    recorded = (ROOT / "docs" / "images" / "sources.sha256").read_text(encoding="utf-8").strip()
    assert module.sources_digest() == recorded, (
        "mirror/ui/ or etc/grafana-dashboard.json changed since docs/images/ was made: run scripts/screenshots")
    for picture in ("status-page.png", "grafana-dashboard.png"):
        assert (ROOT / "docs" / "images" / picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
