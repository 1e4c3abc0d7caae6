"""Does the replication principal hold each :class:`~mirror.preflight.needs.Grant`? The cluster says so, in
order of trust:

1. no authorizer (DescribeAcls answers SECURITY_DISABLED), or a super user: every right is granted;
2. KIP-430: the operations the broker itself authorizes on an existing topic, a group (also one that does not
   exist yet: it is described as DEAD with its operations) or the cluster. A topic or group the principal may
   not DESCRIBE is refused every operation that implies DESCRIBE;
3. the ACL listing (DescribeAcls, readable with DESCRIBE on the cluster), read with the authorizer's rules
   (:mod:`mirror.preflight.authorizer_rules`), for the principal the client config names;
4. the operation itself where it changes nothing: CREATE on a topic is a CreateTopics with ``validate_only``.

What none of these answers (WRITE on a topic not created yet, a transactional id, without the ACL listing) is
reported as not verified, a warning: trying it would write to a topic or initialise the transactional id,
which fences the live producer that holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AclOperation, NewTopic, ResourceType

from mirror.preflight.authorizer_rules import IMPLIED_BY, allowed, kafka_acls_command, resource_label
from mirror.preflight.cluster_session import ClusterSession
from mirror.preflight.findings import ACL, Report, Severity
from mirror.preflight.needs import Grant

_AUTHORIZATION_ERRORS = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED)
_IMPLY_DESCRIBE = IMPLIED_BY[AclOperation.DESCRIBE] | {AclOperation.DESCRIBE}


@dataclass(frozen=True)
class Verdict:
    """For one operation on one name: granted (True), refused (False) or unknown (None), and how it is known."""

    granted: bool | None
    basis: str


def evaluate(session: ClusterSession, grant: Grant, name: str, operation: AclOperation,
             create_spec: NewTopic | None = None) -> Verdict:
    """Whether the principal holds ``operation`` on ``name`` (see the module docstring for the order)."""
    if session.authorizer is False:
        return Verdict(True, "no authorizer")
    if session.super_user:
        return Verdict(True, "super user")
    known = _kip430(session, grant.resource, name, operation)
    if known is not None:
        return Verdict(known, "authorized operations (KIP-430)")
    if session.acls is not None and session.principal is not None:
        return Verdict(allowed(session.acls, session.principal, grant.resource, name, operation), "ACL listing")
    if grant.resource == ResourceType.TOPIC and operation == AclOperation.CREATE:
        spec = create_spec or NewTopic(name, num_partitions=1, replication_factor=-1)
        error = session.validate_create([spec])[name]
        return Verdict(error is None or error.code() not in _AUTHORIZATION_ERRORS, "CreateTopics validate_only")
    return Verdict(None, "")


def _kip430(session: ClusterSession, resource: ResourceType, name: str, operation: AclOperation) -> bool | None:
    if resource == ResourceType.BROKER:
        ops = session.cluster_operations
        if ops is None:  # no DESCRIBE on the cluster: nothing that implies it either
            return False if operation in _IMPLY_DESCRIBE else None
        return operation in ops
    if resource == ResourceType.TOPIC:
        topic = session.topics([name])[name]
        if not topic.visible:
            return False if operation in _IMPLY_DESCRIBE else None
        if not topic.exists or topic.operations is None:  # visible, so DESCRIBE is granted
            return True if operation == AclOperation.DESCRIBE else None
        return operation in topic.operations
    if resource == ResourceType.GROUP:
        group = session.groups([name])[name]
        if not group.visible:
            return False if operation in _IMPLY_DESCRIBE else None
        if group.operations is None:  # described by the broker (so DESCRIBE is granted), not by the client
            return True if operation == AclOperation.DESCRIBE else None
        return operation in group.operations
    return None  # transactional ids have no authorized operations


@dataclass
class _Shortfall:
    """Grants that miss the same operations of the same ACL: one finding, one kafka-acls.sh line."""

    session: ClusterSession
    grant: Grant
    names: list[str]
    purposes: list[str]
    severity: Severity
    missing: tuple[AclOperation, ...]
    unknown: tuple[AclOperation, ...]


def check_grants(report: Report, sessions: Mapping[str, ClusterSession], grants: Iterable[Grant], flow: str,
                 create_specs: Mapping[str, NewTopic] | None = None) -> None:
    """A finding per grant held, and one per ACL that lacks operations (with the kafka-acls.sh line that grants
    them) or could not be verified; grants that lack the same operations of one ACL (the remote topics and the
    checkpoints topic under ``A.``) share their finding."""
    shortfalls: dict[tuple[Any, ...], _Shortfall] = {}
    for grant in grants:
        session = sessions.get(grant.cluster)
        if session is None or not session.reached:
            continue
        missing: dict[AclOperation, list[str]] = {}
        unknown: set[AclOperation] = set()
        bases: set[str] = set()
        for name in grant.names:
            for operation in grant.operations:
                verdict = evaluate(session, grant, name, operation, (create_specs or {}).get(name))
                bases.add(verdict.basis)
                if verdict.granted is False:
                    missing.setdefault(operation, []).append(name)
                elif verdict.granted is None:
                    unknown.add(operation)
        if not missing and not unknown:
            ops = ", ".join(op.name for op in grant.operations)
            report.add(Severity.OK, ACL, grant.cluster, flow,
                       f"{session.principal or 'the principal'} holds {ops} on {resource_label(grant.resource)} "
                       f"{_names(grant.names)} ({'; '.join(sorted(bases))})")
            continue
        lacking = list(dict.fromkeys(n for names in missing.values() for n in names)) or list(grant.names)
        missing_ops = tuple(op for op in grant.operations if op in missing)
        unknown_ops = tuple(op for op in grant.operations if op in unknown)
        key = (grant.cluster, grant.resource, grant.acl_name, grant.pattern, missing_ops, unknown_ops)
        severity = grant.if_missing if missing else Severity.WARNING
        seen = shortfalls.get(key)
        if seen is None:
            shortfalls[key] = _Shortfall(session, grant, lacking, [grant.purpose], severity, missing_ops,
                                         unknown_ops)
        else:
            seen.names += [n for n in lacking if n not in seen.names]
            seen.purposes.append(grant.purpose)
            seen.severity = max(seen.severity, severity)
    for shortfall in shortfalls.values():
        _report_shortfall(report, flow, shortfall)


def _report_shortfall(report: Report, flow: str, shortfall: _Shortfall) -> None:
    session, grant, missing, unknown = shortfall.session, shortfall.grant, shortfall.missing, shortfall.unknown
    what = f"{resource_label(grant.resource)} {_names(tuple(shortfall.names))} of {grant.cluster}"
    purpose = "; ".join(dict.fromkeys(shortfall.purposes))
    fix = kafka_acls_command(session.bootstrap.split(",")[0], session.principal or "<principal>", grant.resource,
                             grant.acl_name, grant.pattern, [*missing, *unknown])
    if missing:
        also = f"; {', '.join(op.name for op in unknown)} not verified" if unknown else ""
        report.add(shortfall.severity, ACL, grant.cluster, flow,
                   f"{session.principal or 'the principal'} lacks {', '.join(op.name for op in missing)} on {what} "
                   f"({purpose}){also}", fix)
    else:
        report.add(shortfall.severity, ACL, grant.cluster, flow,
                   f"cannot verify {', '.join(op.name for op in unknown)} on {what} ({purpose}): "
                   f"{_why_unknown(session, grant)}", f"make sure it is granted: {fix}")


def _names(names: tuple[str, ...]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return f"{names[0]}, {names[1]} and {len(names) - 2} more"


def _why_unknown(session: ClusterSession, grant: Grant) -> str:
    if session.principal is None:
        return "the principal is named by a certificate, Kerberos or OAUTHBEARER, which the check cannot map"
    if session.acls is None:
        return (f"the ACLs of {session.alias} are not readable (DescribeAcls needs DESCRIBE on its CLUSTER), and "
                f"trying the operation would change the cluster"
                + (" (initialising the transactional id fences its live producer)"
                   if grant.resource == ResourceType.TRANSACTIONAL_ID else ""))
    return "the cluster did not say"
