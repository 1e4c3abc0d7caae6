"""The releases of the Kafka client libraries this package is tested with, checked when it is imported.

Everything that talks to Kafka goes through this package, as Java's Connect goes through kafka-clients:
confluent-kafka (librdkafka) for producers, consumers and admin clients, kafka-python for Connect's group
membership (librdkafka has no custom group protocol). Both are used only through what their tested
releases offer, so a release outside the ranges below fails at import with one line naming the installed
release, the supported range and the command that installs a supported one, rather than deep inside a
rebalance or a produce call. pyproject.toml pins the same ranges (a unit test keeps them equal), and CI
runs the unit tests and the client integration tests on the oldest and the newest release of each range
(scripts/test-client-releases).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SupportedRange:
    """``[lowest, highest)`` as (major, minor) pairs, and the distribution's name on PyPI."""

    distribution: str
    lowest: tuple[int, int]
    highest: tuple[int, int]

    @property
    def specifier(self) -> str:
        """The range as pip spells it, e.g. ``>=2.13,<2.17``."""
        return f">={self.lowest[0]}.{self.lowest[1]},<{self.highest[0]}.{self.highest[1]}"

    def contains(self, installed: str) -> bool:
        match = re.match(r"(\d+)\.(\d+)", installed)
        return match is not None and self.lowest <= (int(match.group(1)), int(match.group(2))) < self.highest

    def check(self, installed: str, needed_for: str) -> None:
        """Raise :class:`UnsupportedClientLibrary` naming both versions unless ``installed`` is in range."""
        if not self.contains(installed):
            raise UnsupportedClientLibrary(
                f"{needed_for} needs {self.distribution}{self.specifier}, but {self.distribution} {installed} is "
                f"installed; install a supported one: pip install '{self.distribution}{self.specifier}'")


class UnsupportedClientLibrary(ImportError):
    """An installed Kafka client library is outside the releases this package is tested with.

    The console scripts turn it into one error line (connect_runtime/cli/entry.py), recognising it by this
    attribute: importing this class there would import the package whose check raised it."""

    unsupported_client_library = True


#: confluent-kafka: the upper bound is the newest minor release whose C ``Handle`` struct the span producer
#: was checked against (connect_runtime/clients/bulk_produce.py, HANDLE_LAYOUT_CHECKED).
CONFLUENT_KAFKA = SupportedRange("confluent-kafka", (2, 13), (2, 17))
#: kafka-python: group membership relies on its coordinator's internals (connect_runtime/clients/group_client.py
#: lists them and checks each), which may change in any minor release.
KAFKA_PYTHON = SupportedRange("kafka-python", (3, 0), (3, 1))


def check_confluent_kafka() -> None:
    """The installed confluent-kafka is one this package was tested with (called when it is imported)."""
    from importlib.metadata import version

    CONFLUENT_KAFKA.check(version(CONFLUENT_KAFKA.distribution), "the Kafka clients")
