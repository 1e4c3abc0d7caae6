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
from dataclasses import dataclass
from urllib.parse import urlsplit

import uvicorn
from starlette.types import ASGIApp

from connect_runtime.api.errors import ConfigError, ConnectError

logger = logging.getLogger(__name__)

DEFAULT_LISTENERS = "http://:8083"


@dataclass(frozen=True)
class ListenerAddress:
    """One ``listeners`` entry: scheme, host (``""`` = all interfaces) and port (0 = any free one)."""

    scheme: str
    host: str
    port: int


def parse_listeners(listeners: str) -> list[ListenerAddress]:
    """Every entry of Connect's ``listeners`` (``http://host:port,https://host:port``); ConfigError naming
    the entry for an unsupported scheme, a bad port, no entry at all, or one address given twice."""
    out: list[ListenerAddress] = []
    for entry in (e.strip() for e in listeners.split(",")):
        if not entry:
            continue
        parts = urlsplit(entry)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise ConfigError(f"Unsupported listener '{entry}': expected http://host:port or https://host:port",
                              key="listeners")
        try:
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"Invalid port in listener '{entry}'", key="listeners") from exc
        address = ListenerAddress(scheme, parts.hostname or "", 8083 if port is None else port)
        if address.port and any((a.host, a.port) == (address.host, address.port) for a in out):
            raise ConfigError(f"Listener '{entry}' is given twice in listeners", key="listeners")
        out.append(address)
    if not out:
        raise ConfigError(f"Unsupported listener '{listeners.strip()}': expected http://host:port or "
                          f"https://host:port", key="listeners")
    return out


def has_https_listener(listeners: str) -> bool:
    """Whether any listener is ``https://`` (then the TLS settings are needed)."""
    return any(a.scheme == "https" for a in parse_listeners(listeners))


def parse_listener(listeners: str) -> tuple[str, int]:
    """(host, port) of the first listener in Connect's ``listeners`` syntax; ``""`` = all interfaces."""
    first = parse_listeners(listeners)[0]
    return first.host, first.port


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
    """Every listener of ``listeners`` serving ``app`` (http and https side by side, one uvicorn server
    each); start() and stop() are idempotent and bounded in time. ``.port``, ``.url`` and ``.scheme`` are
    the first listener's (what other workers are told unless ``advertised_url`` says otherwise).

    A herder must know its own URL before the app that serves it exists (Connect initialises its
    RestServer before the herder for the same reason), so ``app`` may be None at construction:
    ``bind()`` reserves the ports and makes ``.url`` known, then set ``.app`` and ``start()``.
    """

    def __init__(self, app: ASGIApp | None = None, listeners: str = DEFAULT_LISTENERS,
                 advertised_url: str | None = None, *, start_timeout_s: float = 30.0,
                 stop_timeout_s: float = 10.0, ssl_context: ssl.SSLContext | None = None) -> None:
        self.app = app
        self._listeners = parse_listeners(listeners)
        first = self._listeners[0]
        self._host, self._requested_port, self.scheme = first.host, first.port, first.scheme
        https = any(a.scheme == "https" for a in self._listeners)
        if https and ssl_context is None:
            raise ConfigError("an https listener needs its TLS settings (listeners.https.ssl.keystore.location...)",
                              key="listeners")
        if not https and ssl_context is not None:
            raise ConfigError("TLS settings given for an http listener: use listeners=https://host:port",
                              key="listeners")
        self._ssl_context = ssl_context
        self._advertised_url = advertised_url.rstrip("/") if advertised_url else None
        self._start_timeout_s = start_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._servers: list[tuple[uvicorn.Server, threading.Thread]] = []
        self._sockets: list[socket.socket] = []
        self._ports: list[int] = []

    @property
    def port(self) -> int:
        if not self._ports:
            raise ConnectError("REST server is not started")
        return self._ports[0]

    @property
    def urls(self) -> list[str]:
        """Every listener's URL, in the order of ``listeners`` (after :meth:`bind`)."""
        if not self._ports:
            raise ConnectError("REST server is not started")
        return [_url(a.scheme, a.host, port) for a, port in zip(self._listeners, self._ports, strict=True)]

    @property
    def url(self) -> str:
        """The URL other workers should use, without a trailing slash (``http[s]://host:port``)."""
        if self._advertised_url:
            return self._advertised_url
        return _url(self.scheme, self._host, self.port)

    def bind(self) -> RestServer:
        """Reserve every listening socket (idempotent); ``.port`` and ``.url`` are known afterwards."""
        if not self._sockets:
            bound: list[socket.socket] = []
            try:
                for address in self._listeners:
                    bound.append(_bind(address.host, address.port))
            except ConnectError:
                for sock in bound:
                    sock.close()
                raise
            self._sockets = bound
            self._ports = [int(sock.getsockname()[1]) for sock in bound]
        return self

    def start(self) -> RestServer:
        """Serve ``app`` on the bound sockets; returns once uvicorn accepts connections on every one."""
        if self._servers:
            return self
        if self.app is None:
            raise ConnectError("RestServer.start() needs an app")
        self.bind()
        for index, (address, sock) in enumerate(zip(self._listeners, self._sockets, strict=True)):
            # The app's lifespan (its startup and shutdown) runs once, with the first listener's server.
            config = uvicorn.Config(self.app, log_config=None, access_log=False, lifespan="on" if index == 0 else "off",
                                    timeout_graceful_shutdown=max(1, int(self._stop_timeout_s / 2)))
            config.load()
            # ours, built from Connect's keys (uvicorn's own needs files)
            config.ssl = self._ssl_context if address.scheme == "https" else None
            server = uvicorn.Server(config)
            thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                      name=f"rest-server-{self._ports[index]}", daemon=True)
            self._servers.append((server, thread))
            thread.start()
        deadline = time.monotonic() + self._start_timeout_s
        while not all(server.started for server, _ in self._servers):
            if any(not thread.is_alive() for _, thread in self._servers) or time.monotonic() > deadline:
                self.stop()
                raise ConnectError(f"REST server failed to start on port {self._requested_port}")
            time.sleep(0.01)
        logger.info("REST server listening on %s, advertised as %s",
                    ", ".join(f"{a.scheme}://{a.host or '*'}:{port}"
                              for a, port in zip(self._listeners, self._ports, strict=True)), self.url)
        return self

    def stop(self) -> None:
        servers = self._servers
        for server, _ in servers:
            server.should_exit = True
        for server, thread in servers:
            thread.join(self._stop_timeout_s)
            if thread.is_alive():
                logger.warning("REST server did not stop within %.0f s; forcing it", self._stop_timeout_s)
                server.force_exit = True
                thread.join(self._stop_timeout_s)
        for sock in self._sockets:
            sock.close()
        self._servers, self._sockets = [], []
        if servers:
            logger.info("REST server on port %s stopped", ", ".join(str(p) for p in self._ports))


def _url(scheme: str, host: str, port: int) -> str:
    host = host or socket.gethostname()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"
