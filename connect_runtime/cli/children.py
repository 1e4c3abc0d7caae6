"""Child processes that cannot outlive the command that started them.

A command that starts processes (``mirror quickstart`` starts two brokers and a driver; the test fixtures
start brokers) stops them itself on SIGTERM, SIGINT and SIGHUP (:mod:`connect_runtime.cli.process`),
but a parent killed with SIGKILL, or one that crashes, runs no handler. On Linux the kernel can deliver
a signal to a child when its parent dies (``prctl(PR_SET_PDEATHSIG)``, set in the child between fork
and exec): :func:`die_with_parent` builds that ``preexec_fn`` for :class:`subprocess.Popen`.

Two caveats of the kernel feature, which is why callers still stop their children themselves:

* the signal fires when the *thread* that forked the child exits, not the process: start long-lived
  children from the main thread (or from a thread that lives as long as they should);
* it is Linux-only; elsewhere :func:`die_with_parent` returns None and only the explicit stop applies.

Children are also started in their own session (``start_new_session=True``) so that a Ctrl-C in the
terminal reaches only the parent, which then stops them in order (the driver before the brokers it
talks to) instead of everything at once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    function: Callable[..., int] = libc.prctl
    return function


def die_with_parent(signum: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive ``signum`` when this process dies (None if unsupported).

    Everything is resolved before the fork (libc, the parent's pid), so the child runs only two
    system calls between fork and exec: the general hazard of a ``preexec_fn`` in a threaded process
    (ruff's PLW1509: a lock another thread held at fork time, e.g. in malloc or an import) does not
    apply, as nothing here allocates, imports or takes a lock. If the parent died before the child set the signal (the
    child was re-parented meanwhile), the child exits at once instead of running unsupervised.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def set_parent_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return set_parent_death_signal


def set_own_parent_death_signal(signum: int = signal.SIGTERM) -> bool:
    """Ask for ``signum`` when *this* process's parent dies (e.g. a pytest-xdist worker); False if unsupported.

    ``expected_parent`` is not known here, so a parent that already died (we were re-parented to init
    or a subreaper) cannot be told apart reliably; the caller checks ``os.getppid()`` if it cares.
    """
    prctl = _prctl()
    if prctl is None:
        return False
    return prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
