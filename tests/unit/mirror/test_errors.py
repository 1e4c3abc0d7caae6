"""Every exception class mirror defines descends from MirrorError and keeps its built-in base."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import mirror
from mirror.client.models import MalformedRecordError
from mirror.errors import MirrorError
from mirror.health.flow_health import ThresholdError


def mirror_exception_classes() -> list[type[BaseException]]:
    classes = []
    for info in pkgutil.walk_packages(mirror.__path__, "mirror."):
        if info.name.endswith(".__main__"):  # runs the CLI when imported
            continue
        module = importlib.import_module(info.name)
        classes += [c for _, c in inspect.getmembers(module, inspect.isclass)
                    if issubclass(c, BaseException) and c.__module__ == info.name]
    return classes


def test_every_mirror_exception_is_a_mirror_error() -> None:
    classes = mirror_exception_classes()
    assert len(classes) >= 6
    assert [c.__qualname__ for c in classes if not issubclass(c, MirrorError)] == []


def test_value_errors_stay_value_errors() -> None:
    assert issubclass(MalformedRecordError, ValueError) and issubclass(ThresholdError, ValueError)
