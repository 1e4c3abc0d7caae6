"""The settings of one source task, fixed when the worker creates it, in seconds.

The worker builds one :class:`SourceTaskSettings` per task from its own config (the offset flush
interval and timeout, the graceful-shutdown budget, the outstanding-records cap) and the connector's
(``errors.*``, ``transaction.boundary``), converting milliseconds once, there. The task and its loops
read this object; nothing on the task's path converts units or is reconfigured while it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from connect_runtime.api.errors import ConnectError
from connect_runtime.runtime.task.error_policy import ErrorPolicy

DEFAULT_MAX_OUTSTANDING_RECORDS = 100_000


@dataclass(frozen=True, slots=True)
class TransactionSettings:
    """Exactly-once (KIP-618): the task's transactional id and where its transactions end."""

    transactional_id: str
    #: ``poll`` (a transaction per poll batch) or ``interval`` (every ``offset_flush_interval_s``).
    boundary: str


@dataclass(frozen=True, slots=True)
class SourceTaskSettings:
    """What a :class:`~connect_runtime.runtime.task.worker_source_task.WorkerSourceTask` is configured with."""

    worker_id: str
    #: How often acknowledged offsets are committed (0: after every loop step; exactly-once ``poll``).
    offset_flush_interval_s: float = 60.0
    #: How long one offset commit may take.
    offset_flush_timeout_s: float = 5.0
    #: How long a stopping task may flush its producer, counted from the stop request.
    shutdown_timeout_s: float = 5.0
    #: Records tracked until acknowledged; at the cap the task stops polling and serves deliveries.
    max_outstanding_records: int = DEFAULT_MAX_OUTSTANDING_RECORDS
    #: The connector's ``errors.*`` keys.
    error_policy: ErrorPolicy = field(default_factory=ErrorPolicy)
    #: The flow put in the task thread's log lines (several herders may share one process).
    log_flow: str | None = None
    #: Set when the task runs exactly-once (its records and offsets commit in transactions).
    transactions: TransactionSettings | None = None

    def __post_init__(self) -> None:
        if self.max_outstanding_records < 1:
            raise ConnectError(f"max outstanding records must be >= 1, got {self.max_outstanding_records}")
