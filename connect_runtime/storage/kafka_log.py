"""KafkaBasedLog: a compacted topic used as a replicated log of key/value records (Connect's util).

The config, status and offsets stores of a Connect cluster are each one KafkaBasedLog. On ``start`` the
topic is created if missing (compacted, with the configured partitions and replication factor), then
read from the beginning to its end before ``start`` returns, then followed by a background thread that
hands every record to the consumer callback, in log order per partition.

INTERFACE OWNED BY THE STORAGE HELPER: being implemented now; signatures are the contract.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


ConsumedCallback = Callable[[LogRecord], None]
#: Called once the write is acknowledged (error None) or failed (error set).
WriteCallback = Callable[[Exception | None, LogRecord | None], None]


class KafkaBasedLog:
    """A compacted topic read to the end at start and followed afterwards.

    ``producer_config`` / ``consumer_config`` / ``admin_config`` are librdkafka configs (the factory in
    ``connect_runtime.clients`` builds them from worker properties). ``partitions`` and
    ``replication_factor`` apply when the topic has to be created. ``consumed`` runs on the log's own
    thread for every record read, including during the initial read.
    """

    def __init__(self, topic: str, *, producer_config: Mapping[str, str], consumer_config: Mapping[str, str],
                 admin_config: Mapping[str, str], consumed: ConsumedCallback, partitions: int = 1,
                 replication_factor: int = 3, topic_config: Mapping[str, str] | None = None,
                 transactional_id: str | None = None) -> None:
        raise NotImplementedError

    def start(self, timeout_s: float = 120.0) -> None:
        """Create the topic if needed, read it to the end, then follow it. Raises ConnectError."""
        raise NotImplementedError

    def stop(self) -> None:
        """Flush pending writes, stop following, close clients."""
        raise NotImplementedError

    def send(self, key: bytes | None, value: bytes | None, callback: WriteCallback | None = None,
             partition: int | None = None) -> None:
        """Write asynchronously; ``callback`` runs once acknowledged or failed."""
        raise NotImplementedError

    def send_sync(self, key: bytes | None, value: bytes | None, timeout_s: float = 30.0,
                  partition: int | None = None) -> LogRecord:
        """Write and wait for the acknowledgement. Raises ConnectError on failure."""
        raise NotImplementedError

    def flush(self, timeout_s: float = 30.0) -> None:
        raise NotImplementedError

    def read_to_end(self, timeout_s: float = 30.0) -> None:
        """Block until every record written to the topic before this call has been consumed."""
        raise NotImplementedError
