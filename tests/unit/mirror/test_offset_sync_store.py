"""OffsetSyncStore: Kafka's OffsetSyncStoreTest golden examples plus property tests."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.checkpoint.offset_sync_store import SYNCS_PER_PARTITION, OffsetSyncStore
from mirror.client.models import OffsetSync, TopicPartition

TP = TopicPartition("topic1", 2)
MAX_LONG = 2**63 - 1


def sync(store: OffsetSyncStore, upstream: int, downstream: int, tp: TopicPartition = TP) -> OffsetSync:
    record = OffsetSync(tp, upstream, downstream)
    store.handle(record)
    return record


def started(must_read_to_end: bool = True) -> OffsetSyncStore:
    store = OffsetSyncStore()
    store.start_initial_load(must_read_to_end)
    store.finish_initial_load()
    return store


def assert_invariants(store: OffsetSyncStore, tp: TopicPartition = TP) -> None:
    """Invariants B and C for every pair i < j of distinct syncs (Kafka assertSparseSyncInvariant)."""
    syncs = store.syncs_for(tp)
    assert syncs is not None and len(syncs) == SYNCS_PER_PARTITION
    for j in range(SYNCS_PER_PARTITION):
        j_up = syncs[j].upstream_offset
        for i in range(j):
            i_up = syncs[i].upstream_offset
            if i_up == j_up:
                continue
            lower = j_up + (1 << max(i - 2, 0))
            if lower > MAX_LONG:  # overflows to negative in Java: not checked
                continue
            assert i_up >= lower, f"Invariant C({i},{j}): {i_up} < {lower}"
            upper = j_up + (1 << j) - (1 << i)
            if upper > MAX_LONG:
                continue
            assert i_up <= upper, f"Invariant B({i},{j}): {i_up} > {upper}"


def assert_sparse_sync(store: OffsetSyncStore, sync_offset: int, previous_offset: int) -> None:
    expected_before = -1 if previous_offset == -1 else previous_offset + 1
    assert store.translate_downstream(None, TP, sync_offset - 1) == expected_before
    assert store.translate_downstream(None, TP, sync_offset) == sync_offset
    assert store.translate_downstream(None, TP, sync_offset + 1) == sync_offset + 1
    assert store.translate_downstream(None, TP, sync_offset + 2) == sync_offset + 1


def distinct_count(store: OffsetSyncStore) -> int:
    syncs = store.syncs_for(TP)
    assert syncs is not None
    return 1 + sum(1 for i in range(1, len(syncs)) if syncs[i] is not syncs[i - 1])


# ------------------------------------------------------------------------------------------ golden examples


def test_offset_translation() -> None:
    store = started()
    sync(store, 100, 200)
    assert store.translate_downstream(None, TP, 150) == 201  # no dead reckoning
    sync(store, 150, 251)
    assert store.translate_downstream(None, TP, 150) == 251
    assert store.translate_downstream(None, TP, 5) == -1  # before any sync
    sync(store, 200, 10)  # downstream reset
    assert store.translate_downstream(None, TP, 200) == 10
    sync(store, 20, 20)  # upstream reset
    assert store.translate_downstream(None, TP, 20) == 20


def test_no_translation_before_the_initial_load_finishes() -> None:
    store = OffsetSyncStore()
    assert store.translate_downstream(None, TP, 0) is None
    store.start_initial_load(True)
    sync(store, 100, 200)
    assert not store.ready
    for offset in (0, 100, 200):
        assert store.translate_downstream(None, TP, offset) is None
    store.finish_initial_load()
    assert store.ready
    assert store.translate_downstream(None, TP, 0) == -1
    assert store.translate_downstream(None, TP, 100) == 200
    assert store.translate_downstream(None, TP, 200) == 201


def test_no_translation_without_a_sync_for_the_partition() -> None:
    store = started()
    assert store.translate_downstream(None, TP, 0) is None
    sync(store, 5, 5, TopicPartition("other", 0))
    assert store.translate_downstream(None, TP, 5) is None


def test_past_offset_translation_when_initialization_must_read_to_end() -> None:
    store = OffsetSyncStore()
    store.start_initial_load(True)
    for offset in range(0, 1001, 10):
        sync(store, offset, offset)
        assert_invariants(store)
    store.finish_initial_load()
    # Only the last startup sync survives the initial load.
    assert_sparse_sync(store, 1000, -1)
    for offset in range(1010, 10001, 10):
        sync(store, offset, offset)
        assert_invariants(store)
    # Invariant D: the last sync of the initial read is still the oldest one.
    assert_sparse_sync(store, 1000, -1)
    for sync_offset, previous in [
        (4840, 1000),
        (6760, 4840),
        (8680, 6760),
        (9160, 8680),
        (9640, 9160),
        (9880, 9640),
        (9940, 9880),
        (9970, 9940),
        (9990, 9970),
        (10000, 9990),
    ]:
        assert_sparse_sync(store, sync_offset, previous)
    assert store.translate_downstream(None, TP, 999) == -1
    assert store.translate_downstream(None, TP, 1000) == 1000
    assert store.translate_downstream(None, TP, 4839) == 1001
    assert store.translate_downstream(None, TP, 9989) == 9971
    # Rewinding upstream offsets clears all historical syncs.
    sync(store, 1500, 11000)
    assert_invariants(store)
    assert store.translate_downstream(None, TP, 1499) == -1
    assert store.translate_downstream(None, TP, 1500) == 11000
    assert store.translate_downstream(None, TP, 2000) == 11001


def test_past_offset_translation_without_initialization_read_to_end() -> None:
    store = OffsetSyncStore()
    store.start_initial_load(False)
    for offset in range(0, 1001, 10):
        sync(store, offset, offset)
        assert_invariants(store)
    store.finish_initial_load()
    assert_sparse_sync(store, 480, 0)
    assert_sparse_sync(store, 720, 480)
    assert_sparse_sync(store, 1000, 990)
    for offset in range(1000, 10001, 10):
        sync(store, offset, offset)
        assert_invariants(store)
    for sync_offset, previous in [
        (3840, 0),
        (7680, 3840),
        (8640, 7680),
        (9120, 8640),
        (9600, 9120),
        (9840, 9600),
        (9900, 9840),
        (9960, 9900),
        (9990, 9960),
        (10000, 9990),
    ]:
        assert_sparse_sync(store, sync_offset, previous)
    sync(store, 1500, 11000)
    assert_invariants(store)
    assert store.translate_downstream(None, TP, 1499) == -1
    assert store.translate_downstream(None, TP, 1500) == 11000
    assert store.translate_downstream(None, TP, 2000) == 11001


def test_first_sync_fills_all_slots_with_the_same_object() -> None:
    store = started()
    first = sync(store, 7, 9)
    syncs = store.syncs_for(TP)
    assert syncs is not None
    assert all(s is first for s in syncs)


def test_equal_valued_syncs_are_distinct_entries() -> None:
    # Identity, not value, decides whether two slots hold "the same" sync.
    store = started()
    a = sync(store, 0, 0)
    b = sync(store, 0, 0)
    syncs = store.syncs_for(TP)
    assert syncs is not None
    assert syncs[0] is b and syncs[0] is not a and a == b


def test_undecodable_records_are_skipped() -> None:
    store = started()
    assert store.handle_record(b"\x00", b"\x00") is None
    good = OffsetSync(TP, 3, 4)
    assert store.handle_record(good.key_bytes(), good.value_bytes()) == good
    assert store.translate_downstream(None, TP, 3) == 4


# ------------------------------------------------------------------------------ bounded expirations (Kafka)


def assert_bounded_expirations(first_offset: int, steps: list[int], maximum_expirations: int) -> None:
    store = started()
    sync(store, first_offset, first_offset)
    offset = first_offset
    last_count = 1
    for step in steps:
        offset += step
        assert offset <= MAX_LONG, "test is invalid, offset overflowed"
        sync(store, offset, offset)
        syncs = store.syncs_for(TP)
        assert syncs is not None
        assert syncs[0].upstream_offset == offset  # Invariant A
        assert syncs[-1].upstream_offset == first_offset  # Invariant D
        count = distinct_count(store)
        expired = last_count - count + 1
        assert expired <= maximum_expirations, f"expired {expired} syncs after {offset}"
        last_count = count


@pytest.mark.parametrize("first_offset", [0, 1, 7, 29])
def test_consistently_spaced_syncs_expire_at_most_one(first_offset: int) -> None:
    iterations = 100
    step = 1
    while step < MAX_LONG // iterations:
        assert_bounded_expirations(first_offset, [step] * iterations, 1)
        step = step * 2 + 1


def test_randomly_spaced_syncs_expire_a_bounded_number() -> None:
    rng = random.Random(0)
    iterations = 1 << 8
    for n in range(1, 64 - 10, 4):
        maximum_difference = 1 << n
        assert_bounded_expirations(
            0, [rng.randrange(0, maximum_difference) for _ in range(iterations)], n + 2
        )
        lag = 1 << 16
        assert_bounded_expirations(
            0, [rng.randrange(lag, lag + maximum_difference) for _ in range(iterations)], n + 2
        )


def test_dropped_syncs_spacing_expires_at_most_two() -> None:
    rng = random.Random(0)
    assert_bounded_expirations(0, [(2 if rng.random() < 0.5 else 1) * 100 for _ in range(2000)], 2)


# ------------------------------------------------------------------------------------------ property tests

# A replicated stream: upstream and downstream both strictly increase from sync to sync.
stream = st.lists(st.tuples(st.integers(1, 2**20), st.integers(1, 2**20)), min_size=1, max_size=80)
PROPERTY_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def feed(
    steps: list[tuple[int, int]], initial: int, must_read_to_end: bool, check_invariants: bool = False
) -> tuple[OffsetSyncStore, list[OffsetSync]]:
    store = OffsetSyncStore()
    store.start_initial_load(must_read_to_end)
    fed: list[OffsetSync] = []
    up, down = 0, 0
    for index, (up_step, down_step) in enumerate(steps):
        if index == initial:
            store.finish_initial_load()
        up += up_step
        down += down_step
        fed.append(sync(store, up, down))
        if check_invariants:
            assert_invariants(store)
    if not store.ready:
        store.finish_initial_load()
    return store, fed


def probes(fed: list[OffsetSync]) -> list[int]:
    points = {0, fed[-1].upstream_offset + 1, fed[-1].upstream_offset + 1000}
    for s in fed:
        points |= {s.upstream_offset - 1, s.upstream_offset, s.upstream_offset + 1}
    return sorted(p for p in points if p >= 0)


@PROPERTY_SETTINGS
@given(stream, st.integers(0, 80), st.booleans())
def test_invariants_b_and_c_hold_after_every_update(
    steps: list[tuple[int, int]], initial: int, must_read_to_end: bool
) -> None:
    feed(steps, initial, must_read_to_end, check_invariants=True)


@PROPERTY_SETTINGS
@given(stream, st.integers(0, 80), st.booleans())
def test_never_translates_ahead_of_replicated_data(
    steps: list[tuple[int, int]], initial: int, must_read_to_end: bool
) -> None:
    store, fed = feed(steps, initial, must_read_to_end)
    for g in probes(fed):
        translated = store.translate_downstream("g", TP, g)
        assert translated is not None
        if translated == -1:
            continue
        later = [s for s in fed if s.upstream_offset >= g]
        if later:
            # The first replicated record at or after g landed at later[0].downstream: never skip past it.
            assert translated <= later[0].downstream_offset
        else:
            assert translated <= fed[-1].downstream_offset + 1


@PROPERTY_SETTINGS
@given(stream, st.integers(0, 80), st.booleans())
def test_translation_is_monotonic_in_upstream_offset_for_a_fixed_state(
    steps: list[tuple[int, int]], initial: int, must_read_to_end: bool
) -> None:
    store, fed = feed(steps, initial, must_read_to_end)
    results = [store.translate_downstream("g", TP, g) for g in probes(fed)]
    assert all(r is not None for r in results)
    assert results == sorted(results)  # type: ignore[type-var]


@PROPERTY_SETTINGS
@given(stream, st.integers(1, 2**20), st.integers(0, 2**20))
def test_upstream_rewind_clears_history(steps: list[tuple[int, int]], back: int, down: int) -> None:
    store, fed = feed(steps, 0, False)
    latest = fed[-1].upstream_offset
    rewind_to = max(0, latest - back)
    if rewind_to == latest:
        return  # not a rewind
    rewind = sync(store, rewind_to, down)
    syncs = store.syncs_for(TP)
    assert syncs is not None
    assert all(s is rewind for s in syncs)
    assert store.translate_downstream("g", TP, rewind_to) == down
    assert store.translate_downstream("g", TP, rewind_to + 5) == down + 1
    if rewind_to > 0:
        assert store.translate_downstream("g", TP, rewind_to - 1) == -1


@PROPERTY_SETTINGS
@given(stream, st.integers(1, 80))
def test_must_read_to_end_keeps_only_the_last_startup_sync(
    steps: list[tuple[int, int]], initial: int
) -> None:
    store, fed = feed(steps, initial, True)
    last_startup = fed[min(initial, len(fed)) - 1]
    syncs = store.syncs_for(TP)
    assert syncs is not None
    assert syncs[-1] is last_startup  # Invariant D
    assert store.translate_downstream("g", TP, last_startup.upstream_offset - 1) == -1


@pytest.mark.parametrize("first_offset", [2**62, 2**62 + 12345, MAX_LONG - 2**40])
def test_bounds_that_overflow_java_long_keep_the_oldest_sync(first_offset: int) -> None:
    # Near Long.MAX_VALUE Invariant B's bound overflows to negative and counts as satisfied, so the oldest
    # sync is never pushed out by arithmetic overflow (Invariant D).
    step = max(1, (MAX_LONG - first_offset) // 200)
    assert_bounded_expirations(first_offset, [step] * 150, 2)
    store = started()
    first = sync(store, first_offset, 0)
    for k in range(1, 100):
        sync(store, first_offset + k * step, k)
        assert_invariants(store)
    syncs = store.syncs_for(TP)
    assert syncs is not None and syncs[-1] is first


def test_a_jump_beyond_2_pow_61_reaches_the_last_slot_without_evicting_it() -> None:
    # Every slot up to 62 is too old for the new sync, so the update reaches slot 63, where Java's bound
    # S[63].up + 2^63 - 2^62 overflows: Invariant B then counts as satisfied and slot 63 is kept.
    store = started()
    first = sync(store, 2**62, 0)
    sync(store, 2**62 + 2**61 + 2**60, 1)
    syncs = store.syncs_for(TP)
    assert syncs is not None and syncs[-1] is first
    assert store.translate_downstream(None, TP, 2**62) == 0
