"""Which topic ACLs MM2 copies onto the remote topics, and how (MirrorSourceConnector's ACL rules).

Pure rules, kept apart from :mod:`mirror.source.topic_sync`, which runs them on a schedule against the
source and target admin clients.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

# None = "any" for name, principal and host; the stubs type them as str although the client takes None.
_ANY: Any = None
ANY_TOPIC_ACL = AclBindingFilter(ResourceType.TOPIC, _ANY, ResourcePatternType.ANY, _ANY, _ANY,
                                 AclOperation.ANY, AclPermissionType.ANY)


def should_replicate_acl(binding: AclBinding) -> bool:
    """Write permissions are never mirrored: only the source's producers may write a topic."""
    allow = binding.permission_type == AclPermissionType.ALLOW
    return not (allow and binding.operation == AclOperation.WRITE)


def target_acl_binding(binding: AclBinding, remote_topic: str) -> AclBinding:
    """The same entry on the remote topic; ``ALLOW ALL`` is downgraded to ``ALLOW READ``."""
    operation = binding.operation
    if binding.permission_type == AclPermissionType.ALLOW and operation == AclOperation.ALL:
        operation = AclOperation.READ
    return AclBinding(ResourceType.TOPIC, remote_topic, ResourcePatternType.LITERAL, binding.principal,
                      binding.host, operation, binding.permission_type)
