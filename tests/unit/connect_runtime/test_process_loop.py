"""The run loop every long-running command shares (connect_runtime.cli.process).

In-process tests stop the loop with a real signal raised on the main thread (``signal.raise_signal``:
the handler has run when it returns), so nothing waits on a clock. One test runs the loop in a child
process and signals it from outside, as an operator or a supervisor does.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

from connect_runtime.cli.process import STOP_SIGNALS, ExitCode, parse_args, run_until_stopped

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")


class FakeService:
    """Records what the loop did; ``ready_after`` polls it reports ready; ``on_poll`` runs per poll."""

    def __init__(self, *, start_error: Exception | None = None, ready_after: int = 0,
                 on_poll: Callable[[int], None] = lambda _n: None) -> None:
        self.calls: list[str] = []
        self._start_error = start_error
        self._ready_after = ready_after
        self._on_poll = on_poll
        self.polls = 0

    def start(self) -> None:
        self.calls.append("start")
        if self._start_error is not None:
            raise self._start_error

    def ready(self) -> bool:
        self.polls += 1
        self._on_poll(self.polls)
        return self.polls > self._ready_after

    def stop(self) -> None:
        self.calls.append("stop")


def raise_after(polls: int, signum: int = signal.SIGTERM) -> Callable[[int], None]:
    def on_poll(n: int) -> None:
        if n == polls:
            signal.raise_signal(signum)
    return on_poll


def test_exit_codes_keep_the_numbers_users_see() -> None:
    assert [(c.name, int(c)) for c in ExitCode] == [("OK", 0), ("FAILURE", 1), ("USAGE", 2), ("START_FAILURE", 3)]


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_stop_signal_stops_the_service_cleanly(signum: int, caplog: pytest.LogCaptureFixture) -> None:
    service = FakeService(ready_after=2, on_poll=raise_after(3, signum))
    announced: list[float] = []
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    with caplog.at_level(logging.INFO):
        code = run_until_stopped(service, name="test-node", announce_ready=announced.append, poll_interval_s=0.01)
    assert code is ExitCode.OK
    assert service.calls == ["start", "stop"]
    assert len(announced) == 1 and announced[0] >= 0  # once, on the first poll that saw it ready
    assert f"Received {signal.Signals(signum).name}, shutting down" in caplog.text
    assert "test-node stopped" in caplog.text
    assert {s: signal.getsignal(s) for s in STOP_SIGNALS} == before  # handlers put back


def test_readiness_is_announced_once_however_long_the_node_runs() -> None:
    service = FakeService(ready_after=1)
    announced: list[float] = []
    waits = 0

    def failure() -> str | None:  # asked after every wait: the 5th one brings the stop signal
        nonlocal waits
        waits += 1
        if waits == 5:
            signal.raise_signal(signal.SIGTERM)
        return None

    code = run_until_stopped(service, name="n", announce_ready=announced.append, failure=failure,
                             poll_interval_s=0.001)
    assert code is ExitCode.OK
    assert waits == 5 and len(announced) == 1 and service.polls == 2  # not asked again once announced


def test_start_failure_is_one_line_exit_3_and_stops_what_started(capsys: pytest.CaptureFixture[str]) -> None:
    service = FakeService(start_error=OSError("[Errno 98] Address already in use"))
    code = run_until_stopped(service, name="n", announce_ready=lambda _s: None)
    assert code is ExitCode.START_FAILURE
    assert service.calls == ["start", "stop"]
    assert capsys.readouterr().err == "error: failed to start: [Errno 98] Address already in use\n"


def test_an_error_outside_start_errors_propagates_untouched() -> None:
    service = FakeService(start_error=TypeError("bug"))
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    with pytest.raises(TypeError, match="bug"):
        run_until_stopped(service, name="n", announce_ready=lambda _s: None, start_errors=(OSError,))
    assert service.calls == ["start"]  # as before the shared loop: the caller reports it, nothing is stopped
    assert {s: signal.getsignal(s) for s in STOP_SIGNALS} == before


def test_a_failure_while_running_is_exit_1_with_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    service = FakeService()
    answers = iter([None, None, "the herder failed; see the log"])
    code = run_until_stopped(service, name="n", announce_ready=lambda _s: None, failure=lambda: next(answers),
                             poll_interval_s=0.001)
    assert code is ExitCode.FAILURE
    assert service.calls == ["start", "stop"]
    assert capsys.readouterr().err == "error: the herder failed; see the log\n"


def test_parse_args_returns_argparse_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("config")
    assert parse_args(parser, []) == ExitCode.USAGE
    assert parse_args(parser, ["--help"]) == ExitCode.OK
    namespace = parse_args(parser, ["a.properties"])
    assert isinstance(namespace, argparse.Namespace) and namespace.config == "a.properties"
    capsys.readouterr()


CHILD = textwrap.dedent("""
    import logging, sys
    from connect_runtime.cli.process import run_until_stopped

    class Service:
        def start(self): pass
        def ready(self): return True
        def stop(self): print("service stopped", flush=True)

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    code = run_until_stopped(Service(), name="child-node",
                             announce_ready=lambda _s: print("ready", flush=True))
    sys.exit(code)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_process_signalled_from_outside_exits_0_after_stopping(signum: int) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=os.environ.copy())
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"  # handlers are installed before start, so before this
        child.send_signal(signum)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    assert out == "service stopped\n"
    assert f"Received {signal.Signals(signum).name}, shutting down" in err and "child-node stopped" in err
