"""Which work its last owner let go of cleanly: the leader's way to tell a restart from a crash.

The group protocol cannot say why a member is gone: a LeaveGroup and an expired session look the same
to the leader (a member id missing from the new generation). The status topic can. A worker that
stops cleanly stops its connectors and tasks first, and each stop writes UNASSIGNED (Java's
``onShutdown``, which Java workers write too) before the worker leaves the group; a worker that
crashed, was killed or lost its network leaves its statuses saying RUNNING (or PAUSED, FAILED). The
assignor holds released work for the returning worker and reassigns the rest at once (its invariant D).

Read lag only errs towards moving work: if the leader has not yet read a clean leaver's UNASSIGNED
records when it assigns, that work counts as crashed and moves at once, as it would after a crash.
"""

from __future__ import annotations

from connect_runtime.runtime.coordination.assignor import ConnectorsAndTasks
from connect_runtime.storage.status_store import KafkaStatusStore


def released_work(statuses: KafkaStatusStore, work: ConnectorsAndTasks) -> ConnectorsAndTasks:
    """The part of ``work`` its last owner stopped: latest status UNASSIGNED, not a stale write of an
    older generation (see :meth:`KafkaStatusStore.released_by_last_owner`)."""
    connectors = [c for c in work.connectors if statuses.released_by_last_owner(c)]
    tasks = [t for t in work.tasks if statuses.released_by_last_owner(t.connector, t.task)]
    return ConnectorsAndTasks.of(connectors, tasks)
