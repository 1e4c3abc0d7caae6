"""Config attributes generated from ConfigDef keys (mirror.config.settings) and the one base connector def."""

from __future__ import annotations

from typing import Any

import pytest

from connect_runtime.api.config import ConfigDef, ConfigKey, Type
from connect_runtime.api.connector_config import CONNECTOR_CONFIG_DEF
from mirror.config.checkpoint import MirrorCheckpointConfig, MirrorCheckpointTaskConfig
from mirror.config.connector_base import BASE_CONNECTOR_CONFIG_DEF, MirrorConnectorConfig
from mirror.config.heartbeat import MirrorHeartbeatConfig
from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.config.settings import Choice, Flag, Integer, Period, Setting, Text, TextList, check_settings
from mirror.config.source import MirrorSourceConfig, MirrorSourceTaskConfig

CONFIG_CLASSES: list[type[Any]] = [MirrorConnectorConfig, MirrorSourceConfig, MirrorSourceTaskConfig,
                                   MirrorCheckpointConfig, MirrorCheckpointTaskConfig, MirrorHeartbeatConfig,
                                   MirrorMakerConfig]


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda c: c.__name__)
def test_every_setting_names_a_key_of_its_class_config_def_with_a_readable_type(cls: type[Any]) -> None:
    assert check_settings(cls, cls.CONFIG_DEF) == []


class _Sample:
    CONFIG_DEF = ConfigDef([ConfigKey("a.flag", Type.BOOLEAN, True), ConfigKey("a.seconds", Type.LONG, 60),
                            ConfigKey("a.list", Type.LIST, "x,y"), ConfigKey("a.where", Type.STRING, "Source"),
                            ConfigKey("a.name", Type.STRING, None)])

    flag = Flag("a.flag")
    every = Period("a.flag", "a.seconds")
    items = TextList("a.list")
    where = Choice("a.where")
    name = Text("a.name")

    def __init__(self, props: dict[str, str]) -> None:
        self._values = self.CONFIG_DEF.parse(props)

    def get(self, name: str) -> Any:
        return self._values[name]


def test_check_settings_reports_unknown_keys_and_unreadable_types() -> None:
    class Broken(_Sample):
        missing = Integer("no.such.key")
        wrong = Integer("a.list")
        off = Period("a.list", "a.seconds")

    problems = check_settings(Broken, Broken.CONFIG_DEF)
    assert len(problems) == 3
    assert any("Broken.missing: 'no.such.key' is not a key" in p for p in problems)
    assert any("Broken.wrong: 'a.list' is LIST" in p for p in problems)
    assert any("Broken.off: 'a.list' is LIST" in p for p in problems)


def test_settings_read_the_parsed_values() -> None:
    sample = _Sample({"a.seconds": " 30 ", "a.list": "p, q", "a.where": "TARGET"})
    assert sample.flag is True and sample.every == 30
    assert sample.items == ["p", "q"] and sample.where == "target"
    assert sample.name == "None"  # as str() of an unset STRING always gave


def test_a_period_is_minus_one_when_its_flag_is_off() -> None:
    assert _Sample({"a.flag": "FALSE", "a.seconds": "30"}).every == -1


def test_a_list_setting_returns_a_copy() -> None:
    sample = _Sample({})
    sample.items.append("z")
    assert sample.items == ["x", "y"]


def test_class_access_gives_the_setting_itself() -> None:
    assert isinstance(MirrorSourceConfig.topics, Setting) and MirrorSourceConfig.topics.key == "topics"


def test_connect_keys_of_every_connector_are_the_runtime_definitions() -> None:
    for key in CONNECTOR_CONFIG_DEF.keys():  # noqa: SIM118 - ConfigDef.keys() returns ConfigKeys
        assert BASE_CONNECTOR_CONFIG_DEF[key.name] is key
