"""``GET /health`` of a distributed herder (KIP-1017), in Java's words.

Healthy means a no-op request got through the tick thread within the health-check timeout: a worker
whose tick thread is stuck (a store that does not answer, a rebalance that never ends) answers 500
"unhealthy", even though its REST server and its tasks may still run. Starting (503) and unhealthy
messages end with what the tick thread is doing (Java's stage summary, see
:class:`~connect_runtime.runtime.distributed.tick_executor.Stage`). While starting we answer at once rather than
waiting out the timeout as Java does: a probe learns the same, sooner. A worker that runs a connector
(or tasks) it cannot do its part for, because what it must hand to the leader does not reach it
(:mod:`connect_runtime.runtime.leader.stalled_handoffs`), is unhealthy too, naming each connector: its flow stalls.
"""

from __future__ import annotations

from collections.abc import Sequence

from connect_runtime.api.errors import ConnectError
from connect_runtime.runtime.distributed.tick_executor import TickExecutor
from connect_runtime.runtime.herder import WorkerHealth

#: How long ``GET /health`` waits for the tick thread (Java's fixed 10 s health-check timeout).
HEALTH_CHECK_TIMEOUT_S = 10.0
HEALTHY = "Worker has completed startup and is ready to handle requests."
STARTING = "Worker is still starting up."
UNHEALTHY = "Worker was unable to handle this request and may be unable to handle other requests."
STALLED = "Worker runs work it cannot do its part for:"


def probe_health(ticks: TickExecutor, *, failed: bool, ready: bool, timeout_s: float,
                 stalled: Sequence[str] = ()) -> WorkerHealth:
    """healthy / starting / unhealthy; waits up to ``timeout_s`` for the tick thread when started.
    ``stalled``: one line per connector stalled here (unhealthy when there is any)."""
    if failed:
        return WorkerHealth("unhealthy", _with_stage(ticks, UNHEALTHY))
    if not ready:
        return WorkerHealth("starting", _with_stage(ticks, STARTING))
    try:
        ticks.submit(lambda: None, timeout_s)
    except ConnectError:
        return WorkerHealth("unhealthy", _with_stage(ticks, UNHEALTHY))
    if stalled:
        return WorkerHealth("unhealthy", f"{STALLED} {'; '.join(stalled)}")
    return WorkerHealth("healthy", HEALTHY)


def _with_stage(ticks: TickExecutor, message: str) -> str:
    stage = ticks.current_stage
    return message if stage is None else f"{message} {stage.summarize()}"
