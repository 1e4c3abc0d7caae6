"""The driver's REST server: its security, and how its herders reach the leader (KIP-710).

* Listeners: every ``listeners`` entry is served; without the key the node binds to loopback unless
  internal REST is on (:func:`rest_listeners`).
* Security (who may change what, HTTPS, CORS) comes from mm2.properties through
  :meth:`RestSecurity.from_props`, the same keys ``connect-distributed`` reads.
* ``dedicated.mode.enable.internal.rest`` is honoured as Java MM2 honours it: without it the internal
  endpoints (``POST /<src>/<tgt>/connectors/<c>/tasks``, ``PUT .../fence``) are not served and a follower
  cannot hand task configs to the leader. Unlike Java, that does not stall a flow: the node tells the
  group so in its JoinGroup and the leader keeps every connector on itself (docs/architecture.md,
  "Several nodes without internal REST"); its followers run tasks only. Should a follower still run a
  connector that computes new task configs (a transitional state), it logs Java's advice once, retries,
  and reports the stall (:mod:`connect_runtime.runtime.leader.stalled_handoffs`). The public API (statuses,
  configs, metrics, /ui) is served either way: that is our deliberate difference from Java.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.errors import ConfigError, ConnectError
from connect_runtime.rest.security import RestSecurity
from connect_runtime.rest.server import DEFAULT_LISTENERS, ListenerAddress, has_https_listener, parse_listeners
from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.storage.config_records import SessionKey
from mirror.config.mirror_maker_config import ENABLE_INTERNAL_REST, MirrorMakerConfig

logger = logging.getLogger(__name__)

#: Java's ``DistributedHerder`` message for a follower without inter-worker communication.
NO_INTERNAL_REST_MESSAGE = (
    "This worker is not able to communicate with the leader of the cluster, which is required for "
    "dynamically-reconfiguring connectors. If running MirrorMaker 2 in dedicated mode, consider enabling "
    f"inter-worker communication via the '{ENABLE_INTERNAL_REST}' property.")

#: Java's message for a follower's exactly-once source task without inter-worker communication.
NO_INTERNAL_REST_FENCING_MESSAGE = (
    "This worker is not able to communicate with the leader of the cluster, which is required for "
    "exactly-once source tasks. If running MirrorMaker 2 in dedicated mode, consider enabling "
    f"inter-worker communication via the '{ENABLE_INTERNAL_REST}' property.")


def install_code_policy(config: MirrorMakerConfig) -> plugin_allowlist.CodePolicy:
    """Before any herder reads a connector config: configs submitted through REST may name only registered
    plugins, ``plugin.allowlist`` and the classes mm2.properties names itself (which keeps its full
    power); returns the previous policy, for :meth:`MirrorMaker.stop` to put back."""
    policy = plugin_allowlist.operator_policy(config.raw_properties())
    logger.info("Plugins: %s", policy.describe())
    return plugin_allowlist.install(policy)


def rest_listeners(config: MirrorMakerConfig, rest_port: int | None) -> tuple[str, bool]:
    """The REST listeners: every mm2.properties ``listeners`` entry, the first one's port overridden by
    --rest-port; and whether the node binds to loopback only because nothing asked for more.

    Without ``listeners`` the node serves its API (statuses, /metrics, /ui) on loopback only, unless
    ``dedicated.mode.enable.internal.rest`` is on (other nodes must reach it then): Java's dedicated MM2
    opens no port at all without internal REST, so nothing is exposed that an operator did not ask for.
    """
    raw = str(config.raw_properties().get("listeners") or "").strip()
    loopback_by_default = not raw and not config.enable_internal_rest
    if not raw:
        raw = "http://127.0.0.1:8083" if loopback_by_default else DEFAULT_LISTENERS
    try:
        addresses = parse_listeners(raw)
    except ConfigError as exc:
        raise ConfigError(f"{config.location('listeners')}: {exc}", "listeners") from exc
    first = addresses[0]
    if rest_port is not None:
        addresses[0] = ListenerAddress(first.scheme, first.host, rest_port)
    entries = (f"{a.scheme}://{f'[{a.host}]' if ':' in a.host else a.host}:{a.port}" for a in addresses)
    return ",".join(entries), loopback_by_default


def rest_security(config: MirrorMakerConfig, listeners: str) -> RestSecurity:
    """The REST security of this node; ConfigError naming ``mm2.properties:<line>``."""
    try:
        return RestSecurity.from_props(config.raw_properties(), https=has_https_listener(listeners))
    except ConfigError as exc:
        raise ConfigError(f"{config.location(exc.key)}: {exc}", exc.key) from exc


class NoInternalRestForwarder(TaskConfigForwarder):
    """A follower's task-config forwarder when internal REST is off: it refuses, as Java's herder does.

    The error is logged once per connector (the herder retries every second) and the retry is kept,
    so the connector's tasks appear as soon as it runs on the leader.
    """

    reaches_leader = False

    def __init__(self) -> None:
        super().__init__(timeout_s=0.0)
        self._told: set[str] = set()
        self._told_lock = threading.Lock()

    def forward(self, leader_url: str, connector: str, configs: list[dict[str, str]], session_key: SessionKey,
                on_failure: Callable[[], None], on_outcome: Callable[[str | None], None] | None = None) -> None:
        with self._told_lock:
            first = connector not in self._told
            self._told.add(connector)
        logger.log(logging.ERROR if first else logging.DEBUG, "Connector %s: %s", connector,
                   NO_INTERNAL_REST_MESSAGE)
        if on_outcome is not None:
            on_outcome(NO_INTERNAL_REST_MESSAGE)
        on_failure()

    def fence(self, leader_url: str, connector: str, session_key: SessionKey,
              on_done: Callable[[ConnectError | None], None]) -> None:
        """Exactly-once tasks of a new generation on a follower wait for a fencing only the leader can do."""
        on_done(ConnectError(NO_INTERNAL_REST_FENCING_MESSAGE))


def task_config_forwarder(config: MirrorMakerConfig, security: RestSecurity, name: str,
                          timeout_s: float) -> TaskConfigForwarder:
    """How a herder's follower sends task configs to the leader (or refuses to, see the module docstring)."""
    if not config.enable_internal_rest:
        return NoInternalRestForwarder()
    client = None
    if security.client_ssl is not None:
        import httpx  # here, not at start-up: it costs ~100 ms and most nodes never forward

        client = httpx.Client(verify=security.client_ssl)
    return TaskConfigForwarder(timeout_s, name=name, client=client)
