"""Resolving connector classes: entry points, aliases, Java class names, dotted paths, lazy loading."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping

import pytest

from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.errors import NotFoundError
from connect_runtime.api.task import Task
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.testing.sequence_source import SequenceSourceConnector, SequenceSourceTask


class LocalConnector(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[Task]:
        return SequenceSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "9.9"


NOT_A_CONNECTOR = object()


@pytest.fixture
def fake_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry-point group with one good plugin and one whose module does not exist."""
    group = "test.connectors"
    good = "connect_runtime.testing.sequence_source:SequenceSourceConnector"
    eps = importlib.metadata.EntryPoints([
        importlib.metadata.EntryPoint("SequenceSourceConnector", good, group),
        importlib.metadata.EntryPoint("BrokenConnector", "no_such_module_for_plugins_test:Broken", group),
    ])
    real = importlib.metadata.entry_points

    def entry_points(**kwargs: str) -> importlib.metadata.EntryPoints:
        return eps if kwargs.get("group") == group else real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)


@pytest.mark.parametrize("name", [
    "SequenceSourceConnector",
    "SequenceSource",
    " SequenceSourceConnector ",
    "org.apache.kafka.connect.tools.SequenceSourceConnector",
    "connect_runtime.testing.sequence_source.SequenceSourceConnector",
    "connect_runtime.testing.sequence_source:SequenceSourceConnector",
])
def test_connector_class_resolves_every_spelling(name: str, fake_entry_points: None) -> None:
    assert Plugins("test.connectors").connector_class(name) is SequenceSourceConnector


def test_dotted_python_path_outside_entry_points() -> None:
    cls = Plugins().connector_class(f"{__name__}.LocalConnector")
    assert cls is LocalConnector


def test_unknown_class_is_a_clear_not_found_error(fake_entry_points: None) -> None:
    with pytest.raises(NotFoundError, match=r"NoSuchConnector.*available connectors are: BrokenConnector, "
                                            r"SequenceSourceConnector"):
        Plugins("test.connectors").connector_class("com.example.NoSuchConnector")


def test_a_path_to_something_else_than_a_connector_is_refused() -> None:
    with pytest.raises(NotFoundError, match="not a Connector"):
        Plugins().connector_class(f"{__name__}.NOT_A_CONNECTOR")


def test_broken_plugin_fails_only_when_asked_for_and_is_left_out_of_the_list(fake_entry_points: None) -> None:
    plugins = Plugins("test.connectors")  # listing entry points imports nothing
    with pytest.raises(NotFoundError, match=r"BrokenConnector .* failed to load") as info:
        plugins.connector_class("BrokenConnector")
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    infos = plugins.connector_plugins()
    assert [i.to_json() for i in infos] == [
        {"class": "connect_runtime.testing.sequence_source.SequenceSourceConnector", "type": "source",
         "version": "0.1.0"}]


def test_registered_alias_resolves_and_is_listed(fake_entry_points: None) -> None:
    plugins = Plugins("test.connectors")
    plugins.register("Local", LocalConnector)
    assert plugins.connector_class("LocalConnector".removesuffix("Connector")) is LocalConnector
    infos = plugins.connector_plugins()
    assert any(i.class_name.endswith("LocalConnector") and i.version == "9.9" for i in infos)


def test_installed_entry_points_include_the_sequence_connector() -> None:
    assert Plugins().connector_class("SequenceSourceConnector") is SequenceSourceConnector


def test_task_class_loads_by_path_and_refuses_non_tasks() -> None:
    plugins = Plugins()
    path = "connect_runtime.testing.sequence_source.SequenceSourceTask"
    assert plugins.task_class(path) is SequenceSourceTask
    with pytest.raises(NotFoundError):
        plugins.task_class("connect_runtime.testing.sequence_source.SequenceSourceConnector")
    with pytest.raises(NotFoundError):
        plugins.task_class("nope.Nothing")
