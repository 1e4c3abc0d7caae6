"""RestServer: listener parsing, binding errors, advertised URL (serving is covered in test_forwarding)."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest

from connect_runtime.api.errors import ConfigError, ConnectError
from connect_runtime.rest.app import create_app
from connect_runtime.rest.server import RestServer, parse_listener
from tests.support.rest_certs import self_signed

from .fake_herder import FakeHerder


@pytest.mark.parametrize(("listeners", "expected"), [
    ("http://:8083", ("", 8083)),
    ("http://127.0.0.1:0", ("127.0.0.1", 0)),
    ("HTTP://localhost:9000, http://other:1", ("localhost", 9000)),
    ("http://[::1]:8084", ("::1", 8084)),
    ("http://myhost", ("myhost", 8083)),
])
def test_parse_listener(listeners: str, expected: tuple[str, int]) -> None:
    assert parse_listener(listeners) == expected


@pytest.mark.parametrize("listeners", ["ftp://:8443", "", "localhost:8083", "http://:notaport"])
def test_unsupported_listener_is_config_error(listeners: str) -> None:
    with pytest.raises(ConfigError):
        parse_listener(listeners)


def test_https_listener_without_tls_settings_is_config_error() -> None:
    assert parse_listener("https://:8443") == ("", 8443)
    with pytest.raises(ConfigError, match=r"listeners\.https\.ssl"):
        RestServer(None, "https://127.0.0.1:0")


def test_advertised_url_wins_and_port_in_use_fails_fast() -> None:
    first = RestServer(create_app(FakeHerder()), "http://127.0.0.1:0", advertised_url="http://worker-1:8083/")
    first.start()
    try:
        assert first.url == "http://worker-1:8083"
        clash = RestServer(create_app(FakeHerder()), f"http://127.0.0.1:{first.port}")
        with pytest.raises(ConnectError, match="Cannot bind"):
            clash.start()
    finally:
        first.stop()


def test_port_before_start_is_an_error() -> None:
    with pytest.raises(ConnectError, match="not started"):
        _ = RestServer(create_app(FakeHerder()), "http://127.0.0.1:0").port


def test_bind_first_then_give_the_app() -> None:
    server = RestServer(None, "http://127.0.0.1:0").bind()
    try:
        url = server.url  # known before the herder (which needs it) and its app exist
        server.app = create_app(FakeHerder(worker=url))
        server.start()
        assert server.url == url
        with httpx.Client(trust_env=False) as client:
            assert client.get(url + "/connectors").json() == []
    finally:
        server.stop()


def test_start_without_app_is_an_error() -> None:
    server = RestServer(None, "http://127.0.0.1:0")
    with pytest.raises(ConnectError, match="needs an app"):
        server.start()
    server.stop()


def test_every_listener_is_served_http_and_https_side_by_side(tmp_path: Path) -> None:
    """Issue 27: a second ``listeners`` entry was ignored."""
    pem = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pem.keystore)
    server = RestServer(create_app(FakeHerder()), "http://127.0.0.1:0, https://127.0.0.1:0", ssl_context=context)
    server.start()
    try:
        plain, secure = server.urls
        assert plain.startswith("http://127.0.0.1:") and secure.startswith("https://127.0.0.1:")
        assert server.url == plain  # the first listener is the one advertised
        with httpx.Client(trust_env=False, verify=ssl.create_default_context(cafile=str(pem.certificate))) as client:
            assert client.get(plain + "/connectors").json() == []
            assert client.get(secure + "/connectors").json() == []
    finally:
        server.stop()
    with httpx.Client(trust_env=False) as client, pytest.raises(httpx.ConnectError):
        client.get(plain + "/connectors")


@pytest.mark.parametrize(("listeners", "message"), [
    ("http://127.0.0.1:0, ftp://127.0.0.1:21", "Unsupported listener 'ftp"),
    ("http://127.0.0.1:8083, http://127.0.0.1:8083", "given twice"),
    ("http://127.0.0.1:0, http://127.0.0.1:x", "Invalid port"),
])
def test_a_listener_that_cannot_be_served_is_refused(listeners: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RestServer(create_app(FakeHerder()), listeners)


def test_an_https_entry_anywhere_needs_tls_settings() -> None:
    with pytest.raises(ConfigError, match=r"listeners\.https\.ssl"):
        RestServer(None, "http://127.0.0.1:0, https://127.0.0.1:0")
