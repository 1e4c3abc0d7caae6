"""What a connector author imports, and nothing else (Kafka's ``connect/api``). Pure Python."""

from connect_runtime.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigValue,
    Importance,
    Password,
    Type,
    is_sensitive_key,
    redact,
)
from connect_runtime.api.connector import Connector, ConnectorContext, ExactlyOnceSupport, SourceConnector
from connect_runtime.api.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConfigError,
    ConflictError,
    ConnectError,
    DataError,
    NotAssignedError,
    NotFoundError,
    NotLeaderError,
    RequestTargetError,
    RetriableError,
)
from connect_runtime.api.metrics_registry import MetricsRegistry
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.api.records import Headers, RecordMetadata, SourceMap, SourceRecord
from connect_runtime.api.task import SourceTask, SourceTaskContext, Task

__all__ = [
    "NO_DEFAULT",
    "AlreadyExistsError",
    "BadRequestError",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigValue",
    "ConflictError",
    "ConnectError",
    "Connector",
    "ConnectorContext",
    "DataError",
    "ExactlyOnceSupport",
    "Headers",
    "Importance",
    "MetricsRegistry",
    "NotAssignedError",
    "NotFoundError",
    "NotLeaderError",
    "OffsetStorageReader",
    "Password",
    "RecordMetadata",
    "RequestTargetError",
    "RetriableError",
    "SourceConnector",
    "SourceMap",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "Type",
    "is_sensitive_key",
    "redact",
]
