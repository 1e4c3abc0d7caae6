"""docs/acls.md's minimal ACLs as data, and the SCRAM users and grants the Kafka tier's ACL tests set up.

Shared by tests/kafka/test_kafka_minimal_acls.py (the driver runs with exactly these ACLs, or without one)
and tests/kafka/test_kafka_preflight.py (``mirror check`` names each missing one).
"""

from __future__ import annotations

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import admin

MECHANISM = "SCRAM-SHA-256"
Grant = tuple[ResourceType, str, ResourcePatternType, tuple[AclOperation, ...]]

_T, _G, _C, _X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.BROKER, ResourceType.TRANSACTIONAL_ID
_LIT, _PRE = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
_O = AclOperation


def minimal_acls(source: str, target: str, topic: str) -> dict[str, tuple[str, Grant]]:
    """docs/acls.md's table for the flow ``source -> target`` replicating ``topic``: label -> (cluster, grant).

    The cluster is ``"source"`` or ``"target"``; the labels are the table's rows."""
    return {
        # on the source
        "source topics read": ("source", (_T, topic, _LIT, (_O.READ,))),
        "source topics describe": ("source", (_T, topic, _LIT, (_O.DESCRIBE, _O.DESCRIBE_CONFIGS))),
        "source offset-syncs": ("source", (_T, f"mm2-offset-syncs.{target}.internal", _LIT,
                                           (_O.CREATE, _O.READ, _O.WRITE, _O.DESCRIBE, _O.DESCRIBE_CONFIGS))),
        "source groups": ("source", (_G, "*", _LIT, (_O.DESCRIBE,))),
        "source cluster": ("source", (_C, "kafka-cluster", _LIT, (_O.DESCRIBE,))),
        # on the target
        "target remote topics": ("target", (_T, f"{source}.", _PRE,
                                            (_O.CREATE, _O.READ, _O.WRITE, _O.DESCRIBE, _O.DESCRIBE_CONFIGS,
                                             _O.ALTER_CONFIGS, _O.ALTER))),
        "target heartbeats": ("target", (_T, "heartbeats", _LIT,
                                         (_O.CREATE, _O.READ, _O.WRITE, _O.DESCRIBE, _O.DESCRIBE_CONFIGS))),
        "target internal topics": ("target", (_T, "mm2-", _PRE,
                                              (_O.CREATE, _O.READ, _O.WRITE, _O.DESCRIBE, _O.DESCRIBE_CONFIGS))),
        "target connect group": ("target", (_G, f"{source}-mm2", _LIT, (_O.READ, _O.DESCRIBE))),
        "target reader groups": ("target", (_G, "mm2-", _PRE, (_O.DESCRIBE,))),
        "target log reader groups": ("target", (_G, "connect-log-", _PRE, (_O.DESCRIBE,))),
        "target transactional id": ("target", (_X, f"connect-cluster-{source}-mm2", _LIT,
                                               (_O.WRITE, _O.DESCRIBE))),
        "target cluster": ("target", (_C, "kafka-cluster", _LIT, (_O.ALTER,))),
    }


def bindings(user: str, grant: Grant) -> list[AclBinding]:
    kind, name, pattern, operations = grant
    return [AclBinding(kind, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW) for op in operations]


def create_user(broker: KafkaBroker, user: str, password: str) -> None:
    client = admin(broker.bootstrap_servers)
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                          password.encode())
    for future in client.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=15)


def grant(broker: KafkaBroker, acl_bindings: list[AclBinding]) -> None:
    client = admin(broker.bootstrap_servers)  # kept: a destroyed client fails its pending futures
    if acl_bindings:
        for future in client.create_acls(acl_bindings).values():
            future.result(timeout=15)
