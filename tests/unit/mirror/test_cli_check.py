"""``mirror check``'s command line: bad input exits 2 with the very lines the driver prints for the same file
(the check loads the file as ``connect-mirror-maker`` does, before reaching any cluster), and bad flags are
usage errors. Runs in-process; no broker is reached, as every file here is refused first."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirror.cli.main import main

GOOD = """clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""

#: file text (None: no file), extra arguments
REFUSED = {
    "no such file": (None, []),
    "no clusters": ("A.bootstrap.servers = a:9092\n", []),
    "an undeclared --clusters alias": (GOOD, ["--clusters", "B", "C"]),
    "a flow between undeclared clusters": (GOOD + "X->B.enabled = true\n", []),
    "a guarantee written where MM2 does not read it": (GOOD + "exactly.once.source.support = enabled\n", []),
    "a topic regex that does not compile": (GOOD + "topics = orders, [unclosed\n", []),
    "a cluster without bootstrap servers": ("clusters = A, B\nA.bootstrap.servers = a:9092\nA->B.enabled = true\n", []),
}


pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.mark.parametrize("case", list(REFUSED))
def test_bad_input_gets_the_drivers_own_one_line_errors_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   case: str) -> None:
    text, extra = REFUSED[case]
    path = tmp_path / "mm2.properties"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    driver_code = main(["run", str(path), *extra])
    driver = capsys.readouterr()
    check_code = main(["check", str(path), *extra])
    check = capsys.readouterr()
    assert driver_code == check_code == 2
    errors = [line for line in check.err.splitlines() if line]
    assert errors and all(line.startswith("error: ") for line in errors), check.err
    assert check.err == driver.err, (check.err, driver.err)
    assert check.out == "" and "Traceback" not in check.err


@pytest.mark.parametrize("flag", [["--timeout", "0"], ["--timeout", "soon"], ["--log-level", "LOUD"]])
def test_bad_flags_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: list[str]) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(GOOD, encoding="utf-8")
    assert main(["check", str(path), *flag]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_check_is_offered_beside_status_and_config_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    listing = capsys.readouterr().out
    assert "check" in listing and "status" in listing and "config" in listing
    assert main(["check", "--help"]) == 0
    help_text = capsys.readouterr().out
    for part in ("--clusters", "--json", "--timeout", "0 ready, 1 warnings, 2 will not work", "mirror config show"):
        assert part in " ".join(help_text.split()), part
