"""The attribution of a fleet's duplicates to Java MirrorMaker's own exactly-once defect
(tests/kafka/java_own_duplicates.py), on forensics data shaped as tests/kafka/duplicate_forensics.py makes it: a
run is excused only when a Java node held the partition at both copies, no committed offset covers the first copy,
and a Java node logged a flush error before the second copy."""

from __future__ import annotations

from typing import Any

from tests.kafka.java_own_duplicates import LoggedError, attribute

JAVA, OURS = "127.0.0.1:8083/A->B", "127.0.0.1:9093"
FLUSH = [LoggedError(10_500.0, "java-0.log: [2026-11-29 01:00:10,500] ERROR WorkerSourceTask{id="
                               "MirrorSourceConnector-0} Failed to flush offsets and/or records for task "
                               "MirrorSourceConnector-0"),
         LoggedError(10_400.0, "java-0.log: [2026-11-29 01:00:10,400] ERROR Invalid call to OffsetStorageWriter "
                               "beginFlush() while already flushing")]
OTHER_ERROR = [LoggedError(10_500.0, "java-0.log: [2026-11-29 01:00:10,500] ERROR Graceful stop of task "
                                     "MirrorSourceConnector-0 failed.")]


def _run(first_worker: str | None = JAVA, second_worker: str | None = JAVA) -> dict[str, Any]:
    """175 records of partition 0 (source offsets 1000..1174) first at 10 s, again at 30 s by an instance of the
    task that started at 25 s."""
    return {"partition": 0, "step": 1, "first_sequence": 1000, "last_sequence": 1174, "count": 175,
            "first_copy": {"offsets": [990, 1164], "arrived_ms": [10_000.0, 10_300.0],
                           "held_by": {"generation": 3, "task": 0, "worker_id": first_worker,
                                       "running_since_ms": 1_000.0}},
            "second_copy": {"offsets": [5000, 5174], "arrived_ms": [30_000.0, 30_200.0],
                            "held_by": {"generation": 4, "task": 0, "worker_id": second_worker,
                                        "running_since_ms": 25_000.0}}}


def _offset(offset: int, at_ms: float, committed: bool = True) -> dict[str, Any]:
    return {"at": "", "at_ms": at_ms, "position": f"7@{int(at_ms)}", "offset": offset, "committed": committed}


#: committed before the first copy, below it (where the second copy started from), and the second copy's own
OFFSETS = [_offset(999, 9_000.0), _offset(1174, 29_900.0), _offset(1300, 31_000.0)]


def _is_java(worker_id: str | None) -> bool:
    return worker_id == JAVA


def test_a_java_only_run_without_committed_offsets_and_with_the_flush_error_is_java_own() -> None:
    attribution = attribute(_run(), OFFSETS, _is_java, FLUSH + OTHER_ERROR)
    assert attribution.java_own
    assert attribution.count == 175
    assert set(attribution.flush_errors) == {e.line for e in FLUSH}  # the evidence, not the other error
    assert "Java's own, excused" in attribution.line()


def test_our_worker_at_either_copy_is_never_excused() -> None:
    for first, second in ((OURS, JAVA), (JAVA, OURS), (OURS, OURS), (None, JAVA), (JAVA, None)):
        attribution = attribute(_run(first, second), OFFSETS, _is_java, FLUSH)
        assert not attribution.java_own, (first, second)
        assert attribution.flush_errors == ()


def test_a_committed_offset_covering_the_first_copy_is_not_excused() -> None:
    # in the first copy's own transaction (written just before its records arrive), or after it
    for covering in (_offset(1050, 10_200.0), _offset(1174, 10_250.0), _offset(1500, 20_000.0)):
        attribution = attribute(_run(), [*OFFSETS, covering], _is_java, FLUSH)
        assert not attribution.java_own, covering
    # an aborted transaction's offset record covers nothing
    assert attribute(_run(), [*OFFSETS, _offset(1174, 10_250.0, committed=False)], _is_java, FLUSH).java_own


def test_without_the_flush_error_before_the_second_copy_it_is_not_excused() -> None:
    assert not attribute(_run(), OFFSETS, _is_java, []).java_own
    assert not attribute(_run(), OFFSETS, _is_java, OTHER_ERROR).java_own
    late = [LoggedError(30_100.0, e.line) for e in FLUSH]
    assert not attribute(_run(), OFFSETS, _is_java, late).java_own


def test_a_second_copy_by_an_instance_not_started_after_the_first_copy_is_not_excused() -> None:
    for started in (None, 5_000.0):
        run = _run()
        run["second_copy"]["held_by"]["running_since_ms"] = started
        assert not attribute(run, OFFSETS, _is_java, FLUSH).java_own, started
