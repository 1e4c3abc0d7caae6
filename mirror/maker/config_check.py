"""The ``mm2.properties`` pipeline: every problem of a file, found before a node starts, one line each.

Java MM2 starts with almost any file. It silently drops a key written at a level where it does not read it
(a worker key at the top level, a connector key per cluster, a typo), so a user who asks for exactly-once
at the top level gets at-least-once without a word. It starts with an undeclared alias in ``--clusters``,
a cluster without ``bootstrap.servers`` or a connector value that does not parse, and then replicates
nothing. And a herder that refuses a connector config (its own ``validate``, MM2's cross-key rules, the
worker's ``connector.client.config.override.policy``) only logs it and runs without that connector. Here
:func:`check_mm2_properties` reads the file in three stages and returns a :class:`ConfigReport` holding
every :class:`Finding`, each naming file, line, the key as the operator wrote it, and the fix:

1. **lint** (:mod:`mirror.maker.config_lint`): every line against the level MM2 reads it at, over
   :mod:`mirror.maker.key_catalog`. A key whose loss weakens a guarantee is an error; any other key MM2
   does not apply there is a warning; the Java client keys librdkafka has no equivalent for are one
   warning that stays a warning even when strict (the key is valid Kafka, and the file may be shared with
   Java nodes).
2. **structure**: what the driver derives from the file. ``--clusters`` names declared aliases and leaves a
   flow; every ``${provider:...}`` resolves where it is written; every cluster of a built pair has
   ``bootstrap.servers`` and client security values that parse (``<alias>.security.protocol`` & co reach
   the clients unparsed by any connector); the top-level replication policy loads; each pair's worker and
   stored connector configs derive; no secret would be stored in clear in a configs topic
   (``configs.topic.compatibility = java``, the default: Java's stored configs hold what the file holds,
   so a secret must come from a config provider, whose reference is stored and resolved by each node).
3. **herder**: what each herder would check before storing a connector config: its worker config
   (``exactly.once.source.support``, the client override policy...) and Connect's validation of each
   connector (:mod:`connect_runtime.runtime.worker.connector_validation`). A pair with a structure error
   skips this stage (its configs are what is wrong); a connector this stage validates is not parsed
   against its ConfigDef in stage 2 as well, since the validation parses it.

A problem in one cluster or pair does not stop the others: one run shows every problem. A value that
reaches several connectors or pairs is reported once, at the first.

The findings that refuse the start (:meth:`ConfigReport.refused`) are the errors and, with ``--strict`` or
``config.strict = true``, every other warning. ``connect-mirror-maker`` and ``mirror config show`` refuse
such a file with exit 2 and one line per refusal, so a mistake is seen before a node starts rather than in
a log line after it. One herder refusal is kept as Java has it, because it is how an operator switches the
checkpoint connector off: ``emit.checkpoints.enabled=false`` or ``emit.offset-syncs.enabled=false`` on an
enabled flow is a **notice** (the driver logs it, ``config show`` prints it), not an error.

This module sits in :mod:`mirror.maker`, not :mod:`mirror.config`: stage 3 needs the runtime's worker
config and connector validation, which :mod:`mirror.config` may not import. The checks read the file only
through :class:`~mirror.config.mirror_maker_config.MirrorMakerConfig`'s public derivations, which stay
the faithful port of Java's ``MirrorMakerConfig``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from connect_runtime.api.errors import ConfigError
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.worker import connector_validation
from connect_runtime.runtime.worker.plugins import Plugins
from mirror.config.checkpoint import EMIT_CHECKPOINTS_ENABLED
from mirror.config.client_keys import BOOTSTRAP_SERVERS, CLIENT_CONFIG_NAMES, CLIENT_SECURITY_CONFIG_DEF
from mirror.config.connector_base import REPLICATION_POLICY_CLASS, validate_replication_policy_class
from mirror.config.mirror_maker_config import (
    CHECKPOINT_CONNECTOR_CLASS,
    CLIENT_PREFIXES,
    CLUSTERS,
    CONNECTOR_CLASSES,
    CONNECTOR_CONFIG_DEFS,
    STRICT,
    MirrorMakerConfig,
    SourceAndTarget,
    connector_simple_name,
)
from mirror.config.secret_references import CONFIGS_TOPIC_COMPATIBILITY, literal_secret, stores_secrets_in_clear
from mirror.config.source import EMIT_OFFSET_SYNCS_ENABLED
from mirror.errors import MirrorError


class Severity(enum.StrEnum):
    """How bad a finding is: an error refuses the start; a warning does with ``strict``; a notice never."""

    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


ERROR = Severity.ERROR
WARNING = Severity.WARNING
NOTICE = Severity.NOTICE

#: The stages, as a finding names them.
LINT = "lint"
STRUCTURE = "structure"
HERDER = "herder"

#: (connector class, key): refusals that mean "this connector is switched off", not a mistake.
_SWITCHED_OFF = frozenset({(CHECKPOINT_CONNECTOR_CLASS, EMIT_CHECKPOINTS_ENABLED),
                           (CHECKPOINT_CONNECTOR_CLASS, EMIT_OFFSET_SYNCS_ENABLED)})


@dataclass(frozen=True)
class Finding:
    """One problem of the file: where (line, the key as written, the flow), how bad, why and what to write."""

    severity: Severity
    stage: str
    kind: str
    file: str
    line: int | None
    key: str | None
    flow: str | None
    message: str
    strict_exempt: bool = False

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "severity": str(self.severity), "text": str(self)}


class FileRefused(ConfigError, MirrorError):
    """The file is refused: one ``file:line: reason; fix`` line per finding (the CLI prints each)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def is_strict(config: MirrorMakerConfig, flag: bool) -> bool:
    """``--strict`` or ``config.strict = true`` in the file."""
    return flag or bool(config.get(STRICT))


def refusals(findings: Iterable[Finding], strict: bool) -> list[Finding]:
    """The findings that refuse the start: errors, and with ``strict`` every warning not exempt."""
    return [f for f in findings
            if f.severity is ERROR or (strict and f.severity is WARNING and not f.strict_exempt)]


@dataclass
class ConfigReport:
    """Every finding of one file, in stage order: lint (line order), structure, then herders (pair order)."""

    config: MirrorMakerConfig
    pairs: list[SourceAndTarget]
    findings: list[Finding]
    strict: bool

    def refused(self) -> list[Finding]:
        return refusals(self.findings, self.strict)

    def raise_if_refused(self) -> None:
        """:class:`FileRefused` with one ``file:line: message`` line per refused finding, if any."""
        refused = self.refused()
        if refused:
            raise FileRefused([str(f) for f in refused])

    def log(self, log: logging.Logger) -> None:
        """Each finding that does not refuse the start, one WARNING line each (the driver, at start)."""
        refused = self.refused()
        for finding in self.findings:
            if finding not in refused:
                log.warning("%s", finding)

    def as_dict(self) -> dict[str, object]:
        """``findings`` (warnings and errors), ``notices`` and ``refused`` (lines), for ``config show``."""
        return {"findings": [f.as_dict() for f in self.findings if f.severity is not NOTICE],
                "notices": [str(f) for f in self.findings if f.severity is NOTICE],
                "refused": [str(f) for f in self.refused()]}


def check_mm2_properties(config: MirrorMakerConfig, clusters: Iterable[str] | None = None, *,
                         strict: bool = False, resolve_providers: bool = True, herders: bool = True,
                         plugins: Plugins | None = None) -> ConfigReport:
    """Run the three stages over ``config`` for the node's ``--clusters``; never raises for what the file holds.

    ``resolve_providers=False`` skips resolving ``${provider:...}`` (for ``config show``, which must work
    without the secrets at hand); ``herders=False`` skips stage 3.
    """
    from mirror.maker.config_lint import lint  # config_lint builds this module's Finding

    check = _Check(config, resolve_providers)
    check.findings += lint(config)
    pairs = check.structure(clusters, herders)
    if herders:
        plugins = plugins or Plugins()
        for pair in pairs:
            if pair in check.broken:
                continue
            check.herder(pair, plugins)
    return ConfigReport(config, pairs, check.findings, is_strict(config, strict))


@dataclass
class _Check:
    """One run of stages 2 and 3: the findings so far, and the pairs a structure error keeps from stage 3."""

    config: MirrorMakerConfig
    resolve_providers: bool
    findings: list[Finding] = field(default_factory=list)
    broken: set[SourceAndTarget] = field(default_factory=set)
    #: A ``${...}`` of the file did not resolve (reported at its line): the derived configs that carry it
    #: fail with it too, and are not reported again.
    unresolved: bool = False
    _seen: set[tuple[str | None, str]] = field(default_factory=set)
    _connector_props: dict[tuple[SourceAndTarget, str], dict[str, str]] = field(default_factory=dict)

    def add(self, stage: str, kind: str, key: str | None, message: str, *, flow: SourceAndTarget | None = None,
            context: str = "", severity: Severity = ERROR) -> None:
        """Record ``message`` (+ ``context``) at ``key``'s line, unless the same key said the same already."""
        if (key, message) in self._seen:
            return
        self._seen.add((key, message))
        file = self.config.properties_file
        self.findings.append(Finding(severity, stage, kind, self.config.source_name,
                                     file.line_of(key) if file else None, key, None if flow is None else str(flow),
                                     message + context))

    def add_error(self, stage: str, kind: str, exc: ConfigError, *, flow: SourceAndTarget | None = None) -> None:
        """A ConfigError the config's derivations raise, already ``file:line: ``-prefixed at its key."""
        message = str(exc).removeprefix(f"{self.config.location(exc.key)}: ")
        self.add(stage, kind, exc.key, message, flow=flow)

    def at(self, stage: str, kind: str, key: str | None, origin: str | None, message: str, *,
           flow: SourceAndTarget | None = None, context: str = "", severity: Severity = ERROR) -> None:
        """Record a derived config's complaint about ``key`` at ``origin``, the mm2.properties key it comes
        from, named as the operator wrote it (``A->B.transforms``, not ``transforms``); a message that names
        no key gets it in front."""
        if key and origin and origin != key:
            message = message.replace(f"configuration {key}", f"configuration {origin}")
        if origin and origin not in message:
            message = f"{origin}: {message}"
        self.add(stage, kind, origin, message, flow=flow, context=context, severity=severity)

    # ---- stage 2 ----

    def structure(self, clusters: Iterable[str] | None, herders: bool) -> list[SourceAndTarget]:
        config = self.config
        try:
            pairs = config.herder_pairs(clusters)
        except ConfigError as exc:
            self.add_error(STRUCTURE, "clusters", exc)
            pairs = []
        if self.resolve_providers:
            for key, value in config.raw_properties().items():
                if "${" in value:
                    try:
                        config.resolved({key: value})
                    except ConfigError as exc:
                        self.unresolved = True
                        self.add_error(STRUCTURE, "unresolved", exc)
        for alias in dict.fromkeys(a for p in pairs for a in (p.source, p.target)):
            users = [p for p in pairs if alias in (p.source, p.target)]
            if not self._cluster(alias, users):
                self.broken.update(users)
        raw = config.raw_properties()
        if REPLICATION_POLICY_CLASS in raw:
            try:
                validate_replication_policy_class(REPLICATION_POLICY_CLASS, raw[REPLICATION_POLICY_CLASS].strip())
            except ConfigError as exc:
                self.add(STRUCTURE, "replication-policy", REPLICATION_POLICY_CLASS, str(exc))
                self.broken.update(pairs)  # every connector would load it
        for pair in pairs:
            if not self._pair(pair):
                self.broken.add(pair)
        for pair in pairs:  # stage 3 validates the others' connector configs
            if pair in self.broken or not herders:
                for connector_class in CONNECTOR_CLASSES:
                    self._parse_connector(pair, connector_class, STRUCTURE)
        return pairs

    def _cluster(self, alias: str, users: list[SourceAndTarget]) -> bool:
        """Bootstrap servers and client security values of a cluster; False if something is wrong."""
        config = self.config
        props = config.cluster_props(alias)
        ok = True
        if not props.get(BOOTSTRAP_SERVERS, "").strip():
            ok = False
            self.findings.append(Finding(
                ERROR, STRUCTURE, "no-bootstrap", config.source_name,
                config.properties_file.line_of(CLUSTERS) if config.properties_file else None,
                f"{alias}.{BOOTSTRAP_SERVERS}", None,
                f"cluster {alias!r} has no bootstrap.servers: expected "
                f"'{alias}.bootstrap.servers = host:port[,host:port...]' (needed by "
                f"{', '.join(str(p) for p in users)})"))
        raw = config.raw_properties()
        for client in ("", *CLIENT_PREFIXES):
            subset = {k[len(client):]: v for k, v in props.items()
                      if k.startswith(client) and k[len(client):] in CLIENT_CONFIG_NAMES}
            for name, value in CLIENT_SECURITY_CONFIG_DEF.validate(subset).items():
                if value.errors:
                    ok = False
                    origin = next((c for c in (f"{alias}.{client}{name}", f"{alias}.{name}", name) if c in raw),
                                  None)
                    for error in value.errors:
                        self.at(STRUCTURE, "client-security", name, origin, error, context=f" (cluster {alias})")
        return ok

    def _pair(self, pair: SourceAndTarget) -> bool:
        """The worker and stored connector configs of a pair derive, with no secret stored in clear."""
        config = self.config
        ok = True
        try:
            config.worker_config(pair, resolve_providers=self.resolve_providers)  # a missing ${env:X} fails here
        except ConfigError as exc:
            ok = False
            if not self.unresolved:
                self.add_error(STRUCTURE, "worker-config", exc, flow=pair)
        for connector_class in CONNECTOR_CLASSES:
            try:
                config.connector_stored_config(pair, connector_class)
            except ConfigError as exc:
                ok = False
                self.add(STRUCTURE, "connector-config", exc.key, str(exc), flow=pair)
                continue
            props = config.connector_base_config(pair, connector_class)
            if self.resolve_providers:
                try:
                    props = config.resolved(props)
                except ConfigError as exc:
                    ok = False
                    if not self.unresolved:
                        self.add_error(STRUCTURE, "unresolved", exc, flow=pair)
                    continue
            self._connector_props[pair, connector_class] = props
        if stores_secrets_in_clear(config.get(CONFIGS_TOPIC_COMPATIBILITY)):
            for connector_class in CONNECTOR_CLASSES:
                for key, value in config.connector_base_config(pair, connector_class).items():
                    if literal_secret(key, value):
                        ok = False
                        origin = config.key_origin(key, pair) or key
                        self.add(STRUCTURE, "secret-in-clear", origin, (
                            f"{origin} holds a secret in clear, and the configs topic would carry it so that Java "
                            f"MirrorMaker nodes can run the connectors ({CONFIGS_TOPIC_COMPATIBILITY} = java, the "
                            f"default): take it from a config provider (config.providers; e.g. "
                            f"${{file:<path>:<key>}} with Kafka's FileConfigProvider, in a JAAS line "
                            f"password=\"${{file:<path>:<key>}}\"), or set {CONFIGS_TOPIC_COMPATIBILITY} = python "
                            f"if no Java node runs these flows"), flow=pair)
        return ok

    def _parse_connector(self, pair: SourceAndTarget, connector_class: str, stage: str) -> None:
        """Parse a connector config as the worker will (after provider resolution), every key at once."""
        props = self._connector_props.get((pair, connector_class))
        if props is None:
            return
        context = f" ({connector_simple_name(connector_class)} of flow {pair})"
        for key, value in CONNECTOR_CONFIG_DEFS[connector_class].validate(props).items():
            for error in value.errors:
                self.at(stage, "connector-config", key, self.config.key_origin(key, pair), error, flow=pair,
                        context=context)

    # ---- stage 3 ----

    def herder(self, pair: SourceAndTarget, plugins: Plugins) -> None:
        """What the herder of ``pair`` checks: its worker config, then Connect's validation of each connector."""
        config = self.config
        try:
            worker = wc.DistributedWorkerConfig(config.worker_config(pair, resolve_providers=self.resolve_providers))
        except ConfigError as exc:
            self.at(HERDER, "worker-refused", exc.key, config.key_origin(exc.key, pair, worker=True), str(exc),
                    flow=pair, context=f" (worker config of flow {pair})")
            for connector_class in CONNECTOR_CLASSES:  # no worker to validate them with: their own keys
                self._parse_connector(pair, connector_class, HERDER)
            return
        for connector_class in CONNECTOR_CLASSES:
            props = self._connector_props[pair, connector_class]
            infos = connector_validation.validate(plugins.new_connector(connector_class), props,
                                                  worker.override_policy,
                                                  exactly_once=worker.exactly_once_source_enabled)
            name = connector_simple_name(connector_class)
            for entry in infos.configs:
                key = entry["value"]["name"]
                origin = config.key_origin(key, pair)
                for error in entry["value"]["errors"]:
                    if (connector_class, key) in _SWITCHED_OFF:
                        self.add(HERDER, "switched-off", origin, f"{name} of flow {pair} will not run: {error}",
                                 flow=pair, severity=NOTICE)
                    else:
                        self.at(HERDER, "connector-refused", key, origin, error, flow=pair,
                                context=f" ({name} of flow {pair})")
