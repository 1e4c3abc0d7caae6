"""Python plugins that are NOT registered (no entry point), for the code-policy tests (issue 27).

Importing this module leaves a mark: the file named by ``$CODE_PLUGINS_IMPORT_MARK`` (when set), so a
test can tell that a refused class name was never even imported, not only refused after the import.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from connect_runtime.api.records import SourceRecord
from connect_runtime.testing.sequence_source import SequenceSourceConnector
from mirror.client.replication_policy import DefaultReplicationPolicy
from mirror.filters import DefaultConfigPropertyFilter, DefaultGroupFilter, DefaultTopicFilter

_MARK = os.environ.get("CODE_PLUGINS_IMPORT_MARK")
if _MARK:
    Path(_MARK).write_text("imported\n")


class RenamingTransform:
    """Routes each record to ``<topic>.allowed``: what the operator-allowed test looks for."""

    def configure(self, configs: Mapping[str, str]) -> None:
        pass

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        return dataclasses.replace(record, topic=f"{record.topic}.allowed")

    def close(self) -> None:
        pass


class AlwaysTrue:
    def configure(self, configs: Mapping[str, str]) -> None:
        pass

    def test(self, record: SourceRecord) -> bool:
        return True

    def close(self) -> None:
        pass


class UnlistedConnector(SequenceSourceConnector):
    pass


class UnlistedPolicy(DefaultReplicationPolicy):
    pass


class UnlistedTopicFilter(DefaultTopicFilter):
    pass


class UnlistedGroupFilter(DefaultGroupFilter):
    pass


class UnlistedConfigPropertyFilter(DefaultConfigPropertyFilter):
    pass


def token(config: str) -> tuple[str, float]:
    """An OAUTHBEARER token callback's shape (never meant to be allowed in these tests)."""
    return config, 0.0
