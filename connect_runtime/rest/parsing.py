"""Request parsing for the REST layer: JSON bodies and query parameters, validated up front.

Every malformed input becomes a :class:`BadRequestError` whose message says what was expected, so the
client gets a 400 rather than a 500 from deep inside the herder. Connect's Jackson mapping coerces
JSON scalars into ``Map<String, String>`` values (``5`` -> ``"5"``, ``true`` -> ``"true"``) and rejects
objects and arrays; :func:`string_map` does the same, keeping the number's literal text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import parse_qsl

from starlette.datastructures import Headers

from connect_runtime.api.errors import BadRequestError, NotFoundError


class _Number(str):
    """A JSON number kept as its literal text, so config maps get ``"1e3"`` back, not ``"1000.0"``."""

    __slots__ = ()


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, _Number | int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def is_json_string(value: Any) -> bool:
    """A JSON string proper (not a number parsed as literal text)."""
    return isinstance(value, str) and not isinstance(value, _Number)


def parse_json(body: bytes, expected: str, *, literal_numbers: bool) -> Any:
    """Parse a request body; ``expected`` names what the endpoint wants (used in error messages)."""
    if not body.strip():
        raise BadRequestError(f"Request body is empty; expected {expected}")
    try:
        if literal_numbers:
            return json.loads(body, parse_int=_Number, parse_float=_Number, parse_constant=_reject_constant)
        return json.loads(body, parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise BadRequestError(f"Request body is not UTF-8 encoded JSON; expected {expected}") from exc
    except ValueError as exc:
        raise BadRequestError(f"Request body is not valid JSON ({exc}); expected {expected}") from exc


def _scalar_text(key: str, value: Any, what: str, allow_null: bool) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return str(value)  # also turns a _Number into a plain str
    if value is None and allow_null:
        return None
    raise BadRequestError(f"Value of '{key}' in {what} must be a string, got a JSON {json_type(value)}")


def string_map(value: Any, what: str, *, allow_null: bool = False) -> dict[str, str | None]:
    """Validate a JSON object of string values (``allow_null``: null values pass, as in PATCH)."""
    if not isinstance(value, dict):
        raise BadRequestError(f"Expected {what} as a JSON object of string values, "
                              f"got a JSON {json_type(value)}")
    return {str(k): _scalar_text(str(k), v, what, allow_null) for k, v in value.items()}


def strict_string_map(value: Any, what: str) -> dict[str, str]:
    """:func:`string_map` without nulls, typed as such."""
    out: dict[str, str] = {}
    for key, text in string_map(value, what).items():
        assert text is not None  # string_map(allow_null=False) never yields None
        out[key] = text
    return out


def plain(value: Any) -> Any:
    """Turn literal-number strings back into int/float (for bodies that hold real JSON values)."""
    if isinstance(value, _Number):
        text = str(value)
        try:
            return int(text)
        except ValueError:
            return float(text)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def parse_bool(name: str, raw: str) -> bool:
    """Connect query booleans; unlike Java's ``Boolean.valueOf`` a typo is a 400, not a silent false."""
    lowered = raw.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise BadRequestError(f"Query parameter '{name}' must be 'true' or 'false', got '{raw}'")


@dataclass(frozen=True, slots=True)
class Call:
    """One REST request as a sync handler sees it: everything already read from the socket.

    ``raw_path`` is the full, still percent-encoded path as the client sent it (namespace prefix
    included), which is what a forwarded request must repeat.
    """

    method: str
    raw_path: str
    path_params: Mapping[str, str]
    query: Sequence[tuple[str, str]]
    body: bytes
    headers: Headers

    @classmethod
    def build(cls, method: str, raw_path: str, path_params: Mapping[str, str], query_string: bytes,
              body: bytes, headers: Headers) -> Call:
        query = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
        return cls(method, raw_path, dict(path_params), tuple(query), body, headers)

    def param(self, name: str) -> str:
        return self.path_params[name]

    def int_param(self, name: str) -> int:
        """Integer path parameter; like JAX-RS a non-integer does not match the resource (404)."""
        raw = self.path_params[name]
        try:
            return int(raw)
        except ValueError as exc:
            raise NotFoundError(f"Path parameter '{name}' must be an integer, got '{raw}'") from exc

    def query_values(self, name: str) -> list[str]:
        return [v for k, v in self.query if k == name]

    def query_bool(self, name: str, default: bool) -> bool:
        values = self.query_values(name)
        return default if not values else parse_bool(name, values[0])

    def forward_flag(self) -> bool | None:
        """The ``forward`` query parameter: None on a client's request, True/False between workers."""
        values = self.query_values("forward")
        return None if not values else parse_bool("forward", values[0])

    def json(self, expected: str, *, literal_numbers: bool = True) -> Any:
        return parse_json(self.body, expected, literal_numbers=literal_numbers)
