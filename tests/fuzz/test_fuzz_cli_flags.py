"""Fuzzing the command lines of ``mirror`` and ``connect-mirror-maker``, run in-process.

Arguments are drawn from every subcommand and option the parsers declare (read from the parsers
themselves, so a new flag is fuzzed without touching this file), values that break type conversions
(negative, huge, NaN, empty, ``--``), and paths: a valid mm2.properties, an invalid one, a missing one,
a directory. Every command line gets exit 0 (it was valid; ``--help``) or exit 2 with one error line,
never a traceback and never exit 1 (an exception nobody turned into a message).

What would reach a cluster or start something is replaced at its seam, so the fuzzed part is the
parsing and validation before it: the replication driver's ``run``, ``quickstart`` (starts brokers) and
``backfill`` (starts Spark); ``status`` and ``offsets`` run for real but never get the valid file (with
one they would wait for its unreachable clusters).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from mirror.cli import backfill, connect_mirror_maker, quickstart
from mirror.cli import main as mirror_main
from mirror.maker import mirror_maker
from tests.support.fuzz import fuzz_settings, timeout_s

pytestmark = pytest.mark.timeout(timeout_s())

VALID = "A_VALID_FILE"
INVALID = "AN_INVALID_FILE"
MISSING = "/nonexistent/mm2.properties"
#: Subcommands that contact the clusters a valid file names (127.0.0.1:9 refuses: `mirror check` waits 10 s per
#: cluster before its connectivity finding), kept out of the fuzz run with a valid file.
REACHING_CLUSTERS = {"status", "offsets", "check"}


def option_strings(parser: argparse.ArgumentParser) -> Iterator[str]:
    """Every option and subcommand name of ``parser`` and its subparsers."""
    for action in parser._actions:
        yield from action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name
                yield from option_strings(sub)


MIRROR_WORDS = sorted(set(option_strings(mirror_main.build_parser())))
CMM_WORDS = sorted(set(option_strings(connect_mirror_maker.build_parser())))
VALUES = ["0", "-1", "1", "65535", "65536", "99999999999999999999", "abc", "", " ", "--", "-", "nan", "inf",
          "-inf", "1e400", "0.5", "DEBUG", "debug", "TRACE", "A", "B", "A,B", ",", "A B", "\u00e9", "\x7f",
          VALID, INVALID, MISSING, "/", "."]


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...],
                                                                                             list[str]]]:
    """(command words, that command's own options) for every leaf subcommand."""
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not nested:
        yield path, sorted({o for a in parser._actions for o in a.option_strings})
    for action in nested:
        for name, sub in action.choices.items():
            yield from subcommands(sub, (*path, name))


MIRROR_COMMANDS = sorted(subcommands(mirror_main.build_parser()))


def argv(words: list[str]) -> st.SearchStrategy[list[str]]:
    token = st.one_of(st.sampled_from(words), st.sampled_from(VALUES), st.text(max_size=8))
    return st.lists(token, max_size=8)


@st.composite
def mirror_command_lines(draw: st.DrawFn) -> list[str]:
    """Half of the time anything; else a real subcommand, a config path and that command's options."""
    if draw(st.booleans()):
        return draw(argv(MIRROR_WORDS))
    command, options = draw(st.sampled_from(MIRROR_COMMANDS))
    config = [draw(st.sampled_from([VALID, INVALID, MISSING]))] if draw(st.integers(0, 4)) else []
    flags = draw(st.lists(st.tuples(st.sampled_from(options or ["--help"]), st.lists(st.sampled_from(VALUES),
                                                                                    max_size=2)), max_size=3))
    return [*command, *config, *(word for flag, values in flags for word in (flag, *values))]


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, str]:
    valid = tmp_path / "valid.properties"
    valid.write_text("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:9\nB.bootstrap.servers = 127.0.0.1:9\n"
                     "A->B.enabled = true\n", encoding="utf-8")
    invalid = tmp_path / "invalid.properties"
    invalid.write_text("clusters = A\nA->B.enabled = maybe\ntasks.max = -5\n", encoding="utf-8")
    return {VALID: str(valid), INVALID: str(invalid)}


@pytest.fixture
def seams(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reached: list[str] = []

    def reach(name: str) -> Any:
        return lambda *args, **kwargs: reached.append(name) or 0

    monkeypatch.setattr(mirror_maker, "run", reach("driver"))
    monkeypatch.setattr(quickstart, "run", reach("quickstart"))
    monkeypatch.setattr(backfill, "run", reach("backfill"))
    return reached


USAGE_ERROR = re.compile(r"^(connect-mirror-maker|mirror( [\w-]+)*): error: ")
#: One finding of a refused file (``file[:line]: ...``) or of a flag checked against it (``--clusters names ...``).
FINDING = re.compile(r"^error: (\S+?(:\d+)?: |--[\w-]+ )")


def check(code: int, err: str) -> None:
    event(f"exit {code}")
    assert "Traceback" not in err, err
    assert code in (0, 2), f"exit {code} (an unmapped exception):\n{err}"
    if code == 2:
        # One line per finding: a usage error is one line; a refused mm2.properties names every finding
        # of the file at once (file:line each), so there may be several, and nothing else but warnings.
        lines = [line for line in err.splitlines() if line.startswith("error:") or USAGE_ERROR.match(line)]
        assert len(lines) >= 1, err
        assert len(lines) == 1 or all(FINDING.match(line) for line in lines), err


@fuzz_settings()
@given(args=mirror_command_lines())
def test_mirror_answers_any_command_line(args: list[str], paths: dict[str, str], seams: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assume(not (REACHING_CLUSTERS & set(args) and VALID in args))
    code = mirror_main.main([paths.get(a, a) for a in args])
    check(code, capsys.readouterr().err)


@fuzz_settings()
@given(args=argv(CMM_WORDS))
def test_connect_mirror_maker_answers_any_command_line(args: list[str], paths: dict[str, str], seams: list[str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = connect_mirror_maker.main([paths.get(a, a) for a in args])
    check(code, capsys.readouterr().err)
