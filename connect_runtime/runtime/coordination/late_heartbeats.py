"""Late heartbeats named in the log, so that a membership lost under load says why.

The broker ends a member's session ``session.timeout.ms`` (S) after the member's last request arrived;
kafka-python's IO thread sends a heartbeat ``heartbeat.interval.ms`` (H) after it sent the previous one.
That thread is a Python thread of the node's process. When other threads hold the GIL for long (a
/metrics scrape of thousands of partitions, busy task threads, a large status report) or the process gets
no CPU, the heartbeat goes out late, or its answer is read late, and the member loses its session on the
broker or its lease here (:mod:`.session_lease`), with nothing in the log before the line that stops its
work. :class:`LateHeartbeats` is told every confirmation the membership gets and logs one WARNING when a
heartbeat is confirmed more than S/2 after it was due, which is past the point where a little more delay
loses the session: how late, how much of it before the heartbeat was sent and how much waiting for its
answer, so the cause can be told apart (a thread that did not run, a coordinator that was not known or
answered slowly).

An episode of late heartbeats is that one WARNING, then one INFO line once a heartbeat is on time again,
with how many were late and the worst: a node under load for minutes gets two lines, not one every
heartbeat. The cost is a clock reading and a few comparisons per confirmation, once every H.

JoinGroup + SyncGroup exchanges pause heartbeats by design: a confirmation is judged against the previous
one only when no exchange came in between, else against the end of that exchange (kafka-python restarts
its heartbeat timer there). Confirmations during an exchange (its SyncGroup's) are not judged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)


class LateHeartbeats:
    """One member's late-heartbeat watch. Called on kafka-python's IO thread only (both events come from
    there), so it needs no lock."""

    def __init__(self, group_id: str, session_timeout_s: float, heartbeat_interval_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.group_id = group_id
        self.session_timeout_s = session_timeout_s
        self.heartbeat_interval_s = heartbeat_interval_s
        #: A confirmation later than this after its heartbeat was due is late.
        self.threshold_s = session_timeout_s / 2
        self._clock = clock
        #: When the interval before the next heartbeat began: the send time of the last confirmed
        #: heartbeat, or the end of the last join (None: nothing to judge against yet).
        self._since: float | None = None
        self._joining = False
        #: The episode in progress: late confirmations so far and the worst of them (seconds late).
        self._late = 0
        self._worst_s = 0.0

    def join_in_flight(self, sent_at: float | None) -> None:
        """A JoinGroup was sent (heartbeats pause) or, with None, the exchange ended (they resume)."""
        self._joining = sent_at is not None
        self._since = None if self._joining else self._clock()

    def confirmed(self, sent_at: float) -> None:
        """The broker answered, as to a member, a request sent at ``sent_at`` (monotonic time)."""
        if self._joining:
            return
        since, self._since = self._since, sent_at if self._since is None else max(self._since, sent_at)
        if since is None:
            return
        now = self._clock()
        due = since + self.heartbeat_interval_s
        late_s = now - due
        if late_s <= self.threshold_s:
            if self._late:
                logger.info("Group %s: heartbeats on time again after %d late one(s), the worst %.1f s late",
                            self.group_id, self._late, self._worst_s)
                self._late, self._worst_s = 0, 0.0
            return
        self._late += 1
        self._worst_s = max(self._worst_s, late_s)
        if self._late > 1:
            return
        logger.warning(
            "Group %s: a heartbeat was confirmed %.1f s late (sent %.1f s after it was due, answered %.1f s after "
            "it was sent; heartbeat.interval.ms %d, session.timeout.ms %d): the broker ends this worker's "
            "membership once no request arrives for a session. A heartbeat sent late means kafka-python's IO "
            "thread did not run in time (other threads of this process holding the GIL, e.g. busy tasks or a "
            "large /metrics scrape, or no CPU) or had no coordinator to send to; one answered late means a slow "
            "coordinator or network, or the same thread starved", self.group_id, late_s,
            max(0.0, sent_at - due), now - sent_at, round(self.heartbeat_interval_s * 1000),
            round(self.session_timeout_s * 1000))
