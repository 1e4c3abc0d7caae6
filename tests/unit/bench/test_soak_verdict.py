"""bench/soak.py's verdict on node 0's samples: a leak stays, a transient does not."""

from __future__ import annotations

from bench.soak import Sample, verdict

WORK = ("Source", "Source/1")


def samples(*levels: tuple[int, int]) -> list[Sample]:
    return [Sample(70.0, threads, fds, WORK) for threads, fds in levels]


def test_growth_that_stays_fails_and_a_transient_does_not() -> None:
    # the 2-hour run's case: +6 fds for two samples with one more client open, then the first level
    assert verdict(samples((80, 115), (83, 121), (83, 121), (79, 115)), lost=0, rss_tolerance_mib=16) == 0
    assert verdict(samples((80, 115), (83, 121), (83, 122), (84, 123)), lost=0, rss_tolerance_mib=16) == 1
    assert verdict(samples((80, 115), (80, 115), (86, 115)), lost=0, rss_tolerance_mib=16) == 1  # the last one


def test_other_work_is_not_compared_and_loss_or_rss_growth_fails() -> None:
    other = Sample(70.0, 100, 160, ("Checkpoint", "Source/0"))
    assert verdict([*samples((80, 115)), other, *samples((80, 116))], lost=0, rss_tolerance_mib=16) == 0
    assert verdict(samples((80, 115), (80, 115)), lost=1, rss_tolerance_mib=16) == 1
    fat = [Sample(70.0, 80, 115, WORK), Sample(71.0, 80, 115, WORK), Sample(90.0, 80, 115, WORK)]
    assert verdict(fat, lost=0, rss_tolerance_mib=16) == 1
