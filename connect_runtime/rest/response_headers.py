"""``response.http.headers.config``: headers added to every REST response (Connect's KIP-577).

Connect hands the value to Jetty's HeaderFilter: a comma-separated list of ``<action> <name>: <value>``
with the actions ``set`` (replace), ``add`` (append), ``setDate`` and ``addDate`` (the value is a
number of milliseconds from now, written as an HTTP date). Operators use it for ``X-Frame-Options``,
``Strict-Transport-Security``, ``Cache-Control`` and the like. A malformed entry stops the process at
start with one line naming the key, as Connect's validator does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import formatdate

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connect_runtime.api.errors import ConfigError

RESPONSE_HTTP_HEADERS_CONFIG = "response.http.headers.config"
_ACTIONS = ("set", "add", "setDate", "addDate")


@dataclass(frozen=True)
class HeaderAction:
    action: str
    name: str
    value: str

    def apply(self, headers: MutableHeaders) -> None:
        value = self.value
        if self.action.endswith("Date"):
            value = formatdate(time.time() + int(value) / 1000, usegmt=True)
        if self.action.startswith("set"):
            headers[self.name] = value
        else:
            headers.append(self.name, value)


def parse_header_config(text: str | None) -> tuple[HeaderAction, ...]:
    """The entries of ``response.http.headers.config``; ConfigError naming the key for a bad one."""
    actions = []
    for entry in (e.strip() for e in (text or "").split(",")):
        if not entry:
            continue
        action, _, rest = entry.partition(" ")
        name, colon, value = rest.partition(":")
        if action not in _ACTIONS or not colon or not name.strip():
            raise ConfigError(f"Invalid value {entry!r} for configuration {RESPONSE_HTTP_HEADERS_CONFIG}: "
                              f"expected '<action> <header name>: <header value>' with the action one of "
                              f"{', '.join(_ACTIONS)}", RESPONSE_HTTP_HEADERS_CONFIG)
        if action.endswith("Date") and not value.strip().lstrip("-").isdigit():
            raise ConfigError(f"Invalid value {entry!r} for configuration {RESPONSE_HTTP_HEADERS_CONFIG}: "
                              f"{action} takes a number of milliseconds", RESPONSE_HTTP_HEADERS_CONFIG)
        actions.append(HeaderAction(action, name.strip(), value.strip()))
    return tuple(actions)


class ResponseHeaders:
    """ASGI middleware applying the configured header actions to every HTTP response."""

    def __init__(self, app: ASGIApp, actions: tuple[HeaderAction, ...]) -> None:
        self.app = app
        self.actions = actions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for action in self.actions:
                    action.apply(headers)
            await send(message)

        await self.app(scope, receive, send_with_headers)
