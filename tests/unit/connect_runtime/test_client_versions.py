"""The client libraries' tested ranges: pinned in pyproject.toml, checked at import, one line when outside."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from connect_runtime.clients.versions import CONFLUENT_KAFKA, KAFKA_PYTHON, SupportedRange, UnsupportedClientLibrary

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("supported", [CONFLUENT_KAFKA, KAFKA_PYTHON], ids=lambda r: r.distribution)
def test_each_range_is_the_pin_in_pyproject(supported: SupportedRange) -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in dependencies if d.split(">")[0].split("=")[0] == supported.distribution]
    assert pin == f"{supported.distribution}{supported.specifier}"


@pytest.mark.parametrize(("installed", "inside"), [
    ("2.12.2", False), ("2.13.0", True), ("2.16.1", True), ("2.17.0", False), ("3.0.0", False), ("x", False)])
def test_confluent_kafka_releases_inside_and_outside(installed: str, inside: bool) -> None:
    assert CONFLUENT_KAFKA.contains(installed) is inside
    if inside:
        CONFLUENT_KAFKA.check(installed, "the Kafka clients")
        return
    with pytest.raises(UnsupportedClientLibrary) as failure:
        CONFLUENT_KAFKA.check(installed, "the Kafka clients")
    assert str(failure.value) == (
        f"the Kafka clients needs confluent-kafka>=2.13,<2.17, but confluent-kafka {installed} is installed; "
        "install a supported one: pip install 'confluent-kafka>=2.13,<2.17'")


def test_importing_the_clients_under_another_confluent_kafka_fails_with_one_line() -> None:
    code = ("import importlib.metadata as m; real = m.version; "
            "m.version = lambda d: '2.99.0' if d == 'confluent-kafka' else real(d); "
            "import connect_runtime.clients.factory")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "connect_runtime.clients.versions.UnsupportedClientLibrary: the Kafka clients needs "
        "confluent-kafka>=2.13,<2.17, but confluent-kafka 2.99.0 is installed; install a supported one: "
        "pip install 'confluent-kafka>=2.13,<2.17'")


def test_the_installed_releases_are_supported() -> None:
    from importlib.metadata import version

    assert CONFLUENT_KAFKA.contains(version("confluent-kafka"))
    assert KAFKA_PYTHON.contains(version("kafka-python"))


@pytest.mark.parametrize("command", [("mirror", "config", "show", "etc/mm2.properties"),
                                     ("connect_mirror_maker", "etc/mm2.properties")], ids=lambda c: c[0])
def test_a_console_script_under_an_unsupported_release_says_so_in_one_line_and_exits_3(
        command: tuple[str, ...]) -> None:
    script, *args = command
    code = ("import importlib.metadata as m, sys; real = m.version; "
            "m.version = lambda d: '2.99.0' if d == 'confluent-kafka' else real(d); "
            f"sys.argv[1:] = {args!r}; from mirror.cli.entry import {script}; sys.exit({script}())")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.stderr.splitlines() == [
        "error: failed to start: the Kafka clients needs confluent-kafka>=2.13,<2.17, but confluent-kafka 2.99.0 is "
        "installed; install a supported one: pip install 'confluent-kafka>=2.13,<2.17'"]
    assert result.returncode == 3
