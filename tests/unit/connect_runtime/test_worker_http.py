"""Requests between workers close their connection: a stopping REST server (Java's Jetty) waits for open ones."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from connect_runtime.runtime.worker_http import worker_http_client


class _Counting(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps connections alive unless the client closes them
    connections: list[int] = []

    def setup(self) -> None:
        super().setup()
        self.connections.append(1)

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    _Counting.connections = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_each_request_between_workers_has_a_connection_of_its_own(server: ThreadingHTTPServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    with worker_http_client(timeout_s=5) as client:
        assert [client.get(url).text for _ in range(3)] == ["ok"] * 3
    assert len(_Counting.connections) == 3


def test_a_plain_client_would_keep_one_open(server: ThreadingHTTPServer) -> None:
    """The server above does keep connections alive: the test before would see one otherwise."""
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    with httpx.Client(timeout=5) as client:
        assert [client.get(url).text for _ in range(3)] == ["ok"] * 3
    assert len(_Counting.connections) == 1
