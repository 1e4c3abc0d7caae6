"""Connect's transformation config model, and the chain a task's records go through.

The keys, as in Connect (``ConnectorConfig.enrich`` and ``TransformationStage``)::

    transforms = dropTombstones,route           aliases, applied in this order
    transforms.route.type = org.apache.kafka.connect.transforms.RegexRouter
    transforms.route.<key> = ...                the transformation's own keys
    transforms.dropTombstones.predicate = isTombstone
    transforms.dropTombstones.negate = false    apply where the predicate is false instead
    predicates = isTombstone
    predicates.isTombstone.type = org.apache.kafka.connect.transforms.predicates.RecordIsTombstone

A transformation is configured with every key under its prefix except ``predicate`` and ``negate``
(``type`` included, as Java does). One builder serves validation (every error, per key, for REST's
ConfigInfos and ``mm2.properties`` checks) and the worker (the chain of a starting task), so what
validates is what runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect_runtime.api.config import Type, parse_value
from connect_runtime.api.connector_config import PREDICATES, TRANSFORMS
from connect_runtime.api.errors import ConfigError, ConnectError
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.api.records import SourceRecord
from connect_runtime.api.transforms.base import Predicate, Transformation
from connect_runtime.api.transforms.registry import resolve

logger = logging.getLogger(__name__)

TYPE, PREDICATE, NEGATE = "type", "predicate", "negate"


class TransformError(ConnectError):
    """A transformation or predicate raised on a record (``errors.tolerance`` decides what follows)."""


class TransformationChain:
    """The stages of one task, applied in order; None from any stage drops the record."""

    __slots__ = ("_predicates", "_stages")

    def __init__(self, stages: list[tuple[str, Transformation, Predicate | None, bool]],
                 predicates: list[Predicate]) -> None:
        self._stages = stages
        self._predicates = predicates

    @property
    def aliases(self) -> list[str]:
        return [alias for alias, _, _, _ in self._stages]

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        """The record to write, or None to drop it; TransformError naming the stage if one raises."""
        current: SourceRecord | None = record
        for alias, transformation, predicate, negate in self._stages:
            try:
                if predicate is None or predicate.test(current) is not negate:  # type: ignore[arg-type]
                    current = transformation.apply(current)  # type: ignore[arg-type]
            except Exception as exc:
                raise TransformError(f"transformation {alias} failed on a record of topic {record.topic}: "
                                     f"{_one_line(exc)}") from exc
            if current is None:
                return None
        return current

    def close(self) -> None:
        for alias, transformation, _, _ in self._stages:
            _close(transformation, f"transformation {alias}")
        for predicate in self._predicates:
            _close(predicate, "predicate")


def build_chain(config: Mapping[str, Any]) -> TransformationChain | None:
    """The chain ``config`` declares (None without ``transforms``); ConfigError for the first mistake."""
    errors: dict[str, list[str]] = {}
    chain = _build(config, errors)
    for key, messages in errors.items():
        if chain is not None:
            chain.close()
        raise ConfigError(messages[0], key)
    return chain


def validate_chain(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every error of the transformation and predicate keys of ``config``, by key (empty: valid)."""
    errors: dict[str, list[str]] = {}
    chain = _build(config, errors)
    if chain is not None:
        chain.close()
    return errors


def _aliases(config: Mapping[str, Any], key: str, errors: dict[str, list[str]]) -> list[str]:
    try:
        aliases: list[str] = parse_value(key, Type.LIST, config.get(key)) or []
    except ConfigError as exc:
        errors.setdefault(key, []).append(str(exc))
        return []
    duplicates = sorted({a for a in aliases if aliases.count(a) > 1})
    if duplicates:  # the same words as the key's ConfigDef validator, so REST lists the error once
        errors.setdefault(key, []).append(f"Invalid value {','.join(aliases)} for configuration {key}: "
                                          f"duplicate alias {', '.join(duplicates)}")
        return []
    return aliases


def _build(config: Mapping[str, Any], errors: dict[str, list[str]]) -> TransformationChain | None:
    transform_aliases = _aliases(config, TRANSFORMS, errors)
    predicate_aliases = _aliases(config, PREDICATES, errors)
    predicates: dict[str, Predicate] = {}
    for alias in predicate_aliases:
        predicate = _instance("predicate", f"{PREDICATES}.{alias}.", config, errors)
        if predicate is not None:
            predicates[alias] = predicate
    stages: list[tuple[str, Transformation, Predicate | None, bool]] = []
    for alias in transform_aliases:
        prefix = f"{TRANSFORMS}.{alias}."
        transformation = _instance("transformation", prefix, config, errors)
        predicate_alias = str(config.get(prefix + PREDICATE) or "").strip()
        negate = False
        try:
            negate = bool(parse_value(prefix + NEGATE, Type.BOOLEAN, config.get(prefix + NEGATE, "false")))
        except ConfigError as exc:
            errors.setdefault(prefix + NEGATE, []).append(str(exc))
        predicate = None
        if predicate_alias:
            predicate = predicates.get(predicate_alias)
            if predicate_alias not in predicate_aliases:
                declared = ", ".join(predicate_aliases) or "none"
                errors.setdefault(prefix + PREDICATE, []).append(
                    f"Invalid value {predicate_alias} for configuration {prefix + PREDICATE}: not a predicate "
                    f"alias declared in {PREDICATES} (declared: {declared})")
        elif negate:
            errors.setdefault(prefix + NEGATE, []).append(
                f"Invalid value true for configuration {prefix + NEGATE}: negate needs {prefix + PREDICATE}")
        if transformation is not None:
            stages.append((alias, transformation, predicate, negate))
    if errors:
        for _, transformation, _, _ in stages:
            _close(transformation, "transformation")
        for predicate in predicates.values():
            _close(predicate, "predicate")
        return None
    return TransformationChain(stages, list(predicates.values())) if stages else None


def _instance(kind: str, prefix: str, config: Mapping[str, Any], errors: dict[str, list[str]]) -> Any:
    """Resolve, instantiate and configure one transformation or predicate; None (errors filed) if it fails."""
    type_key = prefix + TYPE
    name = config.get(type_key)
    if name is None or not str(name).strip():
        errors.setdefault(type_key, []).append(
            f"Missing required configuration {type_key!r} which has no default value (the class of this {kind})")
        return None
    try:
        instance = resolve(kind, str(name))()
    except ValueError as exc:
        errors.setdefault(type_key, []).append(f"Invalid value {name} for configuration {type_key}: {exc}")
        return None
    except Exception as exc:
        errors.setdefault(type_key, []).append(
            f"Invalid value {name} for configuration {type_key}: could not be instantiated: {_one_line(exc)}")
        return None
    own = {k: str(v) for k, v in with_prefix_stripped(config, prefix).items() if k not in (PREDICATE, NEGATE)}
    try:
        instance.configure(own)
    except ConfigError as exc:
        key = prefix + exc.key if exc.key else type_key
        message = _one_line(exc)
        if exc.key:
            message = message.replace(f"configuration {exc.key}", f"configuration {key}").replace(
                f"'{exc.key}'", f"'{key}'")
        errors.setdefault(key, []).append(message)
        return None
    except Exception as exc:  # a custom class's own check
        errors.setdefault(type_key, []).append(f"{name} ({type_key}) refused its configuration: {_one_line(exc)}")
        return None
    return instance


def _close(instance: Any, what: str) -> None:
    try:
        close = getattr(instance, "close", None)
        if callable(close):
            close()
    except Exception:  # closing must not stop the task's shutdown
        logger.exception("closing %s failed", what)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
