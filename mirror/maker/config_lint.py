"""Stage 1 of the ``mm2.properties`` pipeline: every line against the level MM2 reads it at.

Java MM2 silently drops a key written at a level where it does not read it (a worker key at the top
level, a connector key per cluster, a typo), so a user who asks for exactly-once at the top level gets
at-least-once without a word. :func:`lint` reads the file line by line against the levels of
:mod:`mirror.maker.key_catalog` and returns every finding at once, each one line naming file, line,
reason and fix (:class:`~mirror.maker.config_check.Finding`, which the later stages of
:func:`~mirror.maker.config_check.check_mm2_properties` return too):

* **error** — a key whose loss weakens a guarantee (exactly-once, a flush or commit setting, a security
  key, ``enabled``) at a level where MM2 does not apply it: the start is refused (exit 2);
* **warning** — any other key MM2 does not apply there, an unknown key or a typo (with "did you mean"),
  a key for an alias not in ``clusters``, a flow between undeclared clusters, a key set twice;
* one **warning** listing the Java client keys librdkafka has no equivalent for (never fatal, even
  strict: the key is valid Kafka, and the file may be shared with Java nodes).

``--strict`` or ``config.strict = true`` makes every other warning refuse the start too
(:func:`~mirror.maker.config_check.refusals`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from connect_runtime.api.secrets import is_sensitive_key
from connect_runtime.clients.factory import ClientKind
from mirror.config.mirror_maker_config import (
    SOURCE_CONNECTOR_CLASS,
    MirrorMakerConfig,
    SourceAndTarget,
    parse_boolean,
)
from mirror.maker import key_catalog as kc
from mirror.maker.config_check import ERROR, LINT, WARNING, Finding, Severity

_DOCS = "docs/configuration.md"


@dataclass(frozen=True)
class _Issue:
    severity: Severity
    kind: str
    message: str


_NO_EQUIVALENT = _Issue(WARNING, "no-librdkafka-equivalent", "")


class _Context:
    """What every check needs to know about the file: its aliases, its herder pairs, which replicate."""

    def __init__(self, config: MirrorMakerConfig) -> None:
        self.config = config
        self.raw = config.raw_properties()
        self.declared = config.clusters
        self.pairs = config.cluster_pairs()
        self.targets = list(dict.fromkeys(p.target for p in self.pairs)) or self.declared
        self.replicating = {p for p in self.pairs if parse_boolean(
            config.connector_base_config(p, SOURCE_CONNECTOR_CLASS).get("enabled", "").strip())}
        self.replication_targets = list(dict.fromkeys(p.target for p in sorted(self.replicating))) or self.targets
        self.sources = list(dict.fromkeys(p.source for p in sorted(self.replicating))) or self.declared

    def shown(self, key: str) -> str:
        value = self.raw.get(key, "")
        return f"{key} = {'[hidden]' if is_sensitive_key(key) else value.strip()}"

    def value(self, key: str) -> str:
        """The value as a finding may print it (stripped; a secret hidden)."""
        return self.shown(key).split(" = ", 1)[1]

    def per_target(self, setting: str, key: str) -> str:
        """``B.<setting> = <value>`` for each target cluster of a replicating flow."""
        return " and ".join(f"{t}.{setting} = {self.value(key)}" for t in self.replication_targets)

    def flows_of(self, alias: str | None = None) -> list[SourceAndTarget]:
        flows = sorted(self.replicating) or sorted(self.pairs)
        return [p for p in flows if alias is None or alias in (p.source, p.target)]

    def per_flow(self, setting: str, key: str, alias: str | None = None) -> str:
        """``A->B.<setting> = <value>`` for each replicating flow (of ``alias``)."""
        flows = self.flows_of(alias) or [SourceAndTarget("<source>", "<target>")]
        return " and ".join(f"{p}.{setting} = {self.value(key)}" for p in flows)


def lint(config: MirrorMakerConfig) -> list[Finding]:
    """Every finding of the file, in line order (the no-equivalent client keys last, in one finding)."""
    ctx = _Context(config)
    source = config.properties_file
    entries: Iterable[tuple[str, int | None]] = source.entries if source else [(k, None) for k in ctx.raw]
    findings: list[Finding] = []
    no_equivalent: list[str] = []
    for key, line in entries:
        last = source.line_of(key) if source else None
        if source and last != line:
            findings.append(Finding(WARNING, LINT, "duplicate", config.source_name, line, key, None,
                                    f"{key} is set again on line {last}, which wins: this line has no effect; "
                                    f"delete one of the two"))
            continue
        issue = _classify(ctx, key)
        if issue is _NO_EQUIVALENT:
            no_equivalent.append(f"{key} (line {line})" if line else key)
        elif issue is not None:
            findings.append(Finding(issue.severity, LINT, issue.kind, config.source_name, line, key, None,
                                    issue.message))
    if no_equivalent:
        findings.append(Finding(
            WARNING, LINT, "no-librdkafka-equivalent", config.source_name, None, None, None,
            f"Java client keys librdkafka has no equivalent for are not applied: {', '.join(no_equivalent)}; "
            f"the rest of each client's settings apply (see {_DOCS})", strict_exempt=True))
    return findings


# ---- the three levels ----


def _classify(ctx: _Context, key: str) -> _Issue | None:
    if "->" in key:
        return _flow_key(ctx, key)
    alias = next((a for a in sorted(ctx.declared, key=len, reverse=True) if key.startswith(a + ".")), None)
    if alias is not None:
        return _cluster_key(ctx, alias, key[len(alias) + 1:], key)
    return _top_level_key(ctx, key)


def _not_applied(ctx: _Context, key: str, setting: str, where: str, fix: str, because: str) -> _Issue:
    lost = kc.guarantee(setting)
    severity = ERROR if lost else WARNING
    kind = "dropped-guarantee" if lost else "not-applied"
    loss = f" ({lost})" if lost else ""
    place = f" {where}" if where else ""
    return _Issue(severity, kind, f"{ctx.shown(key)}{place} is not applied{loss}: write {fix}: {because}")


def _top_level_key(ctx: _Context, key: str) -> _Issue | None:
    if kc.applies_at_top_level(key):
        return None
    kind, rest = kc.split_client(key)
    if key in kc.WORKER:
        return _not_applied(ctx, key, key, "at the top level", ctx.per_target(key, key),
                            "MM2 reads worker keys per target cluster")
    if kind is not None and (kc.client_key(kind, rest) or rest.startswith("override.")):
        if rest.startswith("override."):
            return _not_applied(ctx, key, key, "at the top level", ctx.per_flow(key, key),
                                "MM2 passes client overrides to a flow's connectors only from flow keys")
        aliases = {"consumer": ctx.sources, "producer": ctx.replication_targets}.get(kind, ctx.declared)
        fix = " or ".join(f"{a}.{ctx.shown(key)}" for a in aliases)
        return _not_applied(ctx, key, key, "at the top level", fix, "client settings are read per cluster")
    if key in kc.CONNECTOR or key.startswith(kc.CONNECTOR_PREFIXES) or key == "use.defaults.from":
        return _not_applied(ctx, key, key, "at the top level", ctx.per_flow(key, key),
                            "MM2 passes only the connectors' declared keys from the top level")
    kinds = kc.plain_client_kinds(key)
    if kinds:
        fix = " or ".join(f"<alias>.{k}.{key} = {ctx.value(key)}" for k in kinds)
        return _not_applied(ctx, key, key, "at the top level", fix,
                            "only connection and security keys are shared by every client")
    if key in kc.TOPIC:
        return _topic_key(ctx, key)
    head, _, rest = key.partition(".")
    if rest and kc.known_anywhere(rest):
        return _undeclared_alias(ctx, key, head)
    return _unknown(ctx, key, key, _TOP_CANDIDATES, lambda match: match)


def _cluster_key(ctx: _Context, alias: str, setting: str, key: str) -> _Issue | None:
    if setting in kc.CONNECTION:
        return None
    if kc.is_driver_key(setting):
        return _not_applied(ctx, key, setting, f"for cluster {alias}", ctx.shown(key).replace(f"{alias}.", "", 1),
                            "the driver reads its own keys (clusters, REST, config providers) from the top level")
    kind, rest = kc.split_client(setting)
    if kind is not None:
        if rest.startswith("override."):
            return _not_applied(ctx, key, setting, "", ctx.per_flow(setting, key, alias),
                                "client overrides are connector keys, read per flow")
        return _client_setting(ctx, key, kind, rest, f"{alias}.{kind}.", source_consumer=alias in ctx.sources)
    if setting in kc.WORKER:
        # A cluster no flow targets: its worker keys wait for one (files often set the same keys for every
        # cluster); nothing is lost now, so nothing is reported.
        if setting not in kc.WORKER_USED and not kc.plain_client_kinds(setting):
            return _Issue(WARNING, "not-applied", f"{ctx.shown(key)}: a Java Connect worker key this runtime does "
                                                  f"not use, so it has no effect; delete it (see {_DOCS})")
        return None
    if setting in kc.CONNECTOR or setting == "use.defaults.from":
        fix = f"{ctx.per_flow(setting, key, alias)} (one flow) or {ctx.shown(key).replace(f'{alias}.', '', 1)} " \
              f"(every flow)"
        return _not_applied(ctx, key, setting, f"for cluster {alias}", fix,
                            "connector keys are read per flow or at the top level, not per cluster")
    kinds = kc.plain_client_kinds(setting)
    if kinds:
        fix = " or ".join(f"{alias}.{k}.{setting} = {ctx.value(key)}" for k in kinds)
        return _not_applied(ctx, key, setting, "", fix,
                            f"only connection and security keys reach every client of {alias}")
    if setting in kc.TOPIC:
        return _topic_key(ctx, key)
    return _unknown(ctx, key, setting, _CLUSTER_CANDIDATES, lambda match: f"{alias}.{match}")


def _flow_key(ctx: _Context, key: str) -> _Issue | None:
    source, _, rest = key.partition("->")
    target = next((a for a in sorted(ctx.declared, key=len, reverse=True) if rest.startswith(a + ".")),
                  rest.split(".", 1)[0])
    setting = rest[len(target) + 1:]
    pair = SourceAndTarget(source, target)
    undeclared = [a for a in (source, target) if a not in ctx.declared]
    if undeclared:
        alias = undeclared[0]
        guess = difflib.get_close_matches(alias, ctx.declared, n=1)
        hint = f" (did you mean {guess[0]}?)" if guess else ""
        severity = ERROR if setting == kc.ENABLED and parse_boolean(ctx.raw[key].strip()) else WARNING
        return _Issue(severity, "undeclared-cluster",
                      f"flow key {key!r} names cluster {alias!r}, which is not declared in clusters "
                      f"({', '.join(ctx.declared)}){hint}: add it to clusters or fix the alias")
    if source == target:
        return _Issue(WARNING, "not-applied", f"{ctx.shown(key)} is not applied: a cluster is never replicated "
                                              f"to itself")
    if setting == kc.ENABLED:
        return _enabled(ctx, key, pair)
    if setting in kc.CONNECTION:
        fix = " and ".join(ctx.shown(key).replace(f"{pair}.", f"{a}.", 1) for a in (source, target))
        return _not_applied(ctx, key, setting, "", fix, "MM2's clients take connection and security keys per cluster")
    kind, sub = kc.split_client(setting)
    if setting.startswith(("producer.override.", "consumer.override.", "admin.override.")) and kind is not None:
        return _client_setting(ctx, key, kind, sub[len("override."):], f"{pair}.{kind}.override.",
                               source_consumer=True) or \
            _idle_flow(ctx, key, pair)
    if setting in kc.CONNECTOR or setting.startswith(kc.CONNECTOR_PREFIXES) or setting == "use.defaults.from" \
            or setting.startswith("emit.heartbeats."):
        return _idle_flow(ctx, key, pair)
    if kind is not None:
        return _client_setting(ctx, key, kind, sub, f"{pair}.{kind}.", source_consumer=True) or \
            _idle_flow(ctx, key, pair)
    if setting in kc.HEALTH_THRESHOLDS:
        return _idle_flow(ctx, key, pair)
    if kc.is_driver_key(setting):
        return _not_applied(ctx, key, setting, "", ctx.shown(key).replace(f"{pair}.", "", 1),
                            "the driver reads its own keys from the top level")
    if setting in kc.WORKER:
        return _not_applied(ctx, key, setting, "", f"{target}.{ctx.shown(key).split(f'{pair}.', 1)[1]}",
                            "MM2 reads worker keys per target cluster")
    kinds = kc.plain_client_kinds(setting)
    if kinds:
        fix = " or ".join(f"{pair}.{k}.{setting} = {ctx.value(key)}" for k in kinds)
        return _not_applied(ctx, key, setting, "", fix, "client settings need a client prefix")
    if setting in kc.TOPIC:
        return _topic_key(ctx, key)
    return _unknown(ctx, key, setting, _FLOW_CANDIDATES, lambda match: f"{pair}.{match}")


def _enabled(ctx: _Context, key: str, pair: SourceAndTarget) -> _Issue | None:
    value = ctx.raw[key]
    if parse_boolean(value) or not parse_boolean(value.strip()):
        return None
    if pair in ctx.pairs:
        return _Issue(WARNING, "not-applied", f"{key} = {value.strip()} has trailing whitespace, which MM2 reads as "
                                              f"false when it decides which flows exist; remove it")
    return _Issue(ERROR, "dropped-guarantee", f"{key} = {value.strip()} is not applied (the flow would not run): "
                                              f"its trailing whitespace makes MM2 read it as false; remove it")


def _idle_flow(ctx: _Context, key: str, pair: SourceAndTarget) -> _Issue | None:
    if pair in ctx.replicating or key.startswith(f"{pair}.emit.heartbeats."):
        return None
    return _Issue(WARNING, "not-applied", f"{ctx.shown(key)} has no effect: flow {pair} does not replicate; "
                                          f"write {pair}.enabled = true to run it")


def _client_setting(ctx: _Context, key: str, kind: ClientKind, setting: str, written: str, *,
                    source_consumer: bool) -> _Issue | None:
    if kc.client_key(kind, setting):
        return None if kc.librdkafka_equivalent(kind, setting, source_consumer=source_consumer) else _NO_EQUIVALENT
    return _unknown(ctx, key, setting, sorted(kc.client_keys(kind)), lambda match: f"{written}{match}")


def _topic_key(ctx: _Context, key: str) -> _Issue:
    return _Issue(WARNING, "not-applied", f"{ctx.shown(key)}: a topic setting, which MM2 does not take from "
                                          f"mm2.properties (remote topics get the source topic's settings); "
                                          f"delete it and set it on the topics")


def _undeclared_alias(ctx: _Context, key: str, alias: str) -> _Issue:
    guess = difflib.get_close_matches(alias, ctx.declared, n=1)
    hint = f" (did you mean {guess[0]}?)" if guess else ""
    return _Issue(WARNING, "undeclared-cluster",
                  f"{key} is for cluster {alias!r}, which is not declared in clusters ({', '.join(ctx.declared)})"
                  f"{hint}: add it to clusters or fix the alias")


def _unknown(ctx: _Context, key: str, setting: str, candidates: list[str],
             written: Callable[[str], str]) -> _Issue:
    matches = difflib.get_close_matches(setting, candidates, n=1, cutoff=0.75)
    hint = f"did you mean {written(matches[0])}?" if matches else f"check the spelling against {_DOCS}"
    return _Issue(WARNING, "unknown", f"{ctx.shown(key)}: unknown key, not applied; {hint}")


_TOP_CANDIDATES = sorted(k for k in kc.DRIVER | kc.CONNECTOR | kc.CONNECTION | kc.WORKER
                         if kc.applies_at_top_level(k))
_CLUSTER_CANDIDATES = sorted(kc.CONNECTION | kc.WORKER_USED)
_FLOW_CANDIDATES = sorted(kc.CONNECTOR)
