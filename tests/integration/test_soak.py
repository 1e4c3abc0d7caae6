"""The soak (bench/soak.py) as a test: 10 minutes of the five faults, nothing lost, node 0 not growing.

Deselected from the parallel tiers (``-m "not soak"`` in pyproject.toml's addopts); `scripts/test` without
arguments (the README's test command, which CI runs) runs it alone afterwards: it takes ~12 minutes and three
node processes. Run it with ``scripts/test -m soak tests/integration/test_soak.py -n 0 -s``. What it checks
and why the comparison is per work: bench/soak.py's docstring; the recorded runs: bench/results.md.
"""

from __future__ import annotations

import pytest

from bench import soak

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.soak]


@pytest.mark.flaky(reruns=0)  # a 12-minute run is not retried
@pytest.mark.timeout(1500)
def test_ten_minutes_of_faults_lose_nothing_and_leave_node_0_where_it_was() -> None:
    assert soak.main(["--minutes", "10", "--event-every", "60"]) == 0, "see the table and verdict printed above"
