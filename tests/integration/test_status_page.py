"""The status page in headless Chromium against a running replication, plus its JSON and metrics.

The health monitor and the page run in this process (as the driver will run them:
``start_health_monitor`` + ``create_app(..., extra_routes=ui_routes(monitor))``); the replication is the
stand-in subprocess. Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package;
the test is skipped without them. Selenium must use /usr/bin/chromedriver: it must never download a
browser or a driver. One screenshot is kept in ``test-artifacts/status-page.png``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from connect_runtime.rest.app import create_app
from connect_runtime.rest.server import RestServer
from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.health.collector import start_health_monitor, ui_routes
from tests.conftest import Cluster
from tests.integration.support.mm2_process import MirrorMakerProcess
from tests.integration.support.replication import (
    ROOT,
    replication,
    write_properties,
)
from tests.support.kafka import create_topic, produce, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACT = ROOT / "test-artifacts" / "status-page.png"


def browser(profile: str) -> Any:
    webdriver = pytest.importorskip("selenium.webdriver")
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("chromium / chromium-driver not installed (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    from selenium.webdriver.chrome.service import Service

    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


@pytest.fixture(params=["harness", "driver"])
def page_server(request: pytest.FixtureRequest, cluster_a: Cluster, cluster_b: Cluster,
                tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(base URL, flow): the page served in this process over the stand-in replication, or by the real
    connect-mirror-maker on its REST port."""
    src, tgt = unique("us"), unique("ut")
    topic = create_topic(cluster_a.bootstrap, unique("page"), partitions=1)
    produce(cluster_a.bootstrap, topic, 30)
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                             topic, extra=("health.refresh.interval.ms = 1000\n"
                                           # replicated heartbeats even when A's heartbeats topic is
                                           # created after the first topic listing (default refresh 600 s)
                                           "refresh.topics.interval.seconds = 2\n"))
    if request.param == "driver":
        with MirrorMakerProcess(props, "--rest-port", "0") as node:  # a port of its choosing, logged
            yield node.url, f"{src}->{tgt}"
        return
    config = MirrorMakerConfig.from_file(str(props))
    registry = CollectorRegistry()
    with replication(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic):
        monitor = start_health_monitor(config, config.herder_pairs([tgt]), registry)
        server = RestServer(create_app({}, registry, extra_routes=ui_routes(monitor)),
                            listeners="http://127.0.0.1:0").start()
        try:
            yield server.url, f"{src}->{tgt}"
        finally:
            server.stop()
            monitor.stop()


def flow_report(url: str, flow: str) -> dict[str, Any] | None:
    report = httpx.get(f"{url}/ui/api/status", timeout=10).json()["report"]
    flows = {f["flow"]: f for f in (report or {}).get("flows", [])}
    found: dict[str, Any] | None = flows.get(flow)
    return found


def test_status_page_shows_live_figures(page_server: tuple[str, str]) -> None:
    url, flow = page_server
    wait_until(lambda: (f := flow_report(url, flow)) is not None and f["heartbeat_basis"] == "replicated"
               and f["state"] == "healthy", 90, "a healthy report with replicated heartbeats", interval_s=1,
               retry_on=(httpx.TransportError,))  # the driver's REST server may not listen yet
    assert httpx.get(f"{url}/ui/api/status", timeout=10).json()["history"]
    metrics = httpx.get(f"{url}/metrics", timeout=10).text
    src, tgt = flow.split("->")
    assert f'mirror_heartbeat_age_seconds{{source="{src}",target="{tgt}"}}' in metrics
    assert f'mirror_flow_health{{source="{src}",state="healthy",target="{tgt}"}}' in metrics

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    driver = browser(profile)
    try:
        from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
        from selenium.webdriver.common.by import By

        # The page draws its cards from a fetch and redraws them on every refresh: an element can be
        # missing for a moment or replaced while it is read.
        redrawn = (NoSuchElementException, StaleElementReferenceException)
        driver.get(f"{url}/ui")

        def card() -> Any:
            return driver.find_element(By.CSS_SELECTOR, f'section.flow[data-flow="{flow}"]')

        def value(field: str) -> str:
            text: str = card().find_element(By.CSS_SELECTOR, f'[data-field="{field}"] .value').text
            return text

        def checked_at() -> str:
            stamp: str = driver.find_element(By.ID, "updated").get_attribute("data-checked-at") or ""
            return stamp

        wait_until(lambda: value("heartbeat_age").endswith(" s"), 30, "heartbeat age shown", retry_on=redrawn)
        first = checked_at()
        assert card().get_attribute("data-state") == "healthy"
        # once offsets/syncs are read
        wait_until(lambda: value("lag_records") == "0", 30, "lag 0 shown", retry_on=redrawn)
        assert float(value("heartbeat_age").split()[0]) < 3
        # the page updates by itself: a newer report and a longer chart
        points = int(card().find_element(By.CSS_SELECTOR, '[data-field="heartbeat_age"] svg')
                     .get_attribute("data-points") or 0)
        wait_until(lambda: checked_at() != first, 20, "the page to show a newer report", retry_on=redrawn)
        wait_until(lambda: int(card().find_element(By.CSS_SELECTOR, '[data-field="heartbeat_age"] svg')
                               .get_attribute("data-points") or 0) > points, 20, "the chart to grow",
                   retry_on=redrawn)
        wait_until(lambda: value("latency").endswith(" s"), 30, "latency shown", retry_on=redrawn)
        ARTIFACT.parent.mkdir(exist_ok=True)
        driver.save_screenshot(str(ARTIFACT))
        assert ARTIFACT.stat().st_size > 0
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
