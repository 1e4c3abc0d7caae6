"""The last of a source task's producer: flush within the shutdown budget, the final offset commit, purge.

:class:`~connect_runtime.runtime.task.worker_source_task.WorkerSourceTask` runs it on its thread when it
stops (or fails), before it closes the committer and the producer and reports its final state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import Producer

from connect_runtime.runtime.task.offset_committer import OffsetCommitter
from connect_runtime.runtime.task.source_loop import SourceLoop
from connect_runtime.runtime.task.source_task_settings import SourceTaskSettings

logger = logging.getLogger(__name__)


def flush_and_commit(name: str, producer: Producer, loop: SourceLoop, committer: OffsetCommitter,
                     settings: SourceTaskSettings, *, stop_requested_at: float | None, commit: bool,
                     cancelled: Callable[[], bool] = lambda: False) -> None:
    """Flush, serve the last delivery reports, commit what was acknowledged (``commit``: the task's
    ``start`` returned), then purge what is left: it is not acknowledged, so its offsets stay uncommitted.

    A task the worker gave up on (``cancelled``: it did not stop within its timeout, and the worker may
    have gone on, e.g. to a KIP-875 offsets reset or to the task's next owner) commits nothing more, as in
    Java (``finalOffsetCommit``): a late commit would write its offsets over whatever came meanwhile. Its
    records are copied again from the last commit instead.

    Never raises for a failed flush or commit (logged): closing must always reach the status report.
    """
    shutdown_timeout_s = settings.shutdown_timeout_s
    try:
        # The graceful-shutdown budget runs from the stop request, so that flushing and the final
        # commit fit in the time the worker waits for this task (stop_tasks' timeout).
        budget = shutdown_timeout_s
        if stop_requested_at is not None:
            budget = max(0.0, budget - (time.monotonic() - stop_requested_at))
        remaining = producer.flush(budget)
        loop.serve(producer, 0)
        if remaining:
            logger.warning("%s: %d records not acknowledged within %.1fs of stopping; their offsets "
                           "are not committed, so they will be sent again after a restart",
                           name, remaining, shutdown_timeout_s)
        if commit and cancelled():
            logger.warning("%s: skipping the final offset commit: the task was cancelled (it did not stop in "
                           "time); its records since the last commit will be copied again", name)
        elif commit:
            committer.commit_now(loop.tracking, settings.offset_flush_timeout_s)
    except Exception:  # closing must always reach the status report
        logger.exception("%s error while flushing and committing on close", name)
    finally:
        loop.closing = True
        producer.purge()
        loop.serve(producer, 0)
