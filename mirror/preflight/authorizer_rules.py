"""Whether Kafka's ACLs grant a principal an operation on a resource, from a DescribeAcls listing.

The rules of Kafka's StandardAuthorizer, for what a listing can tell: a binding applies to the principal
itself or to ``User:*``; a LITERAL pattern matches its name or, as ``*``, every name; a PREFIXED pattern
every name that starts with it. A DENY of the operation (or of ALL) wins over any ALLOW; an ALLOW of the
operation, of ALL, or of an operation that implies it grants it: READ, WRITE, DELETE and ALTER imply
DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.

What a listing cannot tell is left to the broker's own answers (KIP-430's authorized operations, which
:mod:`mirror.preflight.rights` prefers whenever the resource exists): the host a binding is restricted
to (bindings are read as if they applied from this host), super users (who have no bindings) and
``allow.everyone.if.no.acl.found``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

#: The name Kafka gives its one CLUSTER resource.
CLUSTER_NAME = "kafka-cluster"
#: Every principal (a binding's principal, never a client's).
ANY_USER = "User:*"

#: operation -> the operations whose ALLOW grants it too.
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                                      AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}


@dataclass(frozen=True)
class Acl:
    """One binding of a DescribeAcls listing."""

    resource: ResourceType
    name: str
    pattern: ResourcePatternType
    principal: str
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def of(cls, binding: AclBinding) -> Acl:
        """A listed binding (confluent-kafka has already made its fields enums)."""
        return cls(ResourceType(_value(binding.restype)), binding.name,
                   ResourcePatternType(_value(binding.resource_pattern_type)), binding.principal,
                   AclOperation(_value(binding.operation)), AclPermissionType(_value(binding.permission_type)))

    def covers(self, resource: ResourceType, name: str) -> bool:
        if self.resource != resource:
            return False
        if self.pattern == ResourcePatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, "*")


def _value(field: Any) -> Any:
    return field.value if isinstance(field, Enum) else field


def allowed(acls: Iterable[Acl], principal: str, resource: ResourceType, name: str,
            operation: AclOperation) -> bool:
    """Whether ``acls`` grant ``principal`` ``operation`` on ``resource`` ``name``."""
    relevant = [a for a in acls if a.principal in (principal, ANY_USER) and a.covers(resource, name)]
    if any(a.permission == AclPermissionType.DENY and a.operation in (operation, AclOperation.ALL)
           for a in relevant):
        return False
    granting = {operation, AclOperation.ALL} | IMPLIED_BY.get(operation, frozenset())
    return any(a.permission == AclPermissionType.ALLOW and a.operation in granting for a in relevant)


def kafka_acls_command(bootstrap: str, principal: str, resource: ResourceType, name: str,
                       pattern: ResourcePatternType, operations: Iterable[AclOperation]) -> str:
    """The ``kafka-acls.sh`` line that grants ``operations`` (docs/acls.md's form)."""
    ops = " ".join(f"--operation {_camel(op)}" for op in operations)
    target = {
        ResourceType.TOPIC: f"--topic {name}",
        ResourceType.GROUP: f"--group '{name}'" if name == "*" else f"--group {name}",
        ResourceType.TRANSACTIONAL_ID: f"--transactional-id {name}",
        ResourceType.BROKER: "--cluster",
    }[resource]
    prefixed = " --resource-pattern-type prefixed" if pattern == ResourcePatternType.PREFIXED else ""
    return (f"kafka-acls.sh --bootstrap-server {bootstrap} --command-config admin.properties --add "
            f"--allow-principal {principal} {ops} {target}{prefixed}")


def resource_label(resource: ResourceType) -> str:
    """The resource type as docs/acls.md and Kafka's docs write it (confluent-kafka calls CLUSTER BROKER)."""
    return "CLUSTER" if resource == ResourceType.BROKER else resource.name


def _camel(operation: AclOperation) -> str:
    """``DESCRIBE_CONFIGS`` -> ``DescribeConfigs``, as kafka-acls.sh spells operations."""
    return "".join(part.capitalize() for part in operation.name.split("_"))
