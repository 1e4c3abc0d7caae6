"""What a source task does with a record the target refuses (Connect's ``errors.tolerance``).

``none`` (the default): the task fails, with the producer's error in its trace, and nothing after the
record is committed. ``all``: the record is skipped; it is counted
(``connect_source_task_records_skipped``) and, with ``errors.log.enable``, logged with where it came
from; its key and value only with ``errors.log.include.messages`` (they may hold personal data).
Without ``errors.log.enable`` the first skip of a task is logged once, so that skipping is never
silent. A skipped record's offset is committed like any other (Java's KIP-779 behaviour).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.api.connector_config import (
    ERRORS_LOG_ENABLE,
    ERRORS_LOG_INCLUDE_MESSAGES,
    ERRORS_TOLERANCE,
)
from connect_runtime.api.errors import ConnectError
from connect_runtime.metrics import RecordErrors

logger = logging.getLogger(__name__)


def _flag(config: Mapping[str, str], key: str) -> bool:
    value = str(config.get(key, "false")).strip().lower()
    if value not in ("true", "false"):
        raise ConnectError(f"{key} must be true or false, got {config.get(key)!r}")
    return value == "true"


@dataclass(frozen=True, slots=True)
class ErrorPolicy:
    """The connector's ``errors.*`` keys as the task runtime applies them to produce failures."""

    tolerate: bool = False
    log_each: bool = False
    include_messages: bool = False

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ErrorPolicy:
        tolerance = str(config.get(ERRORS_TOLERANCE, "none")).strip().lower()
        if tolerance not in ("none", "all"):
            raise ConnectError(f"{ERRORS_TOLERANCE} must be 'none' or 'all', got {config.get(ERRORS_TOLERANCE)!r}")
        return cls(tolerance == "all", _flag(config, ERRORS_LOG_ENABLE), _flag(config, ERRORS_LOG_INCLUDE_MESSAGES))

    def tolerates(self, error: object) -> bool:
        """Whether this failure of one record may be skipped: never a fatal producer error, which fails
        every record after it too (skipping those would skip everything)."""
        return self.tolerate and not is_fatal(error)


def is_fatal(error: object) -> bool:
    """A librdkafka error (or a KafkaException carrying one) that leaves the producer unusable."""
    if isinstance(error, BaseException) and error.args:
        error = error.args[0]
    fatal = getattr(error, "fatal", None)
    return bool(fatal()) if callable(fatal) else False


class SkipReporter:
    """Counts and logs the records one task skipped under ``errors.tolerance=all``."""

    __slots__ = ("_counter", "_policy", "_task", "skipped")

    def __init__(self, policy: ErrorPolicy, task: str, counter: RecordErrors) -> None:
        self._policy = policy
        self._task = task
        self._counter = counter
        self.skipped = 0

    def skip(self, error: object, topic: str | None, partition: int | None, source: str,
             key: Any = None, value: Any = None, what: str = "the target refused") -> None:
        """One record the target (or the client) refused, or a transformation failed on, was skipped."""
        self.skipped += 1
        policy = self._policy
        self._counter.skip(policy.log_each)
        if policy.log_each:
            content = f", key={key!r}, value={value!r}" if policy.include_messages else ""
            logger.error("%s skipped a record for %s-%s (source %s) %s: %s%s",
                         self._task, topic, partition, source, what, error, content)
        elif self.skipped == 1:
            logger.warning("%s skipped a record for %s-%s (source %s) %s: %s (errors.tolerance"
                           "=all; further skips are only counted in connect_source_task_records_skipped, set "
                           "errors.log.enable=true to log each)", self._task, topic, partition, source, what,
                           error)
