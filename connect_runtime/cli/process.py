"""How a long-running command lives and dies: exit codes, stop signals, start -> wait -> bounded stop.

``connect-distributed`` and ``connect-mirror-maker`` / ``mirror run`` are run by operators and by
supervisors (systemd, Kubernetes) that act on exactly these things: the exit code says whether to
restart or to page someone, SIGTERM must stop the process cleanly (tasks flush and commit their offsets),
and a start failure must read as one line, not a traceback. They are defined once, here, so the
commands cannot drift apart.

The loop (:func:`run_until_stopped`): install the stop handlers (SIGTERM, SIGINT, SIGHUP: a hang-up of the
controlling terminal stops the node as cleanly as Ctrl-C), start the process-wide malloc trimmer, start
the service (a start failure is one ``error: failed to start: ...`` line and exit code 3), then wait
for a stop signal, announcing readiness once and watching for a failure while running (exit code 1),
and finally stop the service. The service's ``stop`` is what bounds the shutdown: it gives its tasks
their graceful-shutdown timeout and then gives up on them (see each service).
"""

from __future__ import annotations

import argparse
import enum
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Protocol

from connect_runtime.api.errors import one_line
from connect_runtime.api.secrets import scrub
from connect_runtime.cli.malloc_trim import start_process_trimmer

logger = logging.getLogger(__name__)


class ExitCode(enum.IntEnum):
    """The exit codes of every command-line tool (their ``--help`` epilogs list them)."""

    OK = 0  #: stopped cleanly (SIGTERM, SIGINT, SIGHUP), or --help
    FAILURE = 1  #: failed while running
    USAGE = 2  #: bad usage or bad input (config file, flags), one ``error:`` line
    START_FAILURE = 3  #: could not start (e.g. a port in use, a cluster that never answered)


#: Signals that ask a node to stop cleanly.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Service(Protocol):
    """What :func:`run_until_stopped` drives."""

    def start(self) -> None:
        """Bring the service up; may block until it is ready. Raise to report a start failure."""
        ...

    def ready(self) -> bool:
        """Whether the service is fully up (announced once, when it first says so)."""
        ...

    def stop(self) -> None:
        """Stop everything that ``start`` started, within the service's own shutdown bound.

        Called once, also after a failed ``start`` (so it must cope with a half-started service).
        """
        ...


def print_error(message: str) -> None:
    """The one-line error format of every command: ``error: <message>`` on stderr, known secrets scrubbed
    (an exception's text can quote a config value)."""
    print(f"error: {one_line(scrub(message))}", file=sys.stderr, flush=True)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace | int:
    """Parse, returning argparse's own exit code (2 for usage errors, 0 for --help) instead of exiting."""
    try:
        return parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (ExitCode.OK if code is None else ExitCode.USAGE)


@contextmanager
def stop_on_signals(stop: threading.Event, log: logging.Logger = logger) -> Iterator[None]:
    """Set ``stop`` on any of :data:`STOP_SIGNALS` while inside the block; the old handlers come back after.

    Restored only on leaving, i.e. after the service stopped: a second Ctrl-C during the shutdown is
    logged, it does not interrupt the flush of offsets with a KeyboardInterrupt.
    """

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("Received %s, shutting down", signal.Signals(signum).name)
        stop.set()

    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: installed from C, cannot be put back from Python
                signal.signal(signum, handler)


def _never_fails() -> str | None:
    return None


def run_until_stopped(service: Service, *, name: str, announce_ready: Callable[[float], None],
                      failure: Callable[[], str | None] = _never_fails, poll_interval_s: float = 1.0,
                      start_errors: tuple[type[Exception], ...] = (Exception,),
                      log: logging.Logger = logger) -> ExitCode:
    """Start ``service``, run it until a stop signal (or a failure), stop it; the process's exit code.

    ``announce_ready(seconds since start returned)`` is called once, the first time ``service.ready()``
    is true. ``failure()`` is asked every ``poll_interval_s``: a reason ends the run with that reason on
    stderr and :attr:`ExitCode.FAILURE`. Only ``start_errors`` raised by ``start`` count as a start
    failure; anything else propagates to the caller (after nothing was stopped, as before). ``log`` is
    the command's own logger, so its lines keep the logger name operators filter on.
    """
    stop = threading.Event()
    with stop_on_signals(stop, log):
        start_process_trimmer()  # RSS follows live memory after backlogs drain (see its module docstring)
        try:
            service.start()
        except start_errors as exc:
            log.debug("start failed", exc_info=True)
            print_error(f"failed to start: {exc}")
            service.stop()
            return ExitCode.START_FAILURE
        code = _wait(service, stop, announce_ready, failure, poll_interval_s)
        service.stop()
        log.info("%s stopped", name)
        return code


def _wait(service: Service, stop: threading.Event, announce_ready: Callable[[float], None],
          failure: Callable[[], str | None], poll_interval_s: float) -> ExitCode:
    started = time.monotonic()
    announced = False
    while True:
        if not announced and service.ready():
            announce_ready(time.monotonic() - started)
            announced = True
        if stop.wait(poll_interval_s):
            return ExitCode.OK
        reason = failure()
        if reason is not None:
            print_error(reason)
            return ExitCode.FAILURE
