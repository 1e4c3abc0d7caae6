"""connect_runtime/clients/ is the one place that builds a confluent-kafka client.

Outside it, code uses the clients it is given (their methods, Message, TopicPartition, KafkaError) and asks
the factory (new_producer, new_consumer, new_admin) for new ones, so that every client is translated from
Java keys the same way, tracked by the client registry (the leak check and ``connect_clients_open`` count
it) and logs through Python logging. This scans the syntax trees of connect_runtime/ and mirror/ for a
call of Producer, Consumer or AdminClient, under any name they were imported as.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLIENT_CLASSES = frozenset({"Producer", "Consumer", "AdminClient"})
CONFLUENT = ("confluent_kafka", "confluent_kafka.admin", "confluent_kafka.cimpl")


def constructions(source: str) -> list[tuple[int, str]]:
    """(line, class) for each call in ``source`` that builds a confluent-kafka client directly."""
    tree = ast.parse(source)
    local_names: dict[str, str] = {}  # name in this module -> client class
    modules: set[str] = set()  # names bound to a confluent_kafka module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in CONFLUENT:
            for alias in node.names:
                if alias.name in CLIENT_CLASSES:
                    local_names[alias.asname or alias.name] = alias.name
                elif f"{node.module}.{alias.name}" in CONFLUENT:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in CONFLUENT:
                    modules.add(alias.asname or alias.name.split(".")[0])
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in local_names:
            found.append((node.lineno, local_names[func.id]))
        elif isinstance(func, ast.Attribute) and func.attr in CLIENT_CLASSES:
            base = func.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append((node.lineno, func.attr))
    return found


def test_no_code_outside_the_clients_package_builds_a_confluent_kafka_client() -> None:
    clients = ROOT / "connect_runtime" / "clients"
    found = [f"{path.relative_to(ROOT)}:{line}: {name}(...)"
             for package in ("connect_runtime", "mirror") for path in sorted((ROOT / package).rglob("*.py"))
             if clients not in path.parents
             for line, name in constructions(path.read_text(encoding="utf-8"))]
    assert not found, "build these through connect_runtime.clients.factory:\n" + "\n".join(found)


@pytest.mark.parametrize(("source", "expected"), [
    ("from confluent_kafka import Producer\np = Producer({})", [(2, "Producer")]),
    ("from confluent_kafka.admin import AdminClient as A\na = A({})", [(2, "AdminClient")]),
    ("import confluent_kafka\nc = confluent_kafka.Consumer({})", [(2, "Consumer")]),
    ("import confluent_kafka as ck\nc = ck.admin.AdminClient({})", [(2, "AdminClient")]),
    ("from confluent_kafka import admin\na = admin.AdminClient({})", [(2, "AdminClient")]),
    ("def f(p: 'Producer') -> None:\n    p.produce('t')", []),  # a client it was given
    ("from connect_runtime.clients.factory import new_producer\np = new_producer({})", []),
])
def test_the_scan_finds_every_spelling_of_a_construction(source: str, expected: list[tuple[int, str]]) -> None:
    assert constructions(source) == expected
