"""Every line of mm2.properties accounted for: findings with file, line, reason and fix.

Unit tests of :mod:`mirror.maker.config_lint` on small files (each kind of finding, with its line),
the real Kafka keys that must never be taken for typos, the sample files that must produce no finding,
and :mod:`mirror.maker.provenance` (where each effective setting of a herder comes from).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mirror.cli.quickstart import _properties as quickstart_properties  # noqa: PLC2701 (a unit test of this module's own internal)
from mirror.config.mirror_maker_config import MirrorMakerConfig, SourceAndTarget
from mirror.maker import key_catalog as kc
from mirror.maker.config_check import ERROR, WARNING, Finding, refusals
from mirror.maker.config_lint import lint
from mirror.maker.provenance import flow_settings, worker_settings

REPO = Path(__file__).resolve().parents[3]
HEAD = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"


def findings_of(tmp_path: Path, *lines: str, head: str = HEAD) -> list[Finding]:
    path = tmp_path / "mm2.properties"
    path.write_text(head + "".join(line + "\n" for line in lines))
    return lint(MirrorMakerConfig.from_file(str(path)))


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, [str(f) for f in findings]
    return findings[0]


# ---- the five keys of the issue, all at once ----


def test_the_five_keys_of_the_issue_are_each_caught_with_their_line(tmp_path: Path) -> None:
    findings = findings_of(tmp_path, "offset.flush.interval.ms = 1000", "exactly.once.source.support = enabled",
                           "replication.facter = 1", "A->B.sync.group.offset.enabled = true",
                           "A->B.emit.checkpoint.interval.seconds = 5")
    by_line = {f.line: f for f in findings}
    assert sorted(by_line) == [5, 6, 7, 8, 9]
    assert by_line[5].severity == ERROR and "write B.offset.flush.interval.ms = 1000" in by_line[5].message
    assert by_line[6].severity == ERROR
    assert str(by_line[6]).endswith("mm2.properties:6: exactly.once.source.support = enabled at the top level is not "
                                    "applied (exactly-once would silently be off): write "
                                    "B.exactly.once.source.support = enabled: MM2 reads worker keys per target "
                                    "cluster")
    assert by_line[7].severity == WARNING and "did you mean replication.factor?" in by_line[7].message
    assert "did you mean A->B.sync.group.offsets.enabled?" in by_line[8].message
    assert "did you mean A->B.emit.checkpoints.interval.seconds?" in by_line[9].message
    assert all("\n" not in str(f) for f in findings)
    assert [f.line for f in refusals(findings, strict=False)] == [5, 6]
    assert [f.line for f in refusals(findings, strict=True)] == [5, 6, 7, 8, 9]


# ---- each kind of finding ----


@pytest.mark.parametrize(("line", "fix"), [
    ("B.enabled = true", "write A->B.enabled = true (one flow) or enabled = true (every flow)"),
    ("A->B.offset.flush.interval.ms = 500", "write B.offset.flush.interval.ms = 500"),
    ("A->B.exactly.once.source.support = enabled", "write B.exactly.once.source.support = enabled"),
    ("A->B.security.protocol = SSL", "write A.security.protocol = SSL and B.security.protocol = SSL"),
    ("B.rest.extension.classes = x.Y", "write rest.extension.classes = x.Y"),
    ("A.transaction.boundary = interval", "write A->B.transaction.boundary = interval"),
    ("A->C.enabled = true", "add it to clusters or fix the alias"),
])
def test_a_dropped_key_that_weakens_a_guarantee_is_an_error(tmp_path: Path, line: str, fix: str) -> None:
    finding = only(findings_of(tmp_path, line))
    assert finding.severity == ERROR and finding.line == 5
    assert fix in finding.message


def test_worker_keys_of_a_cluster_no_flow_targets_are_quiet(tmp_path: Path) -> None:
    """A symmetric file sets worker keys for every cluster; A's apply once a flow targets A (none loses)."""
    assert findings_of(tmp_path, "emit.heartbeats.enabled = false", "A.offset.flush.interval.ms = 1000",
                       "B.offset.flush.interval.ms = 1000") == []


@pytest.mark.parametrize(("line", "kind", "text"), [
    ("scheduled.rebalance.max.delay.ms = 1000", "not-applied", "write B.scheduled.rebalance.max.delay.ms = 1000"),
    ("group.id = mine", "not-applied", "write B.group.id = mine"),
    ("B.topics = orders", "not-applied", "write A->B.topics = orders (one flow) or topics = orders"),
    ("use.defaults.from = source", "not-applied", "write A->B.use.defaults.from = source"),
    ("producer.override.linger.ms = 5", "not-applied", "write A->B.producer.override.linger.ms = 5"),
    ("B.dedicated.mode.enable.internal.rest = true", "not-applied", "write dedicated.mode.enable.internal.rest"),
    ("A->B.max.poll.records = 10", "not-applied", "A->B.consumer.max.poll.records"),
    ("retention.ms = 1000", "not-applied", "a topic setting"),
    ("C.bootstrap.servers = c:9092", "undeclared-cluster", "cluster 'C', which is not declared in clusters (A, B)"),
    ("A->C.topics = x", "undeclared-cluster", "names cluster 'C'"),
    ("B->A.topics = x", "not-applied", "flow B->A does not replicate; write B->A.enabled = true"),
    ("A.consumer.max.pol.records = 5", "unknown", "did you mean A.consumer.max.poll.records?"),
    ("B.ofset.flush.interval.ms = 5", "unknown", "did you mean B.offset.flush.interval.ms?"),
    ("colour = blue", "unknown", "check the spelling against docs/configuration.md"),
])
def test_other_keys_not_applied_are_warnings(tmp_path: Path, line: str, kind: str, text: str) -> None:
    finding = only(findings_of(tmp_path, line))
    assert (finding.severity, finding.kind, finding.line) == (WARNING, kind, 5)
    assert text in finding.message


def test_health_keys_are_read_at_the_top_level_and_per_flow(tmp_path: Path) -> None:
    """``health.*`` thresholds (mirror status, /health) are this project's keys, outside any ConfigDef."""
    assert findings_of(tmp_path, "health.refresh.interval.ms = 1000", "health.lag.max.ms = 5000",
                       "A->B.health.lag.max.ms = 1000", "A->B.health.groups.require.translatable = true") == []
    finding = only(findings_of(tmp_path, "A->B.health.refresh.interval.ms = 1000"))
    assert "write health.refresh.interval.ms = 1000" in finding.message


def test_a_key_set_twice_names_the_line_that_wins(tmp_path: Path) -> None:
    finding = only(findings_of(tmp_path, "tasks.max = 2", "tasks.max = 4"))
    assert (finding.kind, finding.line) == ("duplicate", 5)
    assert "set again on line 6, which wins" in finding.message


def test_java_client_keys_without_librdkafka_equivalent_are_one_warning_never_fatal(tmp_path: Path) -> None:
    findings = findings_of(tmp_path, "B.consumer.max.poll.records = 500", "B.producer.interceptor.classes = x.Y",
                           "A.consumer.fetch.min.bytes = 1")
    finding = only(findings)
    assert finding.kind == "no-librdkafka-equivalent" and finding.line is None
    assert "B.consumer.max.poll.records (line 5), B.producer.interceptor.classes (line 6)" in finding.message
    assert refusals(findings, strict=True) == []


@pytest.mark.parametrize("key", ["A.consumer.max.poll.records", "A->B.consumer.max.poll.records",
                                 "A->B.consumer.override.max.poll.records"])
def test_max_poll_records_of_the_source_consumer_is_applied_by_the_source_task(tmp_path: Path, key: str) -> None:
    """librdkafka has no max.poll.records, but MirrorSourceTask bounds each poll with it (as Java does)."""
    from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS
    from mirror.config.source import MirrorSourceConfig

    config = _config(tmp_path, f"{key} = 77")
    props = config.connector_base_config(SourceAndTarget("A", "B"), SOURCE_CONNECTOR_CLASS)
    assert MirrorSourceConfig(props).source_consumer_config(None)["max.poll.records"] == "77"
    assert lint(config) == []


def test_the_trailing_space_of_enabled_that_drops_a_flow_is_an_error(tmp_path: Path) -> None:
    head = HEAD.replace("A->B.enabled = true\n", "emit.heartbeats.enabled = false\nA->B.topics = x\n")
    findings = findings_of(tmp_path, "A->B.enabled = true ", head=head)
    enabled = [f for f in findings if f.key == "A->B.enabled"]
    assert enabled and enabled[0].severity == ERROR and "trailing whitespace" in enabled[0].message


def test_secrets_in_findings_are_hidden(tmp_path: Path) -> None:
    finding = only(findings_of(tmp_path, "A->B.ssl.truststore.password = s3cret-value"))
    assert "s3cret-value" not in str(finding) and "[hidden]" in str(finding)


# ---- real Kafka keys are never typos ----


def _real_keys() -> list[str]:
    keys = [f"A.consumer.{k}" for k in sorted(kc.KAFKA_CONSUMER)]
    keys += [f"B.producer.{k}" for k in sorted(kc.KAFKA_PRODUCER)]
    keys += [f"A.admin.{k}" for k in sorted(kc.KAFKA_ADMIN)]
    keys += [f"B.{k}" for k in sorted(kc.KAFKA_WORKER | kc.KAFKA_SECURITY)]
    keys += [f"A->B.{k}" for k in sorted(kc.CONNECTOR)]
    keys += sorted((kc.KAFKA_TOPIC | kc.KAFKA_WORKER | kc.KAFKA_PRODUCER | kc.KAFKA_CONSUMER) - kc.DRIVER)
    return keys


def test_real_kafka_keys_are_never_reported_as_unknown(tmp_path: Path) -> None:
    keys = _real_keys()
    findings = findings_of(tmp_path, *(f"{k} = 1" for k in keys))
    assert len(keys) > 400
    assert [str(f) for f in findings if f.kind == "unknown"] == []


# ---- sample files: no finding ----


@pytest.mark.parametrize("path", [REPO / "etc" / "mm2.properties",
                                  REPO / "tests" / "data" / "kafka-connect-mirror-maker.properties"])
def test_sample_files_produce_no_finding(path: Path) -> None:
    assert lint(MirrorMakerConfig.from_file(str(path))) == []


def test_the_example_with_its_commented_rest_lines_enabled_produces_no_finding(tmp_path: Path) -> None:
    text = (REPO / "etc" / "mm2.properties").read_text()
    lines = text.splitlines()
    enabled = "\n".join(line[1:] if line.startswith("#") and not line.startswith("# ") and " = " in line else line
                        for line in lines)
    path = tmp_path / "mm2.properties"
    path.write_text(enabled)
    assert lint(MirrorMakerConfig.from_file(str(path))) == []


def test_the_quickstart_file_produces_no_finding(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(quickstart_properties("127.0.0.1:9092", "127.0.0.1:9093", 8083))
    assert lint(MirrorMakerConfig.from_file(str(path))) == []


# ---- provenance ----


def _config(tmp_path: Path, *lines: str) -> MirrorMakerConfig:
    path = tmp_path / "mm2.properties"
    path.write_text(HEAD + "".join(line + "\n" for line in lines))
    return MirrorMakerConfig.from_file(str(path))


def test_worker_settings_name_their_source_and_the_lines_not_applied(tmp_path: Path) -> None:
    config = _config(tmp_path, "offset.flush.interval.ms = 1000", "B.exactly.once.source.support = enabled",
                     "offset.storage.replication.factor = 1", "B.scheduled.rebalance.max.delay.ms = 5000")
    settings = {s.key: s for s in worker_settings(config, SourceAndTarget("A", "B"))}
    flush = settings["offset.flush.interval.ms"]
    assert (flush.value, flush.source) == ("60000", "default")
    assert flush.ignored == (f"{tmp_path}/mm2.properties:5 offset.flush.interval.ms",)
    eos = settings["exactly.once.source.support"]
    assert (eos.value, eos.source, eos.location) == (
        "enabled", "cluster prefix B.", f"{tmp_path}/mm2.properties:6 B.exactly.once.source.support")
    assert (settings["offset.storage.replication.factor"].value,
            settings["offset.storage.replication.factor"].source) == ("1", "top level")
    assert settings["scheduled.rebalance.max.delay.ms"].value == "5000"
    assert (settings["group.id"].value, settings["group.id"].source) == ("A-mm2", "MM2 default")
    assert (settings["dedicated.mode.enable.internal.rest"].value,
            settings["dedicated.mode.enable.internal.rest"].source) == ("false", "default")
    reverse = {s.key: s for s in worker_settings(config, SourceAndTarget("B", "A"))}
    assert reverse["exactly.once.source.support"].value == "disabled"


def test_flow_settings_name_the_flow_prefix_the_top_level_and_defaults(tmp_path: Path) -> None:
    config = _config(tmp_path, "tasks.max = 4", "A->B.tasks.max = 8", "A->B.topics = seq", "B.topics = ignored")
    settings = {s.key: s for s in flow_settings(config, SourceAndTarget("A", "B"))}
    assert (settings["tasks.max"].value, settings["tasks.max"].source) == ("8", "flow prefix A->B.")
    assert settings["topics"].ignored == (f"{tmp_path}/mm2.properties:8 B.topics",)
    assert (settings["enabled"].value, settings["enabled"].source) == ("true", "flow prefix A->B.")
    assert (settings["replication.factor"].value, settings["replication.factor"].source) == ("2", "default")
    reverse = {s.key: s for s in flow_settings(config, SourceAndTarget("B", "A"))}
    assert (reverse["enabled"].value, reverse["enabled"].source) == ("false", "MM2 default")
    assert (reverse["tasks.max"].value, reverse["tasks.max"].source) == ("4", "top level")


# ---- the lint's model agrees with what the herders are really given ----


WORKER_KEYS = ["offset.flush.interval.ms", "exactly.once.source.support", "scheduled.rebalance.max.delay.ms",
               "session.timeout.ms", "group.id", "offset.storage.replication.factor",
               "task.shutdown.graceful.timeout.ms"]
CONNECTOR_KEYS = ["tasks.max", "topics", "sync.group.offsets.enabled", "emit.checkpoints.interval.seconds",
                  "replication.factor", "exactly.once.support", "transaction.boundary.interval.ms"]
VALUES = {"exactly.once.source.support": "enabled", "topics": "marker-.*", "sync.group.offsets.enabled": "true",
          "group.id": "marker-group", "exactly.once.support": "required"}


def _levels(setting: str) -> list[str]:
    return [setting, f"B.{setting}", f"A.{setting}", f"A->B.{setting}"]


@pytest.mark.parametrize("key", [k for s in WORKER_KEYS for k in _levels(s)])
def test_a_worker_key_has_no_finding_exactly_when_the_herder_gets_it(tmp_path: Path, key: str) -> None:
    """The herder's worker config (what DistributedWorkerConfig parses) holds the value iff lint is quiet
    (``A.`` keys: the heartbeat-only B->A herder, whose target is A)."""
    from connect_runtime.runtime.worker_config import DistributedWorkerConfig

    setting = key.split(".", 1)[1] if key.startswith(("A.", "B.", "A->B.")) else key
    value = VALUES.get(setting, "4242")
    config = _config(tmp_path, f"{key} = {value}")
    pair = SourceAndTarget("B", "A") if key.startswith("A.") else SourceAndTarget("A", "B")
    applied = DistributedWorkerConfig(config.worker_config(pair)).originals.get(setting) == value
    findings = [f for f in lint(config) if f.key == key]
    assert applied == (findings == []), (applied, [str(f) for f in findings])


@pytest.mark.parametrize("key", [k for s in CONNECTOR_KEYS for k in _levels(s)])
def test_a_connector_key_has_no_finding_exactly_when_the_flow_gets_it(tmp_path: Path, key: str) -> None:
    """The A->B connector configs hold the value iff lint is quiet."""
    from mirror.config.mirror_maker_config import CONNECTOR_CLASSES

    setting = key.split(".", 1)[1] if key.startswith(("A.", "B.")) else key.removeprefix("A->B.")
    value = VALUES.get(setting, "4242")
    config = _config(tmp_path, f"{key} = {value}")
    applied = any(config.connector_base_config(SourceAndTarget("A", "B"), cls).get(setting) == value
                  for cls in CONNECTOR_CLASSES)
    findings = [f for f in lint(config) if f.key == key]
    assert applied == (findings == []), (applied, [str(f) for f in findings])


@pytest.mark.parametrize("key", ["security.protocol", "A.security.protocol", "A->B.security.protocol",
                                 "A.consumer.security.protocol", "A->B.consumer.security.protocol"])
def test_a_security_key_has_no_finding_exactly_when_the_source_consumer_gets_it(tmp_path: Path, key: str) -> None:
    from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS
    from mirror.config.source import MirrorSourceConfig

    config = _config(tmp_path, f"{key} = SSL")
    props = config.connector_base_config(SourceAndTarget("A", "B"), SOURCE_CONNECTOR_CLASS)
    applied = MirrorSourceConfig(props).source_consumer_config(None).get("security.protocol") == "SSL"
    findings = [f for f in lint(config) if f.key == key]
    assert applied == (findings == []), (applied, [str(f) for f in findings])
    assert all(f.severity == ERROR for f in findings)
