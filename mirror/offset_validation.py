"""Checks on the source partition / offset maps users write through the KIP-875 REST API (``MirrorUtils``).

The maps written by MM2 live in ``mm2-offsets.<src>.internal`` and can be edited by users through the
KIP-875 REST API; the validators here refuse maps a task could not use later, with Java's
messages. A null offset (reset) is always accepted so that garbage can still be cleaned up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_runtime.api.errors import BadRequestError
from connect_runtime.api.records import SourceMap
from mirror.connect_offset_keys import OFFSET_KEY, PARTITION_KEY

_INT32_MAX = 2**31 - 1


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _p(partition: SourceMap) -> str:
    return f"Source partition {dict(partition)}"


def _o(partition: SourceMap, offset: Mapping[str, Any]) -> str:
    return f"Source offset {dict(offset)} for source partition {dict(partition)}"


def validate_partition_string(partition: SourceMap, key: str) -> None:
    if key not in partition:
        raise BadRequestError(f"{_p(partition)} is missing the '{key}' key, which is required")
    value = partition[key]
    if not isinstance(value, str):
        raise BadRequestError(f"{_p(partition)} has an invalid value {value!r} for the '{key}' key, "
                              "which must be a string")


def validate_partition_partition(partition: SourceMap) -> None:
    if PARTITION_KEY not in partition:
        raise BadRequestError(f"{_p(partition)} is missing the '{PARTITION_KEY}' key, which is required")
    value = partition[PARTITION_KEY]
    if not _is_int(value) or value > _INT32_MAX:
        raise BadRequestError(f"{_p(partition)} has an invalid value {value!r} for the 'partition' key, "
                              "which must be an integer")
    if value < 0:
        raise BadRequestError(f"{_p(partition)} has an invalid value {value!r} for the 'partition' key, "
                              "which must be a non-negative integer")


def validate_offset(partition: SourceMap, offset: Mapping[str, Any], only_offset_zero: bool) -> None:
    if OFFSET_KEY not in offset:
        raise BadRequestError(f"{_o(partition, offset)} is missing the '{OFFSET_KEY}' key, which is required")
    value = offset[OFFSET_KEY]
    if not _is_int(value):
        raise BadRequestError(f"{_o(partition, offset)} has an invalid value {value!r} for the 'offset' "
                              "key, which must be an integer")
    if only_offset_zero and value != 0:
        raise BadRequestError(f"{_o(partition, offset)} has an invalid value {value!r} for the 'offset' "
                              "key; the only accepted value is 0")
    if not only_offset_zero and value < 0:
        raise BadRequestError(f"{_o(partition, offset)} has an invalid value {value!r} for the 'offset' "
                              "key, which must be a non-negative integer")


OffsetsToAlter = Mapping[str, tuple[SourceMap, Mapping[str, Any] | None]]


def validate_offsets(offsets: OffsetsToAlter, string_keys: tuple[str, ...], with_partition: bool,
                     only_offset_zero: bool) -> None:
    """Validate every (partition, offset) a user wants to write; tombstones (None) always pass."""
    for partition, offset in offsets.values():
        if offset is None:
            continue
        if partition is None:
            raise BadRequestError("Source partition may not be null")
        for key in string_keys:
            validate_partition_string(partition, key)
        if with_partition:
            validate_partition_partition(partition)
        validate_offset(partition, offset, only_offset_zero)
