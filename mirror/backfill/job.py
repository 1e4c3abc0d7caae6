"""The Spark side: one Spark task per chunk, chunks of a partition in consecutive waves.

pyspark is imported here only (lazily by the CLI), so ``mirror run`` never needs it. The job ships
:class:`~mirror.backfill.copier.ChunkSpec` values (plain data) and runs
:func:`~mirror.backfill.copier.copy_chunk` in the executors' Python workers; Spark's Kafka data source is
not used (it needs a Maven artifact and adds nothing here).

Spark's own logging is quiet by default: a log4j2 configuration at ERROR level is handed to the driver
and executor JVMs, and the console progress bar is off (the backfill shows its own). ``verbose=True``
keeps Spark's defaults. Speculative execution is forced off: two attempts of one chunk writing at the
same time would duplicate more than one batch.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mirror.backfill.copier import ChunkResult, ChunkSpec, copy_chunk

logger = logging.getLogger(__name__)

_QUIET_LOG4J2 = """\
# pyspark counts as a shell: Spark then announces on stderr its shell logger's level when it differs
# from the root's, so the org.* loggers (the shell logger is one) are set to the root level explicitly.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.org.name = org
logger.org.level = error
logger.io.name = io
logger.io.level = error
logger.com.name = com
logger.com.level = error
"""


@contextmanager
def spark_context(master: str, *, app_name: str = "mirror-backfill", verbose: bool = False,
                  extra_conf: dict[str, str] | None = None) -> Iterator[Any]:
    """A SparkContext on ``master`` (any Spark master URL), stopped on exit."""
    from pyspark import SparkConf, SparkContext

    # Executors run the same interpreter as this driver, so they import the same `mirror` package.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = (SparkConf().setMaster(master).setAppName(app_name)
            .set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
            .set("spark.speculation", "false").set("spark.task.maxFailures", "4")
            .set("spark.python.worker.reuse", "true"))
    log_dir: tempfile.TemporaryDirectory[str] | None = None
    if not verbose:
        log_dir = tempfile.TemporaryDirectory(prefix="mirror-backfill-log4j")
        path = Path(log_dir.name) / "log4j2.properties"
        path.write_text(_QUIET_LOG4J2)
        option = f"-Dlog4j2.configurationFile=file:{path}"
        conf.set("spark.driver.extraJavaOptions", option).set("spark.executor.extraJavaOptions", option)
    for key, value in (extra_conf or {}).items():
        conf.set(key, value)
    began = time.monotonic()
    context = SparkContext.getOrCreate(conf)
    logger.info("Spark context on %s started in %.1fs", master, time.monotonic() - began)
    if not verbose:
        context.setLogLevel("ERROR")
    try:
        yield context
    finally:
        context.stop()
        if log_dir is not None:
            log_dir.cleanup()


class BackgroundSpark:
    """A Spark context started in a background thread, so the JVM starts while the backfill plans."""

    def __init__(self, master: str, *, verbose: bool = False, extra_conf: dict[str, str] | None = None) -> None:
        self._manager = spark_context(master, verbose=verbose, extra_conf=extra_conf)
        self._context: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="spark-start", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self._context = self._manager.__enter__()
        except BaseException as exc:  # reported by context()
            self._error = exc

    def context(self, timeout_s: float = 300.0) -> Any:
        self._thread.join(timeout_s)
        if self._error is not None:
            raise self._error
        if self._context is None:
            raise TimeoutError(f"the Spark context did not start within {timeout_s:g}s")
        return self._context

    def close(self) -> None:
        self._thread.join(300)
        if self._context is not None:
            self._context = None
            self._manager.__exit__(None, None, None)


def run_waves(context: Any, waves: Sequence[Sequence[ChunkSpec]],
              on_wave_done: Callable[[list[ChunkResult]], None] | None = None) -> list[ChunkResult]:
    """Run each wave as one Spark job (one task per chunk); a wave starts after the previous one."""
    results: list[ChunkResult] = []
    for number, wave in enumerate(waves):
        if not wave:
            continue
        context.setJobDescription(f"backfill wave {number + 1}/{len(waves)}: {len(wave)} chunks")
        rdd = context.parallelize(list(wave), len(wave))
        wave_results: list[ChunkResult] = rdd.map(copy_chunk).collect()
        results.extend(wave_results)
        if on_wave_done is not None:
            on_wave_done(wave_results)
    return results
