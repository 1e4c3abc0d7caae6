"""Bad input to ``mirror run`` / ``connect-mirror-maker``: one line naming what is wrong, exit code 2.

Each test writes a small ``mm2.properties``, runs the real entry point in-process and checks the whole
stderr: exactly one ``error: ...`` line (file, line and key where possible, and what was expected), no
traceback, and exit code 2. Validation happens before the replication driver is imported, so no broker
is needed. Also covers ``mirror config show`` / ``config docs`` output.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_runtime.api.connector_config import CONNECTOR_CONFIG_DEF
from mirror.cli import connect_mirror_maker
from mirror.cli.main import main
from mirror.config import checkpoint as checkpoint_config
from mirror.config import heartbeat as heartbeat_config
from mirror.config import mirror_maker_config as maker_config
from mirror.config import source as source_config
from mirror.config.client_keys import CLIENT_SECURITY_CONFIG_DEF
from mirror.config.connector_base import MIRROR_SHARED_CONFIG_DEF
from mirror.maker import mirror_maker

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "etc" / "mm2.properties"

GOOD = """clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""


@pytest.fixture(autouse=True)
def _restore_root_logger() -> Iterator[None]:
    """``run`` configures logging for the process; keep that from leaking into other tests."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.setLevel(level)
    root.handlers[:] = handlers


def write(tmp_path: Path, text: str, name: str = "mm2.properties") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error(code: int, err: str, pattern: str) -> None:
    """Exit code 2 and exactly one stderr line, ``error: ...``, matching ``pattern``; no traceback."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert re.search(pattern, lines[0]), f"{pattern!r} not in {lines[0]!r}"


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "nope.properties")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}: file not found$")


def test_file_name_with_a_nul_byte(capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the CLI fuzzer (tests/fuzz): the OS refuses such a name with ValueError, not OSError."""
    code, _, err = run_cli(["run", "mm2\x00.properties"], capsys)
    assert_one_error(code, err, r"^error: 'mm2\\x00.properties': not a valid file name")


def test_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, GOOD)
    os.chmod(path, 0)
    if os.geteuid() == 0:  # root reads anything: simulate the permission error the OS would raise
        real_read_bytes = Path.read_bytes

        def deny(self: Path) -> bytes:
            if str(self) == path:
                raise PermissionError(13, "Permission denied", path)
            return real_read_bytes(self)

        monkeypatch.setattr(Path, "read_bytes", deny)
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}: cannot read file: permission denied$")


def test_clusters_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "A.bootstrap.servers = a:9092\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}: missing required key 'clusters': expected a "
                                r"comma-separated list of aliases")


def test_alias_in_clusters_option_not_declared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD)
    code, _, err = run_cli(["run", path, "--clusters", "B", "C"], capsys)
    assert_one_error(code, err, rf"--clusters names 'C', which is not declared in {re.escape(path)}:1 "
                                r"\(clusters = A, B\)")


def test_alias_in_flow_key_not_declared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD + "X->B.enabled = true\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}:5: flow key 'X->B.enabled' names cluster 'X', "
                                r"which is not declared in clusters \(A, B\): add it to clusters or fix the alias$")


def test_cluster_without_bootstrap_servers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "clusters = A, B, C\nA.bootstrap.servers = a:9092\nA->B.enabled = true\n"
                           "emit.heartbeats.enabled = false\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}:1: cluster 'B' has no bootstrap.servers: "
                                r"expected 'B.bootstrap.servers = host:port")


def test_cluster_outside_every_pair_needs_no_bootstrap_servers(tmp_path: Path) -> None:
    """C takes part in no built pair, so its missing bootstrap.servers is not an error."""
    path = write(tmp_path, "clusters = A, B, C\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"
                           "A->B.enabled = true\nemit.heartbeats.enabled = false\n")
    config = connect_mirror_maker.load_config(path, None)
    assert [str(p) for p in config.herder_pairs()] == ["A->B"]


def test_invalid_regex_in_topics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD + "A->B.topics = orders.*, pay(ments\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}:5: Invalid value 'pay\(ments' for configuration "
                                r"A->B.topics: not a valid regular expression")


def test_invalid_regex_in_groups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD + "groups = [billing\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}:5: Invalid value '\[billing' for configuration "
                                r"groups: not a valid regular expression")


def test_non_integer_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD + "emit.checkpoints.interval.seconds = 1.5\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}:5: Invalid value '1.5' for configuration "
                                r"emit.checkpoints.interval.seconds: expected an integer")


def test_unknown_replication_policy_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD + "replication.policy.class = com.example.NoSuchPolicy\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}:5: Invalid value 'com.example.NoSuchPolicy' for "
                                r"configuration replication.policy.class: expected a ReplicationPolicy class")


def test_java_replication_policy_names_are_accepted(tmp_path: Path) -> None:
    for name in ("DefaultReplicationPolicy", "IdentityReplicationPolicy"):
        path = write(tmp_path, GOOD + f"replication.policy.class = org.apache.kafka.connect.mirror.{name}\n")
        connect_mirror_maker.load_config(path, None)


def test_no_replication_flow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"
                           "emit.heartbeats.enabled = false\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, r"No source->target replication flows")


def test_usage_error_is_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["run"], capsys)
    assert code == 2 and "Traceback" not in err and "mm2.properties" in err


def test_bad_port_from_environment_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIRROR_METRICS_PORT", "99999")
    code, _, err = run_cli(["run", write(tmp_path, GOOD)], capsys)
    assert code == 2 and "--metrics-port" in err and "between 0 and 65535" in err


def test_connect_mirror_maker_hands_a_valid_file_to_the_driver(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid file reaches the driver, which runs with our arguments and flows."""
    seen: dict[str, object] = {}

    def fake_run(config: maker_config.MirrorMakerConfig, clusters: list[str] | None, options: object) -> int:
        seen.update(clusters=clusters, rest_port=getattr(options, "rest_port", None),
                    flows=[str(p) for p in config.herder_pairs(clusters)])
        return 0

    monkeypatch.setattr(mirror_maker, "run", fake_run)
    monkeypatch.setenv("MIRROR_REST_PORT", "8099")
    argv = [write(tmp_path, GOOD), "--clusters", "B,A", "--log-level", "warning"]
    assert connect_mirror_maker.main(argv) == 0
    assert seen == {"clusters": ["B", "A"], "rest_port": 8099, "flows": ["A->B", "B->A"]}


# ---- config show / docs ----


def test_config_show_prints_pairs_and_connector_configs_with_secrets_hidden(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM2_BACKUP_PASSWORD", "pw-from-env-123")
    monkeypatch.setenv("MM2_BACKUP_TRUSTSTORE_PASSWORD", "truststore-pw-456")
    code, out, err = run_cli(["config", "show", str(EXAMPLE)], capsys)
    assert code == 0, err
    assert "# herders (2): primary->secondary, primary->backup" in out
    for name in ("MirrorSourceConnector", "MirrorHeartbeatConnector", "MirrorCheckpointConnector"):
        assert out.count(f"### connector {name}") == 2
    assert "primary->backup" in out and "topics = orders.*, payments.*" in out
    assert "target.cluster.sasl.jaas.config = [hidden]" in out
    assert "sasl.jaas.config = [hidden]" in out
    assert "producer.ssl.truststore.password = [hidden]" in out
    assert "pw-from-env-123" not in out and "truststore-pw-456" not in out
    assert "ScramLoginModule" not in out and "MM2_BACKUP_PASSWORD" not in out


def test_config_show_json_and_clusters_filter(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["config", "show", str(EXAMPLE), "--clusters", "backup", "--json"], capsys)
    assert code == 0
    view = json.loads(out)
    assert [h["flow"] for h in view["herders"]] == ["primary->backup"]
    herder = view["herders"][0]
    assert herder["worker"]["sasl.jaas.config"] == "[hidden]"
    assert herder["worker"]["group.id"] == "primary-mm2"
    assert herder["connectors"]["MirrorSourceConnector"]["enabled"] == "true"
    assert herder["connectors"]["MirrorCheckpointConnector"]["sync.group.offsets.enabled"] == "true"


def test_config_show_reports_bad_input_like_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD + "A->B.offset.lag.max = many\n")
    code, _, err = run_cli(["config", "show", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}:5: .*A->B.offset.lag.max: expected an integer")


def test_config_docs_prints_every_key(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["config", "docs"], capsys)
    assert code == 0
    definitions = [maker_config.CONFIG_DEF, MIRROR_SHARED_CONFIG_DEF, CONNECTOR_CONFIG_DEF,
                   CLIENT_SECURITY_CONFIG_DEF, source_config.TASK_CONFIG_DEF,
                   checkpoint_config.TASK_CONFIG_DEF, heartbeat_config.CONFIG_DEF]
    names = set().union(*(d.names() for d in definitions))
    missing = [n for n in sorted(names) if f"| `{n}` |" not in out]
    assert not missing
    assert "## MirrorSourceConnector" in out and "use.defaults.from" in out


def test_missing_provider_value_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MM2_TEST_UNSET_PASSWORD", raising=False)
    path = write(tmp_path, GOOD + "config.providers = env\n"
                                  "config.providers.env.class = EnvVarConfigProvider\n"
                                  "B.ssl.truststore.password = ${env:MM2_TEST_UNSET_PASSWORD}\n")
    code, _, err = run_cli(["run", path], capsys)
    assert_one_error(code, err, rf"^error: {re.escape(path)}:7: Configuration B.ssl.truststore.password: "
                                r"config provider 'env' has no value for 'MM2_TEST_UNSET_PASSWORD'$")
