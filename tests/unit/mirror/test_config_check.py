"""One file with a problem at each stage of the mm2.properties pipeline (:mod:`mirror.maker.config_check`):
every problem is reported in one run, and the driver, ``mirror config show`` and ``mirror check --json``
refuse the file with the same lines. In-process; no broker is reached, as the file is refused first."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirror.cli.main import main
from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.maker.config_check import ERROR, HERDER, LINT, STRUCTURE, check_mm2_properties

#: line 7, stage 1: a worker key at the top level, where MM2 does not read it (exactly-once silently off);
#: line 8, stage 2, pair A->B only: a literal secret, which the configs topic would carry in clear;
#: line 9, stage 3, pair B->A only: exactly-once required of a worker that does not have it enabled (line 6 is
#: the flow's other prerequisite, so that this is the one refusal of the flow).
FILE = """clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
B->A.enabled = true
B.consumer.isolation.level = read_committed
exactly.once.source.support = enabled
A->B.producer.override.ssl.keystore.password = flow-level-pw
B->A.exactly.once.support = required
"""


pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    written = tmp_path / "mm2.properties"
    written.write_text(FILE, encoding="utf-8")
    return written


def test_every_stage_reports_its_problem_in_one_run(path: Path) -> None:
    report = check_mm2_properties(MirrorMakerConfig.from_file(str(path)))
    errors = [f for f in report.findings if f.severity is ERROR]
    assert [(f.stage, f.line, f.flow) for f in errors] == [(LINT, 7, None), (STRUCTURE, 8, "A->B"),
                                                           (HERDER, 9, "B->A")]
    assert errors[0].key == "exactly.once.source.support" and "write B.exactly.once.source.support" in errors[0].message
    assert errors[1].message.startswith("A->B.producer.override.ssl.keystore.password holds a secret in clear")
    assert "flow-level-pw" not in str(errors[1])
    assert errors[2].key == "B->A.exactly.once.support" and "does not have exactly-once" in errors[2].message
    assert errors[2].message.endswith("(MirrorSourceConnector of flow B->A)")
    assert report.refused() == errors


def test_the_driver_config_show_and_check_refuse_it_with_the_same_lines(path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    answers = {}
    for command in (["run", str(path)], ["config", "show", str(path), "--json"], ["check", str(path), "--json"]):
        code = main(command)
        captured = capsys.readouterr()
        answers[command[0]] = (code, captured.out, captured.err)
    code, out, err = answers["run"]
    lines = err.splitlines()
    assert code == 2 and out == "" and "Traceback" not in err
    assert [line.split(": ", 2)[1] for line in lines] == [f"{path}:7", f"{path}:8", f"{path}:9"], err
    assert all(line.startswith("error: ") for line in lines), err
    assert answers["config"] == answers["check"] == answers["run"]
