"""What ``mirror check`` found: one :class:`Finding` per line, and the :class:`Report` that decides the exit code.

Severities, worst last: ``ok`` (a check passed), ``note`` (something an operator should know that does not
stop or weaken a flow, e.g. a right that could not be read and is not needed), ``warning`` (the flows will
run, with a feature degraded or a need that could not be verified) and ``error`` (a flow will not work).
The exit code follows ``mirror status``: 0 ready, 1 warnings, 2 will not work.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.IntEnum):
    """How bad a finding is; ``max()`` is the worst."""

    OK = 0
    NOTE = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def exit_code(self) -> int:
        return {Severity.WARNING: 1, Severity.ERROR: 2}.get(self, 0)


#: The checks, as a finding names them.
CONNECTIVITY = "connectivity"
CONFIG = "config"
ACL = "acl"
BROKER = "broker"
REPLICATION_FACTOR = "replication-factor"
CLEANUP_POLICY = "cleanup-policy"
TOPIC_CONFIG = "topic-config"
SOURCE_TOPICS = "source-topics"
EXACTLY_ONCE = "exactly-once"


@dataclass(frozen=True)
class Finding:
    """One line of the report: where (cluster, flow), what passed or failed, and the fix."""

    severity: Severity
    check: str
    cluster: str | None
    flow: str | None
    message: str
    fix: str = ""

    @property
    def where(self) -> str:
        if self.cluster and self.flow:
            return f"{self.cluster} ({self.flow})"
        return self.cluster or self.flow or "-"

    def line(self) -> str:
        fix = f"; fix: {self.fix}" if self.fix else ""
        return f"{self.severity.label}: {self.where}: [{self.check}] {self.message}{fix}"

    def as_dict(self) -> dict[str, Any]:
        return {"severity": self.severity.label, "check": self.check, "cluster": self.cluster, "flow": self.flow,
                "message": self.message, "fix": self.fix}


@dataclass
class Report:
    """Every finding of one ``mirror check``, and what it learnt of each cluster."""

    findings: list[Finding] = field(default_factory=list)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, severity: Severity, check: str, cluster: str | None, flow: str | None, message: str,
            fix: str = "") -> None:
        finding = Finding(severity, check, cluster, flow, message, fix)
        if finding not in self.findings:  # two flows sharing a cluster find its problems once
            self.findings.append(finding)

    @property
    def severity(self) -> Severity:
        return max((f.severity for f in self.findings), default=Severity.OK)

    @property
    def exit_code(self) -> int:
        return self.severity.exit_code

    @property
    def verdict(self) -> str:
        return {2: "will not work", 1: "ready, with warnings"}.get(self.exit_code, "ready")

    def counts(self) -> dict[str, int]:
        return {s.label: sum(1 for f in self.findings if f.severity is s) for s in Severity}

    def render(self) -> str:
        """One line per finding (errors first, then warnings, notes, passed checks), then the verdict."""
        ordered = sorted(self.findings, key=lambda f: -int(f.severity))
        counts = self.counts()
        summary = (f"{self.verdict}: {counts['error']} error(s), {counts['warning']} warning(s), "
                   f"{counts['note']} note(s), {counts['ok']} check(s) passed")
        return "\n".join([*(f.line() for f in ordered), summary]) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "exit_code": self.exit_code, "counts": self.counts(),
                "clusters": self.clusters, "findings": [f.as_dict() for f in self.findings]}
