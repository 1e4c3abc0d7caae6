"""``mirror`` subcommand plug-in contract: modules register themselves; missing ones are skipped."""

from __future__ import annotations

import argparse
import sys
import types
from typing import Any

import pytest

from mirror.cli.main import SUBCOMMAND_MODULES, build_parser, main


def test_missing_subcommand_module_is_not_registered(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser(("mirror.cli.config_command", "mirror.cli.no_such_module"))
    assert parser.parse_args(["config", "docs"]).config_command == "docs"
    assert main(["no_such_module"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_plugged_in_module_gets_its_own_subcommand(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def run(args: argparse.Namespace) -> int:
        calls.append(args.group)
        return 7

    def add_parser(subparsers: Any) -> None:
        parser = subparsers.add_parser("hello")
        parser.add_argument("group")
        parser.set_defaults(func=run)

    module = types.ModuleType("fake_subcommand")
    module.add_parser = add_parser  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_subcommand", module)
    monkeypatch.setattr("mirror.cli.main.SUBCOMMAND_MODULES", (*SUBCOMMAND_MODULES, "fake_subcommand"))
    assert main(["hello", "g1"]) == 7
    assert calls == ["g1"]


def test_unexpected_exception_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    def run(args: argparse.Namespace) -> int:
        raise RuntimeError("boom")

    def add_parser(subparsers: Any) -> None:
        subparsers.add_parser("crash").set_defaults(func=run)

    module = types.ModuleType("crash_subcommand")
    module.add_parser = add_parser  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "crash_subcommand", module)
    monkeypatch.setattr("mirror.cli.main.SUBCOMMAND_MODULES", ("crash_subcommand",))
    assert main(["crash"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: RuntimeError: boom") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "exit codes" in capsys.readouterr().out
