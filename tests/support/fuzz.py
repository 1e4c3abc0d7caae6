"""How many cases each fuzz test generates: a few hundred in CI, >= 10,000 each when a human asks.

``HYPOTHESIS_PROFILE=fuzz-long scripts/test tests/fuzz`` runs the long tier (10,000 cases per fuzz test,
about a quarter of an hour on 3 workers); the default (CI) runs :data:`CI_EXAMPLES` per test, a few
hundred over the tier. ``MIRROR_FUZZ_EXAMPLES=N`` sets any other number. The settings are applied per
test (not as a global Hypothesis profile), so the property tests elsewhere keep their own.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

CI_EXAMPLES = 120
LONG_EXAMPLES = 10_000


def examples() -> int:
    if os.environ.get("MIRROR_FUZZ_EXAMPLES"):
        return int(os.environ["MIRROR_FUZZ_EXAMPLES"])
    return LONG_EXAMPLES if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz-long" else CI_EXAMPLES


def timeout_s() -> int:
    """pytest-timeout for one fuzz test: the suite's 300 s in CI, none for a longer run (10,000 REST
    requests over HTTP take longer than that on a loaded 2-core machine)."""
    return 300 if examples() <= CI_EXAMPLES else 0


def fuzz_settings(scale: float = 1.0) -> settings:
    """Settings for one fuzz test: ``scale`` x the tier's example count, no deadline (I/O, loaded CI)."""
    return settings(max_examples=max(1, int(examples() * scale)), deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large, HealthCheck.filter_too_much])
