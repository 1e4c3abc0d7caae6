"""Serving the REST app with uvicorn on a background thread.

We bind the listening socket ourselves before uvicorn starts, so ``port 0`` works and ``.port`` /
``.url`` are known the moment :meth:`RestServer.start` returns; start() then waits until uvicorn
accepts connections. uvicorn's own access log is off (our app logs requests at DEBUG, without bodies)
and it never installs signal handlers from a non-main thread, so the embedding process keeps its own.
An ``https://`` listener is served with the ``ssl.SSLContext`` given by the caller
(:func:`connect_runtime.rest.tls.server_ssl_context` builds it from ``listeners.https.ssl.*``).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

import uvicorn
from starlette.types import ASGIApp

from connect_runtime.api.errors import ConfigError, ConnectError

logger = logging.getLogger(__name__)

DEFAULT_LISTENERS = "http://:8083"


def listener_scheme(listeners: str) -> str:
    """``http`` or ``https``: the scheme of the first listener (ConfigError for anything else)."""
    first = next((entry.strip() for entry in listeners.split(",") if entry.strip()), "")
    scheme = urlsplit(first).scheme.lower()
    if scheme not in ("http", "https"):
        raise ConfigError(f"Unsupported listener '{first}': expected http://host:port or https://host:port",
                          key="listeners")
    return scheme


def parse_listener(listeners: str) -> tuple[str, int]:
    """(host, port) of the first listener in Connect's ``listeners`` syntax; ``""`` = all interfaces."""
    first = next((entry.strip() for entry in listeners.split(",") if entry.strip()), "")
    parts = urlsplit(first)
    listener_scheme(first)
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"Invalid port in listener '{first}'", key="listeners") from exc
    return parts.hostname or "", 8083 if port is None else port


def _bind(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConnectError(f"Cannot bind REST listener to {host or '*'}:{port}: {exc}") from exc
    return sock


class RestServer:
    """One HTTP listener serving ``app``; start() and stop() are idempotent and bounded in time.

    A herder must know its own URL before the app that serves it exists (Connect initialises its
    RestServer before the herder for the same reason), so ``app`` may be None at construction:
    ``bind()`` reserves the port and makes ``.url`` known, then set ``.app`` and ``start()``.
    """

    def __init__(self, app: ASGIApp | None = None, listeners: str = DEFAULT_LISTENERS,
                 advertised_url: str | None = None, *, start_timeout_s: float = 30.0,
                 stop_timeout_s: float = 10.0, ssl_context: ssl.SSLContext | None = None) -> None:
        self.app = app
        self._host, self._requested_port = parse_listener(listeners)
        self.scheme = listener_scheme(listeners)
        if self.scheme == "https" and ssl_context is None:
            raise ConfigError("an https listener needs its TLS settings (listeners.https.ssl.keystore.location...)",
                              key="listeners")
        if self.scheme == "http" and ssl_context is not None:
            raise ConfigError("TLS settings given for an http listener: use listeners=https://host:port",
                              key="listeners")
        self._ssl_context = ssl_context
        self._advertised_url = advertised_url.rstrip("/") if advertised_url else None
        self._start_timeout_s = start_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise ConnectError("REST server is not started")
        return self._port

    @property
    def url(self) -> str:
        """The URL other workers should use, without a trailing slash (``http[s]://host:port``)."""
        if self._advertised_url:
            return self._advertised_url
        host = self._host or socket.gethostname()
        if ":" in host:
            host = f"[{host}]"
        return f"{self.scheme}://{host}:{self.port}"

    def bind(self) -> RestServer:
        """Reserve the listening socket (idempotent); ``.port`` and ``.url`` are known afterwards."""
        if self._socket is None:
            self._socket = _bind(self._host, self._requested_port)
            self._port = int(self._socket.getsockname()[1])
        return self

    def start(self) -> RestServer:
        """Serve ``app`` on the bound socket; returns once uvicorn accepts connections."""
        if self._server is not None:
            return self
        if self.app is None:
            raise ConnectError("RestServer.start() needs an app")
        sock = self.bind()._socket
        assert sock is not None
        config = uvicorn.Config(self.app, log_config=None, access_log=False, lifespan="on",
                                timeout_graceful_shutdown=max(1, int(self._stop_timeout_s / 2)))
        config.load()
        config.ssl = self._ssl_context  # ours, built from Connect's keys (uvicorn's own needs files)
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                        name=f"rest-server-{self._port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self._start_timeout_s
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ConnectError(f"REST server failed to start on port {self._requested_port}")
            time.sleep(0.01)
        logger.info("REST server listening on %s:%d, advertised as %s", self._host or "*", self._port,
                    self.url)
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is not None and thread is not None:
            server.should_exit = True
            thread.join(self._stop_timeout_s)
            if thread.is_alive():
                logger.warning("REST server did not stop within %.0f s; forcing it", self._stop_timeout_s)
                server.force_exit = True
                thread.join(self._stop_timeout_s)
        if self._socket is not None:
            self._socket.close()
        self._server, self._thread, self._socket = None, None, None
        if server is not None:
            logger.info("REST server on port %s stopped", self._port)
