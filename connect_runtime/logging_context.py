"""Per-thread logging context: which flow and connector/task a log line concerns.

Threads that run a connector or task set the context once (``set_context(flow="A->B",
connector_task="MirrorSourceConnector-0")``); :class:`ContextFilter` copies it onto every record so
that a format string can show ``%(flow)s`` and ``%(connector_task)s``. Threads without a context show
``-``. Using contextvars keeps it per thread without passing loggers around.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_flow: contextvars.ContextVar[str] = contextvars.ContextVar("flow", default="-")
_connector_task: contextvars.ContextVar[str] = contextvars.ContextVar("connector_task", default="-")


def set_context(flow: str | None = None, connector_task: str | None = None) -> None:
    """Set the current thread's context; None leaves a field unchanged."""
    if flow is not None:
        _flow.set(flow)
    if connector_task is not None:
        _connector_task.set(connector_task)


def current_flow() -> str:
    return _flow.get()


class ContextFilter(logging.Filter):
    """Adds ``flow`` and ``connector_task`` attributes to every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "flow"):
            record.flow = _flow.get()
        if not hasattr(record, "connector_task"):
            record.connector_task = _connector_task.get()
        return True


def carry_context(target: Callable[..., T]) -> Callable[..., T]:
    """Wrap a thread target so that it logs with the creating thread's flow and connector/task.

    Python threads start with an empty context; without this, lines from threads a connector or a
    store starts (schedulers, log followers) would show ``-`` instead of the flow they work for.
    """
    context = contextvars.copy_context()
    return functools.partial(context.run, target)
