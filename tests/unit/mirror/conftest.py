"""Fixtures shared by the mirror unit tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """The commands under test configure logging for the process; keep that from leaking into other tests."""
    root, rdkafka = logging.getLogger(), logging.getLogger("librdkafka")
    saved = root.level, list(root.handlers), rdkafka.level
    yield
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    rdkafka.setLevel(saved[2])
