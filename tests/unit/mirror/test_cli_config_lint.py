"""``connect-mirror-maker`` / ``mirror run`` / ``mirror config show`` and the file's findings.

The real entry points run in-process on small files: a key whose loss weakens a guarantee refuses the
start with exit 2 and one ``error:`` line per finding (no traceback, the driver never called); warnings
are logged at start and the driver runs; ``--strict`` and ``config.strict = true`` turn warnings into
exit 2; ``config show`` prints the findings and each herder's settings with their source.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.cli import connect_mirror_maker
from mirror.cli.main import main
from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.maker import mirror_maker

REPO = Path(__file__).resolve().parents[3]
GOOD = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
EOS_AT_TOP = "exactly.once.source.support = enabled\n"
TYPO = "A->B.sync.group.offset.enabled = true\n"


@pytest.fixture(autouse=True)
def _restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.setLevel(level)
    root.handlers[:] = handlers


@pytest.fixture
def driver_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the replication driver: records that it was reached, starts nothing."""
    calls: list[str] = []

    def fake_run(config: MirrorMakerConfig, clusters: list[str] | None, options: object) -> int:
        calls.append(config.source_name)
        return 0

    monkeypatch.setattr(mirror_maker, "run", fake_run)
    return calls


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "mm2.properties"
    path.write_text(text)
    return str(path)


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.strip().splitlines() if line.startswith("error: ")]


def test_a_dropped_guarantee_refuses_the_start_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           driver_runs: list[str]) -> None:
    path = write(tmp_path, GOOD + EOS_AT_TOP)
    code = main(["run", path])
    err = capsys.readouterr().err
    assert code == 2 and driver_runs == []
    assert err.strip().splitlines() == [
        f"error: {path}:5: exactly.once.source.support = enabled at the top level is not applied (exactly-once "
        f"would silently be off): write B.exactly.once.source.support = enabled: MM2 reads worker keys per target "
        f"cluster"]


def test_every_refusal_is_named_at_once_with_a_validation_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                driver_runs: list[str]) -> None:
    path = write(tmp_path, GOOD + EOS_AT_TOP + "offset.flush.interval.ms = 1000\nA->B.offset.lag.max = many\n")
    assert connect_mirror_maker.main([path]) == 2
    lines = error_lines(capsys.readouterr().err)
    assert [re.sub(r":.*", "", line.split(path + ":", 1)[1]) for line in lines] == ["5", "6", "7"]
    assert "expected an integer" in lines[2] and driver_runs == []


def test_warnings_are_logged_at_start_and_the_driver_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          driver_runs: list[str]) -> None:
    path = write(tmp_path, GOOD + TYPO + "A.consumer.interceptor.classes = x.Y\n")
    assert main(["run", path, "--log-level", "WARNING"]) == 0
    err = capsys.readouterr().err
    assert driver_runs == [path]
    assert f"{path}:5: A->B.sync.group.offset.enabled = true: unknown key, not applied; did you mean " \
           f"A->B.sync.group.offsets.enabled?" in err
    assert err.count("A.consumer.interceptor.classes (line 6)") == 1
    assert error_lines(err) == []


@pytest.mark.parametrize(("text", "argv"), [(GOOD + TYPO, ["--strict"]), (GOOD + TYPO + "config.strict = true\n", [])])
def test_strict_turns_warnings_into_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           driver_runs: list[str], text: str, argv: list[str]) -> None:
    path = write(tmp_path, text)
    assert main(["run", path, *argv]) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "did you mean A->B.sync.group.offsets.enabled?" in lines[0]
    assert driver_runs == []
    assert main(["config", "show", path, *argv]) == 2
    assert len(error_lines(capsys.readouterr().err)) == 1


def test_strict_does_not_refuse_client_keys_librdkafka_lacks(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             driver_runs: list[str]) -> None:
    path = write(tmp_path, GOOD + "B.consumer.max.poll.records = 10\n")
    assert main(["run", path, "--strict"]) == 0 and driver_runs == [path]


def test_config_show_prints_findings_and_where_each_setting_comes_from(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD + EOS_AT_TOP + "B.offset.flush.interval.ms = 1000\n" + TYPO)
    code = main(["config", "show", path])
    out, err = capsys.readouterr()
    assert code == 2 and len(error_lines(err)) == 1
    assert f"# error: {path}:5: exactly.once.source.support = enabled at the top level" in out
    assert f"# warning: {path}:7: A->B.sync.group.offset.enabled" in out
    herder = out.split("## herder A->B", 1)[1]
    assert f"offset.flush.interval.ms = 1000  # cluster prefix B. ({path}:6 B.offset.flush.interval.ms)" in herder
    assert f"exactly.once.source.support = disabled  # default; not applied: {path}:5 exactly.once.source.support" \
        in herder
    assert "dedicated.mode.enable.internal.rest = false  # default" in herder
    assert "scheduled.rebalance.max.delay.ms = 300000  # default" in herder
    assert f"enabled = true  # flow prefix A->B. ({path}:4 A->B.enabled)" in herder


def test_config_show_json_has_findings_and_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD + TYPO)
    assert main(["config", "show", path, "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert [(f["severity"], f["kind"], f["line"]) for f in view["findings"]] == [("warning", "unknown", 5)]
    assert view["refused"] == []
    settings = {s["key"]: s for s in view["herders"][0]["settings"]["worker"]}
    assert settings["offset.flush.interval.ms"] == {
        "key": "offset.flush.interval.ms", "value": "60000", "source": "default", "location": None, "ignored": []}


def test_config_show_of_the_example_has_no_finding(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", str(REPO / "etc" / "mm2.properties")]) == 0
    out = capsys.readouterr().out
    assert "# error:" not in out and "# warning:" not in out
    assert "sasl.jaas.config" not in out.split("### worker config", 1)[0]


def test_the_trap_table_in_the_docs_is_what_the_tools_say() -> None:
    """docs/config-traps.md is generated by running config show and run on each trap, not written by hand."""
    from tests.unit.mirror import config_traps

    table = config_traps.rows()
    assert len(table) >= 20
    assert (REPO / "docs" / "config-traps.md").read_text() == config_traps.markdown(), (
        "regenerate: PYTHONPATH=. python -m tests.unit.mirror.config_traps > docs/config-traps.md")
    first_five = {row["written"]: row for row in table[:5]}
    assert first_five["offset.flush.interval.ms = 1000"]["show_exit"] == 2
    assert first_five["exactly.once.source.support = enabled"]["driver"].startswith("exit 2")
    for typo in ("replication.facter = 1", "A->B.sync.group.offset.enabled = true",
                 "A->B.emit.checkpoint.interval.seconds = 5"):
        assert "did you mean" in first_five[typo]["show"] and "WARNING" in first_five[typo]["driver"]
