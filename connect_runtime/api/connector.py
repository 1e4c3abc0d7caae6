"""The connector side of the plugin API (Kafka's ``org.apache.kafka.connect.connector``).

A connector instance runs on exactly one worker. It watches its external system, decides how work is
split (``task_configs``) and asks the runtime to recompute that split when the system changes
(``context.request_task_reconfiguration()``). It never moves data itself; its tasks do.

Threading contract: ``start``, ``task_configs``, ``validate`` and ``stop`` are called from the runtime's
connector thread, never concurrently with each other. ``stop`` must return promptly and release every
client and thread the connector opened.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Protocol

from connect_runtime.api.config import ConfigDef, ConfigValue
from connect_runtime.api.metrics_registry import MetricsRegistry
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import Task


class ConnectorContext(Protocol):
    """What the runtime offers a running connector."""

    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call ``task_configs`` again and restart tasks whose config changed."""
        ...

    def raise_error(self, error: BaseException) -> None:
        """Fail the connector: its status becomes FAILED with this error's trace."""
        ...

    def offset_storage_reader(self) -> OffsetStorageReader:
        """Stored source offsets of this connector (source connectors)."""
        ...

    @property
    def metrics_registry(self) -> MetricsRegistry:
        """Where the connector registers its own metrics (its herder's registry)."""
        ...


class ExactlyOnceSupport(enum.Enum):
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class Connector(ABC):
    """Base of all connectors. Subclasses must have a no-argument constructor.

    The runtime calls :meth:`initialize` before anything else, so ``context`` is set whenever
    ``start``, ``task_configs`` or ``stop`` run; code that drives a connector without a runtime (tests,
    benchmarks) must initialize it with a context of its own.
    """

    context: ConnectorContext

    def version(self) -> str:
        return "0.1.0"

    def initialize(self, context: ConnectorContext) -> None:
        """Called once before ``start``; keeps the context for later use."""
        self.context = context

    @abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Start with the connector's full (provider-resolved) config. May do blocking admin I/O."""

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The task implementation this connector's task configs are meant for."""

    def stored_task_class(self) -> str:
        """The ``task.class`` the runtime writes with this connector's task configs: the task class's
        dotted path. A connector whose stored task configs another implementation also starts names the
        class that implementation knows (MM2's, which Java MirrorMaker reads from the same configs topic);
        the runtime starts :meth:`task_class` for a ``task.class`` it cannot import."""
        task = self.task_class()
        return f"{task.__module__}.{task.__qualname__}"

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """At most ``max_tasks`` task configs. An empty list is allowed (zero tasks).

        May raise :class:`~connect_runtime.api.errors.RetriableError` when the answer is not known
        yet; the runtime then retries with backoff.
        """

    @abstractmethod
    def stop(self) -> None:
        """Stop and release resources. Called once; must not block for long."""

    @classmethod
    def config_def(cls) -> ConfigDef:
        """This connector's own keys (the runtime adds its base keys such as ``tasks.max``)."""
        return ConfigDef()

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        """Validate a config before it is stored; errors go into each ConfigValue's ``errors``."""
        return self.config_def().validate(config)


class SourceConnector(Connector):
    """A connector whose tasks read an external system and write Kafka records."""

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Whether this connector can run with exactly-once delivery given ``config``; None = unknown."""
        return None

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> bool:
        """Whether the tasks define their own transaction boundaries (``transaction.boundary=connector``,
        Connect's ``canDefineTransactionBoundaries``); the default, as in Connect, is that they cannot."""
        return False

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[str, tuple[SourceMap, Mapping[str, Any] | None]]
    ) -> bool:
        """Validate offsets a user wants to write (KIP-875) before the runtime writes them.

        ``offsets`` maps the canonical JSON of each partition to ``(partition, offset-or-None)``; None
        resets that partition. Raise :class:`~connect_runtime.api.errors.BadRequestError` to refuse.
        Return True if the connector understood and accepted them (False: the runtime writes them anyway).
        """
        return False
