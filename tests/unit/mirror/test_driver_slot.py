"""HerderSlot: the stable REST target of one MM2 flow, before and while its herder runs (no sockets)."""

from __future__ import annotations

from typing import Any

import pytest

from connect_runtime.api.errors import ConflictError
from connect_runtime.rest.internal import InternalHerder
from mirror.config.mirror_maker import SourceAndTarget
from mirror.maker.driver import HerderSlot


class _FakeHerder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def session_key(self) -> bytes:
        return b"key"

    def put_task_configs(self, connector: str, configs: list[dict[str, str]]) -> None:
        self.calls.append(("tasks", (connector, configs)))

    def fence_zombies(self, connector: str) -> None:
        self.calls.append(("fence", connector))


def _slot() -> HerderSlot:
    pair = SourceAndTarget("A", "B")
    return HerderSlot(pair, lambda: pytest.fail("not built in unit tests"))  # type: ignore[abstract]


def test_slot_serves_internal_endpoints_before_any_herder_runs() -> None:
    """The REST app decides once, at build time, whether POST .../tasks exists for a namespace."""
    slot = _slot()
    assert isinstance(slot, InternalHerder)
    assert slot.session_key() is None  # the endpoint answers 503 until a herder knows the key
    with pytest.raises(ConflictError, match="A->B is not running: starting"):
        slot.put_task_configs("MirrorSourceConnector", [])
    with pytest.raises(ConflictError):
        slot.fence_zombies("MirrorSourceConnector")


def test_slot_delegates_internal_endpoints_to_a_running_herder() -> None:
    slot = _slot()
    herder = _FakeHerder()
    slot._herder, slot._ready = herder, True  # type: ignore[assignment]
    assert slot.session_key() == b"key"
    slot.put_task_configs("MirrorSourceConnector", [{"k": "v"}])
    slot.fence_zombies("MirrorSourceConnector")
    assert herder.calls == [("tasks", ("MirrorSourceConnector", [{"k": "v"}])), ("fence", "MirrorSourceConnector")]
