"""The keys of a config under one prefix, prefix stripped: how every client config is cut out of a bigger one.

A worker config holds ``producer.*``, ``consumer.*`` and ``admin.*`` client keys, a connector config its
``consumer.override.*`` keys, an ``mm2.properties`` its ``<alias>.*`` and ``<source>-><target>.*`` keys,
an HTTPS listener its ``listeners.https.ssl.*`` keys. Each is read with :func:`with_prefix_stripped`, which is
Java's ``AbstractConfig.originalsWithPrefix``: the keys that start with the prefix, without it. A key that
is the prefix alone names nothing and is left out, as in Java.

It lives in the pure API layer so that the connectors (which may not import the engine), the client
factory and the REST layer all share it. ``mirror.client`` keeps its own copy: it may import only
confluent-kafka (see ``mirror/client/mirror_client.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

V = TypeVar("V")


def with_prefix_stripped(props: Mapping[str, V], prefix: str) -> dict[str, V]:
    """The entries of ``props`` whose key starts with ``prefix`` (and is longer), prefix stripped."""
    return {key[len(prefix):]: value for key, value in props.items()
            if key.startswith(prefix) and len(key) > len(prefix)}
