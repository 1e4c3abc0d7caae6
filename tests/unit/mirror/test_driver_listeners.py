"""Issue 27, item 4: where the MM2 driver listens (mirror.maker.rest_wiring.rest_listeners).

Java's dedicated MM2 opens no port without ``dedicated.mode.enable.internal.rest``; ours serves its API
(statuses, /metrics, /ui) but, unless ``listeners`` is set or internal REST is on, on loopback only.
Before: it listened on every interface (``http://:8083``) and used only the first ``listeners`` entry.
"""

from __future__ import annotations

import pytest

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.properties import parse_properties
from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.maker.rest_wiring import rest_listeners

BASE = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"


def config(extra: str = "") -> MirrorMakerConfig:
    return MirrorMakerConfig(parse_properties(BASE + extra, "mm2.properties"))


def test_without_listeners_the_driver_binds_to_loopback() -> None:
    assert rest_listeners(config(), None) == ("http://127.0.0.1:8083", True)
    assert rest_listeners(config(), 9000) == ("http://127.0.0.1:9000", True)


def test_internal_rest_or_listeners_open_what_they_ask_for() -> None:
    assert rest_listeners(config("dedicated.mode.enable.internal.rest = true\n"), None) == ("http://:8083", False)
    assert rest_listeners(config("listeners = http://0.0.0.0:8083\n"), None) == ("http://0.0.0.0:8083", False)


def test_every_listeners_entry_is_kept_and_rest_port_moves_the_first() -> None:
    both = config("listeners = http://127.0.0.1:8083, https://[::1]:8443\n")
    assert rest_listeners(both, None) == ("http://127.0.0.1:8083,https://[::1]:8443", False)
    assert rest_listeners(both, 0) == ("http://127.0.0.1:0,https://[::1]:8443", False)


def test_a_bad_entry_is_a_config_error_naming_the_line() -> None:
    with pytest.raises(ConfigError, match=r"mm2\.properties:4: .*Unsupported listener 'ftp://x:1'"):
        rest_listeners(config("listeners = http://127.0.0.1:8083, ftp://x:1\n"), None)
