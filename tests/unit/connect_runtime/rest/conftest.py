"""Fixtures for the REST layer tests: a FakeHerder behind Starlette's in-process TestClient."""

from __future__ import annotations

import socket
import warnings
from collections.abc import Iterator

import pytest
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # Starlette 1.x nudges towards the httpx2 package for its TestClient; httpx is what we ship with.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

from connect_runtime.rest.app import create_app

from .fake_herder import FakeHerder


@pytest.fixture
def herder() -> FakeHerder:
    return FakeHerder()


@pytest.fixture
def client(herder: FakeHerder) -> Iterator[TestClient]:
    # raise_server_exceptions: any exception escaping the app fails the test (the app must map them all)
    with TestClient(create_app(herder), raise_server_exceptions=True) as test_client:
        yield test_client


def unreachable_url() -> str:
    """A loopback URL nobody listens on (a port just released by the OS), for failed forwards."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


def source_config(name: str = "src", **extra: str) -> dict[str, str]:
    return {"name": name, "connector.class": MIRROR_SOURCE, "tasks.max": "2", **extra}
