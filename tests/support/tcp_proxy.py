"""A small asyncio TCP proxy that cuts and delays connections, for network-fault tests.

``TcpProxy(upstream_port).start()`` listens on a free loopback port (:attr:`port`) on its own thread
and relays every connection to ``127.0.0.1:upstream_port``. Faults, callable from any thread:

* :meth:`cut` resets every open connection (both sides see the socket die mid-stream);
* :meth:`refuse` / :meth:`accept` : while refusing, new connections are closed at once (a network
  partition as clients see it: connection refused / reset right after connect);
* :meth:`delay` : each chunk is held ``seconds`` before it is forwarded, in both directions (a slow
  link; order within a connection is kept).

A Kafka broker tells its clients where to reconnect (the advertised listener in metadata), so the
broker behind the proxy must advertise the proxy's port, or clients would bypass it after bootstrap.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from concurrent.futures import Future
from typing import Any


class TcpProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1", port: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = port
        self.connections = 0  # accepted since start (relayed or refused)
        self.cuts = 0
        self._delay_s = 0.0
        self._refusing = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"tcp-proxy-{upstream_port}",
                                        daemon=True)

    def start(self) -> TcpProxy:
        self._thread.start()
        self._call(self._listen()).result(10)
        return self

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, coro: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self._refusing:
            _reset(client_writer)
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            _reset(client_writer)
            return
        self._writers |= {client_writer, upstream_writer}
        try:
            await asyncio.gather(self._pipe(client_reader, upstream_writer),
                                 self._pipe(upstream_reader, client_writer))
        finally:
            for writer in (client_writer, upstream_writer):
                self._writers.discard(writer)
                _reset(writer)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self._delay_s:
                    await asyncio.sleep(self._delay_s)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            _reset(writer)

    # -- faults (thread-safe) --------------------------------------------------------------------
    def cut(self) -> int:
        """Reset every open connection; returns how many sockets were cut."""
        async def cut_all() -> int:
            writers = list(self._writers)
            for writer in writers:
                _reset(writer)
            return len(writers)

        self.cuts += 1
        return int(self._call(cut_all()).result(10))

    def refuse(self) -> None:
        """Cut everything and refuse new connections until :meth:`accept`."""
        self._refusing = True
        self.cut()

    def accept(self) -> None:
        self._refusing = False

    def delay(self, seconds: float) -> None:
        """Hold every chunk ``seconds`` before forwarding it (0 to stop delaying)."""
        self._delay_s = seconds

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._writers):
                _reset(writer)
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                self._call(close()).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if not self._loop.is_running():
            self._loop.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close abruptly (RST rather than FIN where the platform allows it): what a cut link looks like."""
    transport = writer.transport
    if transport.is_closing():
        return
    sock = transport.get_extra_info("socket")
    with contextlib.suppress(Exception):
        if sock is not None:  # linger 0: the kernel answers with RST, the peer's next read fails
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
