"""etc/prometheus/alerts.yml: valid for Prometheus, each alert firing where it must and only there, each with
its runbook section, and the Grafana dashboard's links into that runbook.

promtool (Debian's ``prometheus`` package, installed by .ci/run) checks the rules and runs
tests/unit/etc/alerts_test.yml: for every alert, series under which it fires and series under which it must
not (other flows, other nodes, other groups, the time before its ``for`` has passed). Without promtool the
first two tests skip locally; under CI a skip is a failure (tests/conftest.py).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "etc" / "prometheus" / "alerts.yml"
PROMTOOL_TESTS = Path(__file__).with_name("alerts_test.yml")
RUNBOOK = ROOT / "docs" / "runbook.md"
DASHBOARD = ROOT / "etc" / "grafana-dashboard.json"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.skip("promtool not found: apt-get install prometheus (Debian's package provides it)")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, check=False)


def rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"] for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def runbook_sections() -> dict[str, str]:
    """``## Heading`` -> its text up to the next such heading."""
    parts = re.split(r"^## (.+)$", RUNBOOK.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading made of letters only, as the alert names are."""
    return heading.lower()


def test_promtool_accepts_the_rules() -> None:
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules())} rules found" in result.stdout


def test_each_alert_fires_on_its_series_and_stays_quiet_on_the_others() -> None:
    result = promtool("test", "rules", str(PROMTOOL_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    cases = [case for test in yaml.safe_load(PROMTOOL_TESTS.read_text(encoding="utf-8"))["tests"]
             for case in test.get("alert_rule_test", [])]
    for alert in alerts():
        name = alert["alert"]
        mine = [case for case in cases if case["alertname"] == name]
        assert any(case["exp_alerts"] for case in mine), f"{name}: no case in which it fires"
        assert any(not case["exp_alerts"] for case in mine), f"{name}: no case in which it must stay quiet"


def test_every_alert_is_labelled_annotated_and_has_its_runbook_section() -> None:
    sections = runbook_sections()
    for alert in alerts():
        name = alert["alert"]
        assert alert["labels"]["severity"] in ("critical", "warning"), name
        annotations = alert["annotations"]
        assert annotations["summary"] and annotations["description"], name
        assert annotations["runbook_url"] == f"docs/runbook.md#{anchor(name)}", name
        assert name in sections, f"docs/runbook.md has no section for {name}"
        text = sections[name]
        for part in ("**Meaning.**", "**Confirm.**", "**What to do.**"):
            assert part in text, f"{name}: its runbook section lacks {part}"
        assert "mirror status" in text, f"{name}: its runbook section does not say what `mirror status` shows"


def test_the_thresholds_alerts_compare_with_are_recording_rules() -> None:
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    used = {name for alert in alerts() for name in re.findall(r"mirror:threshold_[a-z_]+", alert["expr"])}
    assert used and used <= recorded, used - recorded
    assert recorded <= used, f"thresholds no alert reads: {recorded - used}"


def test_the_dashboard_links_each_alert_panel_to_its_runbook_section() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    constant = next(v for v in dashboard["templating"]["list"] if v["name"] == "runbook")
    assert (ROOT / constant["query"]) == RUNBOOK
    assert any(link["url"] == "${runbook}" for link in dashboard["links"])
    anchors = {anchor(name) for name in runbook_sections()}
    linked = {link["url"].split("#", 1)[1] for panel in dashboard["panels"] for link in panel.get("links", [])}
    assert linked and linked <= anchors, linked - anchors
    flow_alerts = {anchor(a["alert"]) for a in alerts() if "by (source, target" in a["expr"]}
    assert len(flow_alerts) == 8 and flow_alerts <= linked, flow_alerts - linked
