"""Java ``.properties`` files, read exactly as Java reads them, with line numbers kept for errors.

``mm2.properties`` and Connect worker files are Java properties files, so they are parsed by the
``javaproperties`` library rather than by hand: line continuations, escapes, ``key: value`` and
``key value`` forms, comments only at the start of a line and *kept trailing whitespace* all behave
as in ``java.util.Properties``. The line on which each key starts is recorded so that a bad value can
be reported as ``mm2.properties:12: ...``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from connect_runtime.api.errors import ConfigError, one_line


@dataclass(frozen=True)
class PropertiesFile(Mapping[str, str]):
    """The key/value pairs of a properties file (last definition wins, as in Java) plus their lines.

    ``entries`` keeps every definition in file order, ``(key, line)``, the overridden ones included,
    so that a check can account for every line (a key set twice: the earlier line has no effect).
    """

    path: str
    props: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    entries: tuple[tuple[str, int], ...] = ()

    def __getitem__(self, key: str) -> str:
        return self.props[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.props)

    def __len__(self) -> int:
        return len(self.props)

    @property
    def name(self) -> str:
        """The file name as the user gave it, for messages."""
        return self.path

    def line_of(self, key: str | None) -> int | None:
        """The line where ``key`` is defined, or ``None`` if it is not in the file."""
        return None if key is None else self.lines.get(key)

    def location(self, key: str | None) -> str:
        """``file:line`` for a key defined in the file, else just ``file``."""
        line = self.line_of(key)
        return self.path if line is None else f"{self.path}:{line}"


def parse_properties(text: str, path: str = "<string>") -> PropertiesFile:
    """Parse properties text; ``path`` is only used in the result and in messages."""
    import javaproperties  # local: keeps the api package free of third-party imports at import time

    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    entries: list[tuple[str, int]] = []
    line = 1
    try:
        for element in javaproperties.parse(text):
            if isinstance(element, javaproperties.KeyValue):
                values[element.key] = element.value
                lines[element.key] = line
                entries.append((element.key, line))
            line += _count_lines(element.source)
    except ValueError as exc:  # e.g. a malformed \\uXXXX escape
        raise ConfigError(f"{path}:{line}: cannot parse properties: {exc}") from exc
    return PropertiesFile(path, values, lines, tuple(entries))


def load_properties(path: str | Path) -> PropertiesFile:
    """Read a properties file; a missing or unreadable file is a :class:`ConfigError` naming it."""
    name = one_line(str(path))  # a name with a line break still makes one error line
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise ConfigError(f"{name}: file not found") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{name}: is a directory, not a properties file") from exc
    except PermissionError as exc:
        raise ConfigError(f"{name}: cannot read file: permission denied") from exc
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read file: {exc.strerror or exc}") from exc
    except ValueError as exc:  # a NUL byte in the path: no such file can exist
        raise ConfigError(f"{str(path)!r}: not a valid file name ({exc})") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # Kafka's Utils.loadProps reads an InputStream, i.e. ISO-8859-1; accept such files as Java does.
        text = data.decode("latin-1")
    return parse_properties(text, name)


def _count_lines(source: str) -> int:
    """Physical lines in an element's source text (``\\r\\n``, ``\\r`` and ``\\n`` all end a line)."""
    return len(source.replace("\r\n", "\n").replace("\r", "\n").splitlines()) if source else 0
