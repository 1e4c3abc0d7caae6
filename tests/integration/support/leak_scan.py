"""Finding a planted secret wherever it may have travelled, in whatever encoding (issue 27, item 7).

A secret that holds ``"\\$%+/=`` changes shape when it is written as JSON, in a URL, in HTML or in a
properties file; a scan for the raw value alone would miss those leaks. :func:`leak_forms` gives every
shape (and the secret's unique tag, the part after its last ``-``, which survives any encoding), and
:func:`read_whole_topic` reads a topic to its end or fails: a scan of part of a topic proves nothing.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, quote_plus

from confluent_kafka import OFFSET_BEGINNING, Consumer

from connect_runtime.clients.log_reader import read_to_end
from tests.support.kafka import unique

#: What each planted secret holds besides letters: JSON, URL and HTML escape these.
SPECIAL = '"\\$%+/='


def properties_escaped(value: str) -> str:
    """``value`` as a Java properties file needs it written (a backslash doubled)."""
    return value.replace("\\", "\\\\")


def leak_forms(secret: str) -> set[str]:
    """The forms a secret can leak in: as is, JSON-, URL-, HTML- and properties-escaped, and its tag."""
    return {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), quote_plus(secret), html.escape(secret),
            properties_escaped(secret), *secret.rsplit("-", 1)[1:]}


def scan(where: str, text: str, planted: Mapping[str, str]) -> list[str]:
    """``"<what> in <where>"`` for every planted secret found in ``text`` in any of its forms."""
    return [f"{what} in {where}" for what, secret in planted.items()
            if any(form in text for form in leak_forms(secret))]


def read_whole_topic(bootstrap: str, topic: str) -> str:
    """Every record of ``topic`` (keys, headers, values) as text; fails unless every partition was read
    to its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("scan"), "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": "read_uncommitted"})
    texts: list[str] = []

    def collect(records: list[Any]) -> None:
        for record in records:
            headers = "".join(f"{k}={(v or b'').decode('utf-8', 'replace')}" for k, v in record.headers() or ())
            texts.append((record.key() or b"").decode("utf-8", "replace") + headers
                         + (record.value() or b"").decode("utf-8", "replace"))

    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        assert partitions, f"{topic} has no partitions"
        reached = read_to_end(consumer, {(topic, p): OFFSET_BEGINNING for p in partitions}, collect, 60)
        assert reached.complete, f"{topic} was not read to its end: {reached}"
    finally:
        consumer.close()
    return "\n".join(texts)
