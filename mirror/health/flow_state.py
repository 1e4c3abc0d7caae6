"""What the health probe has read so far for one flow, and how a heartbeat read becomes a latency sample.

Reads are incremental: the probe keeps, per flow, its positions in the internal topics and the newest
facts found there (heartbeats, checkpoints, Connect offsets, offset syncs, the offset map, stalled
hand-offs), so the background monitor only reads what is new at each refresh. The latency rule (a
sample is an upper bound whose resolution is the time since the previous read; see
:mod:`mirror.health.probe`) lives here with the state it updates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mirror.client.offset_map import OffsetMap
from mirror.health.kafka_io import TP

#: Latency samples whose arrival time is known less precisely than this are dropped.
LATENCY_RESOLUTION_S = 0.5


@dataclass
class FlowState:
    """What the probe has read so far for one flow (positions and the newest facts)."""

    target_positions: dict[TP, int] = field(default_factory=dict)
    source_positions: dict[TP, int] = field(default_factory=dict)
    primed: bool = False
    last_heartbeat_read: float | None = None
    newest_replicated_ms: int | None = None
    newest_emitted_ms: int | None = None
    latency_s: float | None = None
    latency_sampled: int = 0
    #: the finest sample coarser than LATENCY_RESOLUTION_S since the last kept one: (resolution, latency)
    coarse_latency: tuple[float, float] | None = None
    #: (group, remote topic, partition) -> (upstream offset, downstream offset, record timestamp ms)
    checkpoints: dict[tuple[str, str, int], tuple[int, int, int | None]] = field(default_factory=dict)
    #: (source topic, partition) -> last replicated upstream offset, from the Connect offsets topic
    connect_offsets: dict[TP, int] = field(default_factory=dict)
    #: (source topic, partition) -> newest offset sync (upstream, downstream)
    syncs: dict[TP, tuple[int, int]] = field(default_factory=dict)
    offset_map: OffsetMap = field(default_factory=OffsetMap)
    #: connector -> why its node cannot hand its task configs to the leader (from the status topic)
    stalled: dict[str, str] = field(default_factory=dict)
    #: the target's topics (name -> partitions) as the last pass found them: the latency watch between
    #: passes reads the heartbeats five times a second, and asking for every topic's metadata each time
    #: cost a copy of 100-byte records 15% of its rate (bench/results.md, 2026-11-26 23:49)
    target_topics: dict[str, int] | None = None


def sample_latency(state: FlowState, newest_new_ms: int, read_at: float) -> None:
    """A read found replicated heartbeats up to ``newest_new_ms`` that the previous read had not."""
    previous = state.last_heartbeat_read
    if state.primed and previous is not None:
        resolution, latency = read_at - previous, max(0.0, read_at - newest_new_ms / 1000)
        if resolution <= LATENCY_RESOLUTION_S:
            state.latency_s = latency
            state.latency_sampled += 1
            state.coarse_latency = None
        elif state.coarse_latency is None or resolution < state.coarse_latency[0]:
            state.coarse_latency = (resolution, latency)
    state.newest_replicated_ms = max(state.newest_replicated_ms or newest_new_ms, newest_new_ms)


def settle_latency(state: FlowState) -> None:
    """Keep the finest coarse sample taken since the last kept one (no fine one came after it).

    Called at the end of a latency watch and before each full report: on a loaded machine a watch may
    not fit between two passes, and each pass's own read is a second or more after the previous one.
    """
    if state.coarse_latency is not None:
        state.latency_s = state.coarse_latency[1]
        state.latency_sampled += 1
        state.coarse_latency = None
