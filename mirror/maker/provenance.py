"""Where each effective setting of a herder comes from: "why is my flush interval 60 s" has an answer.

For each herder (flow), ``mirror config show`` lists the worker settings that decide its guarantees and
its behaviour in a rebalance (offset flush, exactly-once, rebalance delays, internal REST...) and the
flow settings of its connectors, each with its value and its source:

* ``default`` — the ConfigDef default (nothing in the file);
* ``MM2 default`` — what the driver fills in (``group.id = <source>-mm2``, ``enabled = false``...);
* ``top level`` / ``cluster prefix B.`` / ``flow prefix A->B.`` — the line of the file that set it;

plus the lines that set the same key where MM2 does not read it, so a dropped key is seen beside the
value it failed to change. Secrets print as ``[hidden]``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from connect_runtime.api.secrets import is_sensitive_key
from connect_runtime.runtime import worker_config as wc
from mirror.config import checkpoint, heartbeat, source
from mirror.config.client_keys import CLIENT_CONFIG_NAMES
from mirror.config.mirror_maker_config import (
    ALL_CONNECTOR_CONFIG_NAMES,
    CHECKPOINT_CONNECTOR_CLASS,
    CONFIG_DEF,
    ENABLE_INTERNAL_REST,
    HEARTBEAT_CONNECTOR_CLASS,
    SOURCE_CONNECTOR_CLASS,
    WORKER_PREFIXES,
    MirrorMakerConfig,
    SourceAndTarget,
)

#: The worker settings shown per herder: guarantees, rebalances, the group and its topics.
WORKER_SETTINGS: tuple[str, ...] = (
    wc.OFFSET_FLUSH_INTERVAL_MS, wc.OFFSET_FLUSH_TIMEOUT_MS, wc.EXACTLY_ONCE_SOURCE_SUPPORT,
    wc.SCHEDULED_REBALANCE_MAX_DELAY_MS, wc.SCHEDULED_REBALANCE_CRASH_DELAY_MS, wc.SESSION_TIMEOUT_MS,
    wc.HEARTBEAT_INTERVAL_MS, wc.REBALANCE_TIMEOUT_MS, ENABLE_INTERNAL_REST, wc.GROUP_ID, wc.BOOTSTRAP_SERVERS,
    "security.protocol", wc.CONFIG_TOPIC, wc.OFFSET_TOPIC, wc.STATUS_TOPIC, wc.OFFSET_RF, wc.TASK_SHUTDOWN_TIMEOUT_MS,
    wc.CONNECTOR_CLIENT_POLICY,
)

#: The connector settings shown per herder, with the connector whose ConfigDef gives the default.
FLOW_SETTINGS: tuple[tuple[str, str], ...] = (
    ("enabled", SOURCE_CONNECTOR_CLASS), ("tasks.max", SOURCE_CONNECTOR_CLASS), ("topics", SOURCE_CONNECTOR_CLASS),
    ("exactly.once.support", SOURCE_CONNECTOR_CLASS), ("transaction.boundary", SOURCE_CONNECTOR_CLASS),
    ("replication.factor", SOURCE_CONNECTOR_CLASS), ("offset.lag.max", SOURCE_CONNECTOR_CLASS),
    ("groups", CHECKPOINT_CONNECTOR_CLASS), ("emit.checkpoints.interval.seconds", CHECKPOINT_CONNECTOR_CLASS),
    ("sync.group.offsets.enabled", CHECKPOINT_CONNECTOR_CLASS), ("emit.heartbeats.enabled", HEARTBEAT_CONNECTOR_CLASS),
)

_DEFS = {SOURCE_CONNECTOR_CLASS: source.TASK_CONFIG_DEF, CHECKPOINT_CONNECTOR_CLASS: checkpoint.TASK_CONFIG_DEF,
         HEARTBEAT_CONNECTOR_CLASS: heartbeat.CONFIG_DEF}


@dataclass(frozen=True)
class Setting:
    """One effective setting of a herder: its value, where it came from, what was written in vain."""

    key: str
    value: str | None
    source: str
    location: str | None = None
    ignored: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "ignored": list(self.ignored)}

    def text(self) -> str:
        where = f"{self.source} ({self.location})" if self.location else self.source
        line = f"{self.key} = {'' if self.value is None else self.value}  # {where}"
        return line + "".join(f"; not applied: {i}" for i in self.ignored)


def worker_settings(config: MirrorMakerConfig, pair: SourceAndTarget) -> list[Setting]:
    """The herder's effective worker settings (it runs on the target cluster), each with its source."""
    raw = config.raw_properties()
    worker = config.worker_config(pair, resolve_providers=False)
    out = []
    for key in WORKER_SETTINGS:
        if key == ENABLE_INTERNAL_REST:
            out.append(_driver_setting(config, key, pair))
            continue
        cluster_key = f"{pair.target}.{key}"
        if key.startswith(WORKER_PREFIXES) and key in raw:
            origin, source_name = key, "top level"
        elif cluster_key in raw:
            origin, source_name = cluster_key, f"cluster prefix {pair.target}."
        elif key in CLIENT_CONFIG_NAMES and key in raw:
            origin, source_name = key, "top level"
        else:
            origin, source_name = None, "MM2 default" if key in worker else "default"
        value = worker[key] if key in worker else _default(key)
        ignored = [c for c in (key, f"{pair}.{key}") if c in raw and c != origin
                   and not (c == key and key in CLIENT_CONFIG_NAMES)]
        out.append(_setting(config, key, value, source_name, origin, ignored))
    return out


def flow_settings(config: MirrorMakerConfig, pair: SourceAndTarget) -> list[Setting]:
    """The flow's effective connector settings, each with its source."""
    raw = config.raw_properties()
    out = []
    for key, connector_class in FLOW_SETTINGS:
        props = config.connector_base_config(pair, connector_class)
        flow_key = f"{pair}.{key}"
        if flow_key in raw:
            origin, source_name = flow_key, f"flow prefix {pair}."
        elif key in raw and key in ALL_CONNECTOR_CONFIG_NAMES:
            origin, source_name = key, "top level"
        else:
            origin, source_name = None, "MM2 default" if key in props else "default"
        definition = _DEFS[connector_class]
        value = props.get(key) if key in props else (
            definition[key].default_string() if key in definition else None)
        ignored = [c for c in (f"{pair.source}.{key}", f"{pair.target}.{key}") if c in raw]
        out.append(_setting(config, key, value, source_name, origin, ignored))
    return out


def _driver_setting(config: MirrorMakerConfig, key: str, pair: SourceAndTarget) -> Setting:
    raw = config.raw_properties()
    ignored = [c for c in (f"{pair.target}.{key}", f"{pair.source}.{key}", f"{pair}.{key}") if c in raw]
    if key in raw:
        return _setting(config, key, raw[key].strip(), "top level", key, ignored)
    return _setting(config, key, CONFIG_DEF[key].default_string(), "default", None, ignored)


def _default(key: str) -> str | None:
    for definition in (wc.DISTRIBUTED_CONFIG_DEF, CONFIG_DEF):
        if key in definition:
            return definition[key].default_string()
    return None


def _setting(config: MirrorMakerConfig, key: str, value: str | None, source_name: str, origin: str | None,
             ignored: list[str]) -> Setting:
    shown = "[hidden]" if value is not None and is_sensitive_key(key) else value
    return Setting(key, shown, source_name, config.location(origin) + f" {origin}" if origin else None,
                   tuple(f"{config.location(k)} {k}" for k in ignored))
