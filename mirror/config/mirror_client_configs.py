"""librdkafka configs for the clients that read a cluster as a MirrorClient does, from ``mm2.properties``.

``MirrorMakerConfig.client_config(alias)`` is a Java ``MirrorClientConfig`` map: connection keys
(``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``, ``client.id``) for every client,
``admin.*`` and ``consumer.*`` for one. Each client's Java keys are cut out by
:func:`mirror.client.mirror_client.client_properties` and made librdkafka's by the runtime's client
translation (``ssl.truststore.location`` becomes ``ssl.ca.pem``, ``sasl.jaas.config`` a user and password):
librdkafka would refuse the Java keys. ``mirror offsets translate``, ``mirror cutover``, the translation
endpoint and the health probe all build their clients here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from connect_runtime.clients.factory import translate
from connect_runtime.clients.librdkafka_logging import LIBRDKAFKA_LOG
from mirror.client.mirror_client import ADMIN_CLIENT_PREFIX, CONSUMER_CLIENT_PREFIX, client_properties

ReaderKind = Literal["admin", "consumer"]


def reader_config(raw: Mapping[str, str], kind: ReaderKind) -> dict[str, Any]:
    """The librdkafka config of ``raw``'s ``kind`` client: its connection keys overlaid with its
    ``<kind>.`` keys, translated from Java."""
    return translate(client_properties(raw, f"{kind}."), kind)


def mirror_client_config(raw: Mapping[str, str]) -> dict[str, Any]:
    """A MirrorClient config from ``MirrorMakerConfig.client_config``: Java client keys made librdkafka's.

    Each internal client's config (:func:`reader_config`) comes back under its prefix, with librdkafka's
    log lines sent to Python logging; the ``replication.policy.*`` keys are kept as they are."""
    config: dict[str, Any] = {k: v for k, v in raw.items() if k.startswith("replication.policy.")}
    kinds: tuple[tuple[str, ReaderKind], ...] = ((ADMIN_CLIENT_PREFIX, "admin"), (CONSUMER_CLIENT_PREFIX, "consumer"))
    for prefix, kind in kinds:
        config.update({prefix + k: v for k, v in reader_config(raw, kind).items()})
        config[prefix + "logger"] = LIBRDKAFKA_LOG  # librdkafka's lines through Python logging
    return config
