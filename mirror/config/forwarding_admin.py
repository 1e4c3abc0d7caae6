"""``forwarding.admin.class`` (KIP-787): the admin client every MM2 admin call goes through, as a Python class.

Java MM2 lets an operator route topic creation, config and ACL changes through their own ``Admin``
(e.g. to create topics through a provisioning service instead of the brokers) by naming a subclass of
``ForwardingAdmin``. Here the equivalent is a subclass of :class:`connect_runtime.clients.admin.TopicAdmin`,
named by a dotted Python path (``package.module.Class`` or ``package.module:Class``) and built as
``cls(librdkafka_admin_config, timeout_s=...)``; override the methods to intercept. Java's default class
name maps to :class:`TopicAdmin` itself, so an unmodified Java ``mm2.properties`` works; any other Java
class name is refused at start, naming the key, because it cannot run here.
"""

from __future__ import annotations

from typing import Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.clients.admin import TopicAdmin
from mirror.client.plugins import load_class

FORWARDING_ADMIN_CLASS = "forwarding.admin.class"
FORWARDING_ADMIN_CLASS_DEFAULT = "org.apache.kafka.clients.admin.ForwardingAdmin"

_ALIASES: dict[str, type[TopicAdmin]] = {
    FORWARDING_ADMIN_CLASS_DEFAULT: TopicAdmin,
    "ForwardingAdmin": TopicAdmin,
}


def forwarding_admin_class(name: str | None) -> type[TopicAdmin]:
    """The admin class named by ``forwarding.admin.class``; ConfigError naming the key if it cannot load."""
    try:
        return load_class(name or FORWARDING_ADMIN_CLASS_DEFAULT, TopicAdmin, _ALIASES, "forwarding admin")
    except ValueError as exc:
        raise ConfigError(f"Invalid value {name!r} for configuration {FORWARDING_ADMIN_CLASS}: expected "
                          f"{FORWARDING_ADMIN_CLASS_DEFAULT} or a Python subclass of "
                          f"connect_runtime.clients.admin.TopicAdmin ({exc})", FORWARDING_ADMIN_CLASS) from exc


def validate_forwarding_admin_class(name: str, value: Any) -> None:
    """ConfigDef validator: the class must load (a typo fails at start, not at the first admin call)."""
    if value is not None:
        forwarding_admin_class(str(value))


validate_forwarding_admin_class.__doc__ = "a TopicAdmin subclass (dotted Python path)"
