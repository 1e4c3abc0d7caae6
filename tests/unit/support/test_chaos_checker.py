"""The chaos tier's checker and TCP proxy can fail: each kind of damage is counted where it happened."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.chaos import Arrival, analyse, decode, encode, replayed_runs
from tests.support.tcp_proxy import TcpProxy


def arrivals(partition: int, sequences: list[int], sent_ms: float = 1000.0,
             arrived_ms: float = 1100.0) -> list[Arrival]:
    return [Arrival(partition, s, sent_ms + s, arrived_ms + s) for s in sequences]


def test_value_round_trip() -> None:
    assert decode(encode(3, 42, 1234.5)) == (3, 42, 1234.5)


def test_clean_run() -> None:
    report = analyse("none", {0: {0, 1, 2}}, arrivals(0, [0, 1, 2]))
    assert (report.records, report.lost, report.duplicated, report.out_of_order) == (3, 0, 0, 0)
    assert report.latency(0.5) == pytest.approx(100)


def test_lost_duplicated_and_reordered_are_told_apart_per_partition() -> None:
    acked = {0: set(range(6)), 1: set(range(4))}
    # partition 0: 3 is lost, 1..2 replayed after 4 (a restart's duplicates, not a reordering)
    # partition 1: 2 arrives after 3 for the first time (a reordering)
    got = arrivals(0, [0, 1, 2, 4, 1, 2, 5]) + arrivals(1, [0, 1, 3, 2])
    report = analyse("mixed", acked, got)
    by = {p.partition: p for p in report.partitions}
    assert (by[0].lost, by[0].duplicated, by[0].out_of_order) == (1, 2, 0)
    assert (by[1].lost, by[1].duplicated, by[1].out_of_order) == (0, 0, 1)
    assert (report.lost, report.duplicated, report.out_of_order) == (1, 2, 1)
    assert replayed_runs(got) == {0: [2]}
    assert "| mixed | 10 | 1 | 2 | 1 |" in report.table()


def test_recovery_is_the_first_record_sent_after_the_fault_lifted() -> None:
    got = [Arrival(0, 0, 1000, 1050), Arrival(0, 1, 2000, 9000), Arrival(0, 2, 5000, 9100)]
    report = analyse("stall", {0: {0, 1, 2}}, got, fault_lifted_ms=4000)
    assert report.recovery_s == pytest.approx(5.1)


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    def echo(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # the proxy resets its upstream side too
            while data := conn.recv(4096):
                conn.sendall(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


def roundtrip(port: int, payload: bytes = b"ping") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(payload)
        return conn.recv(4096)


def test_proxy_relays_cuts_refuses_and_delays(echo_port: int) -> None:
    with TcpProxy(echo_port) as proxy:
        assert roundtrip(proxy.port) == b"ping"
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as held:
            held.sendall(b"a")
            assert held.recv(10) == b"a"
            assert proxy.cut() >= 2  # the client side and the upstream side
            with pytest.raises(ConnectionResetError):
                held.recv(10)
        proxy.refuse()
        with pytest.raises(ConnectionResetError):
            roundtrip(proxy.port)
        proxy.accept()
        proxy.delay(0.3)
        started = time.monotonic()
        assert roundtrip(proxy.port) == b"ping"
        assert time.monotonic() - started >= 0.6  # held once each way
        proxy.delay(0)
