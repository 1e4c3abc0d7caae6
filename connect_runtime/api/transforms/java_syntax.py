"""Java's regular expressions, ``Matcher`` replacement strings and ``SimpleDateFormat`` patterns, in Python.

Why: transformation configs are written for Java Connect (``transforms.route.replacement = mirror.$1``),
and Python's syntax differs in a few places. Each function turns the Java text into something Python
runs, or raises :class:`ValueError` saying what it cannot take; the callers turn that into a
ConfigError naming the key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

#: Java's named group ``(?<name>...)``; not a lookbehind ``(?<=``/``(?<!``.
_JAVA_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """A Java regex as a Python pattern (named groups translated); ValueError if Python cannot run it."""
    try:
        return re.compile(_JAVA_NAMED_GROUP.sub("(?P<", pattern))
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc})") from None


#: A replacement as parts: literal text, or a group (number or name) of the match.
ReplacementPart = str | int


def parse_java_replacement(replacement: str, pattern: re.Pattern[str]) -> list[tuple[bool, ReplacementPart]]:
    """Java's ``Matcher.appendReplacement`` syntax: ``$1``, ``${name}``, ``\\`` escapes the next character.

    Returns ``(is_group, part)`` pairs; ValueError for a group the pattern does not have.
    """
    parts: list[tuple[bool, ReplacementPart]] = []
    literal: list[str] = []
    i, size = 0, len(replacement)
    while i < size:
        char = replacement[i]
        if char == "\\":
            if i + 1 >= size:
                raise ValueError("character to be escaped is missing at the end of the replacement")
            literal.append(replacement[i + 1])
            i += 2
            continue
        if char != "$":
            literal.append(char)
            i += 1
            continue
        group: ReplacementPart
        if i + 1 < size and replacement[i + 1] == "{":
            end = replacement.find("}", i + 2)
            if end < 0:
                raise ValueError("named capturing group is missing trailing '}'")
            group = replacement[i + 2:end]
            if group not in pattern.groupindex:
                raise ValueError(f"no group with name {{{group}}}")
            i = end + 1
        else:
            j = i + 1
            if j >= size or not replacement[j].isdigit():
                raise ValueError("illegal group reference: '$' must be followed by a group number or {name}")
            number = int(replacement[j])
            j += 1
            # As Java: take more digits while the number still names a group.
            while j < size and replacement[j].isdigit() and number * 10 + int(replacement[j]) <= pattern.groups:
                number = number * 10 + int(replacement[j])
                j += 1
            if number > pattern.groups:
                raise ValueError(f"no group {number}: the regex has {pattern.groups}")
            group, i = number, j
        if literal:
            parts.append((False, "".join(literal)))
            literal = []
        parts.append((True, group))
    if literal:
        parts.append((False, "".join(literal)))
    return parts


def expand(parts: list[tuple[bool, ReplacementPart]], match: re.Match[str]) -> str:
    return "".join((match.group(part) or "") if is_group else str(part) for is_group, part in parts)


_DATE_FIELDS: dict[str, Callable[[datetime], str]] = {
    "yyyy": lambda d: f"{d.year:04d}", "yy": lambda d: f"{d.year % 100:02d}",
    "MM": lambda d: f"{d.month:02d}", "M": lambda d: str(d.month),
    "dd": lambda d: f"{d.day:02d}", "d": lambda d: str(d.day),
    "HH": lambda d: f"{d.hour:02d}", "H": lambda d: str(d.hour),
    "mm": lambda d: f"{d.minute:02d}", "m": lambda d: str(d.minute),
    "ss": lambda d: f"{d.second:02d}", "s": lambda d: str(d.second),
    "SSS": lambda d: f"{d.microsecond // 1000:03d}",
}


def parse_java_date_format(pattern: str) -> list[Callable[[datetime], str]]:
    """A ``SimpleDateFormat`` pattern as a list of formatters (year, month, day, hour, minute, second,
    millisecond fields; quoted and other non-letter text kept). ValueError for another letter."""
    out: list[Callable[[datetime], str]] = []
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        if char == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise ValueError("unterminated quote")
            text = "'" if end == i + 1 else pattern[i + 1:end]
            out.append(_literal(text))
            i = end + 1
        elif char.isascii() and char.isalpha():
            j = i
            while j < size and pattern[j] == char:
                j += 1
            run = pattern[i:j]
            field = _DATE_FIELDS.get(run)
            if field is None:
                raise ValueError(f"unsupported date pattern {run!r} (supported: {', '.join(_DATE_FIELDS)}, "
                                 "quoted text)")
            out.append(field)
            i = j
        else:
            out.append(_literal(char))
            i += 1
    return out


def _literal(text: str) -> Callable[[datetime], str]:
    return lambda _moment: text
