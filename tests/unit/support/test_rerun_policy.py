"""The suite's rerun and skip policy (tests/conftest.py), run on small test files with pytester.

A failing loss assertion is never retried; a broker that did not start is, once, and the rerun is
printed with its first failure; a blind ``flaky`` marker is refused; under CI a skip is a failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[3]

CONFTEST = """
from tests.conftest import (pytest_collection_modifyitems, pytest_make_collect_report,  # noqa: F401
                            pytest_runtest_makereport)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    integration: x\n")
    return pytester


def test_a_failing_loss_assertion_is_not_retried(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_loss="""
        import pytest
        pytestmark = pytest.mark.integration

        def test_nothing_lost():
            lost = 3  # as a chaos or exactly-once test finds it in a bad run
            assert lost == 0, "LOST RECORDS"
    """)
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-rR", "--rerun-show-tracebacks")
    assert result.parseoutcomes() == {"failed": 1}  # no "rerun"
    assert "RERUN" not in result.stdout.str()


def test_a_broker_that_did_not_start_is_rerun_once_and_the_rerun_is_printed(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_start="""
        import pytest
        from pathlib import Path
        from mirror.local.broker import BrokerStartError
        pytestmark = pytest.mark.integration

        def test_needs_a_broker(tmp_path_factory):
            marker = Path(str(tmp_path_factory.getbasetemp())).parent / "first-attempt-done"
            if not marker.exists():
                marker.touch()
                raise BrokerStartError("broker a did not start within 30s")
    """)
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-rR", "--rerun-show-tracebacks")
    assert result.parseoutcomes() == {"passed": 1, "rerun": 1}
    result.stdout.fnmatch_lines(["*rerun test summary info*", "*BrokerStartError: broker a did not start*"])


def test_a_flaky_marker_without_only_rerun_is_refused(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_blind="""
        import pytest

        @pytest.mark.flaky(reruns=2)
        def test_sometimes():
            pass
    """)
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*a flaky marker without only_rerun reruns blindly*"])


def test_under_ci_every_skip_is_a_failure(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    suite.makepyfile(test_skips="""
        import pytest

        def test_skipped():
            pytest.skip("no chromium")

        @pytest.mark.xfail(reason="known", strict=True)
        def test_expected_failure():
            assert False
    """)
    suite.makepyfile(test_module_skip="""
        import pytest
        pytest.skip("no java", allow_module_level=True)
    """)
    local = suite.runpytest_subprocess("-p", "no:cacheprovider")
    local.assert_outcomes(skipped=2, xfailed=1)
    monkeypatch.setenv("CI", "true")
    ci = suite.runpytest_subprocess("-p", "no:cacheprovider", "test_skips.py")
    ci.assert_outcomes(failed=1, xfailed=1)  # a strict xfail is not a skip
    ci.stdout.fnmatch_lines(["*skipped under CI (every skip is a failure there): *no chromium*"])
    module = suite.runpytest_subprocess("-p", "no:cacheprovider", "test_module_skip.py")
    module.assert_outcomes(errors=1)
    module.stdout.fnmatch_lines(["*skipped under CI (every skip is a failure there): *no java*"])
