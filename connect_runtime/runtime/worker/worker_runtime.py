"""What a herder needs from :class:`connect_runtime.runtime.worker.worker.Worker`: the seam that lets the
herder be tested with a recording fake instead of real connectors, tasks and Kafka clients."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from connect_runtime.api.records import SourceMap
from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.runtime.herder import TaskOffsetCommit


class WorkerRuntime(Protocol):
    """Starts, stops and moves connectors and tasks on this worker (called on the tick thread, but
    :meth:`commit_task_offsets`, which waits on the tasks and is called from a REST thread)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def start_connector(self, name: str, config: Mapping[str, str], target_state: TargetState,
                        on_reconfigure: Callable[[str], None]) -> bool: ...

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]: ...

    def stop_connector(self, name: str) -> None: ...

    def start_task(self, task: ConnectorTaskId, connector_config: Mapping[str, str],
                   task_config: Mapping[str, str], target_state: TargetState,
                   post_producer_check: Callable[[], None] | None = None) -> bool: ...

    def stop_tasks(self, ids: Sequence[ConnectorTaskId], timeout_s: float) -> None: ...

    def set_target_state(self, name: str, state: TargetState) -> None: ...

    def modify_connector_offsets(self, name: str, config: Mapping[str, str],
                                 offsets: Sequence[tuple[SourceMap, Mapping[str, Any] | None]] | None,
                                 fence: Callable[[], None] | None = None) -> None: ...

    def commit_task_offsets(self, name: str, timeout_s: float) -> list[TaskOffsetCommit]: ...
