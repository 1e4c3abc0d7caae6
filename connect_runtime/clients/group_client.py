"""The one module that touches kafka-python: its group coordinator, wrapped for Connect membership.

:mod:`connect_runtime.runtime.coordination.kafka_membership` holds Connect's membership logic (fencing, the
assignor, handing assignments to the herder); it talks to the broker only through
:class:`KafkaPythonCoordinator`, a small typed surface over kafka-python's ``BaseCoordinator``. kafka-python
has no public API for a custom group protocol, so this module relies on internals that may change in any
release. It was written for :data:`SUPPORTED_RANGE` (the pin in pyproject.toml) and refuses, at import, to
run against anything else or against a kafka-python whose internals it cannot find, so an upgrade fails
with one clear message instead of deep inside a rebalance.

The internals, and why each is needed (``_WorkerCoordinator`` overrides them):

* ``_perform_assignment(leader_id, protocol, members)``: ``BaseCoordinator``'s abstract leader hook;
  it is where the leader runs the incremental cooperative assignor over every member's metadata.
* ``_on_join_complete_async(generation, member_id, protocol, assignment)``: the hook that delivers
  this member's SyncGroup assignment.
* ``_do_join_and_sync_async()``: one JoinGroup + SyncGroup. kafka-python 3.0 keeps the join task
  across ``ensure_active_group`` calls, but a task that completes between two calls is found done by
  the next one, which starts a new exchange and drops the assignment. With a herder polling at a zero
  timeout that happens on nearly every rebalance (each JoinGroup of the leader starting yet another
  rebalance), so the override keeps a finished exchange until it has been consumed. It also marks the
  JoinGroup in flight, which extends the self-fencing deadline (heartbeats pause meanwhile).
* ``_process_sync_group_response(response, send_time)`` and ``_handle_heartbeat_response(response,
  send_time)``: the only places that see the *send time* of a request the broker answered. Self-fencing
  counts the session from there (the broker counts from the arrival, which is later); kafka-python's
  public ``heartbeat`` only records receive times.

Everything else used is public: ``KafkaNetClient(net=...)``, ``NetworkSelector.start`` (kafka-python's
own consumer starts its IO thread the same way), ``KafkaNetClient.get_broker_version``,
``BaseCoordinator.group_metadata`` (generation and member id, read under the coordinator's lock) with
``Generation.is_lost`` for what counts as a lost generation, and ``AbstractTokenProvider`` for
OAUTHBEARER tokens.

Its config. :func:`group_client_config` builds this client's keywords from the same Java properties the
worker's admin client is built from, through the same TLS and SASL translations as every librdkafka client
(:mod:`connect_runtime.clients.tls_properties`, :mod:`connect_runtime.clients.sasl_properties`), so both
log in alike; what kafka-python cannot do (a Kerberos key tab, librdkafka-only keys) is refused naming
this client, never left out.

Its logs. kafka-python logs every failed connection attempt at ERROR, most with the exception's
traceback, from several modules at once, about every 100 ms while a broker is unreachable: a 5 s network
cut gave about 180 ERROR lines and 96 tracebacks per node in the soak (``bench/soak.py``). After the first,
the same line tells an operator nothing, and a flapping link fills the disk. So records of the ``kafka``
loggers at WARNING and above pass a :class:`~connect_runtime.clients.librdkafka_logging.RepeatGate`, as
librdkafka's lines do: the first of each kind (logger, level and text with its numbers left out), then,
after the interval, the next one saying how many were held back. They lose their traceback (the message
names the error). INFO and below (coordinator found, joins, rebalances) pass untouched.
"""

from __future__ import annotations

import inspect
import logging
import re
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.api.errors import ConfigError, ConnectError
from connect_runtime.clients import factory, security_keys
from connect_runtime.clients.librdkafka_logging import DEFAULT_INTERVAL_S, RepeatGate
from connect_runtime.clients.sasl_properties import GROUP_CLIENT, TokenSource, kafka_python_sasl, sasl_login
from connect_runtime.clients.tls_properties import ssl_context, tls_settings
from connect_runtime.clients.versions import KAFKA_PYTHON, UnsupportedClientLibrary

logger = logging.getLogger(__name__)

#: The kafka-python releases this module was written for (connect_runtime/clients/versions.py).
SUPPORTED_RANGE = KAFKA_PYTHON.specifier
#: What a kafka-python outside that range raises at import.
UnsupportedKafkaPython = UnsupportedClientLibrary


def check_kafka_python_version(installed: str) -> None:
    """Raise :class:`UnsupportedKafkaPython` naming both versions unless ``installed`` is in range."""
    KAFKA_PYTHON.check(installed, "Connect group membership (it relies on that release's coordinator internals)")


#: BaseCoordinator internals ``_WorkerCoordinator`` overrides: name -> (is a coroutine function, parameters).
INTERNALS: dict[str, tuple[bool, tuple[str, ...]]] = {
    "_perform_assignment": (False, ("self", "leader_id", "protocol", "members")),
    "_on_join_complete_async": (True, ("self", "generation", "member_id", "protocol", "member_assignment_bytes")),
    "_do_join_and_sync_async": (True, ("self",)),
    "_process_sync_group_response": (False, ("self", "response", "send_time")),
    "_handle_heartbeat_response": (False, ("self", "response", "send_time")),
}
#: Public BaseCoordinator methods this module calls.
PUBLIC_METHODS = ("ensure_active_group", "poll_heartbeat", "need_rejoin", "request_rejoin", "reset_generation",
                  "stable", "group_metadata", "close")


def missing_internals(coordinator_class: type) -> list[str]:
    """What of :data:`INTERNALS` and :data:`PUBLIC_METHODS` ``coordinator_class`` lacks or has changed."""
    problems = [f"{name}()" for name in PUBLIC_METHODS if not callable(getattr(coordinator_class, name, None))]
    for name, (is_async, parameters) in INTERNALS.items():
        method = getattr(coordinator_class, name, None)
        if not callable(method):
            problems.append(f"{name}()")
            continue
        actual = (inspect.iscoroutinefunction(method), tuple(inspect.signature(method).parameters))
        if actual != (is_async, parameters):
            problems.append(f"{'async ' if actual[0] else ''}{name}({', '.join(actual[1])}) "
                            f"(expected {'async ' if is_async else ''}{name}({', '.join(parameters)}))")
    return problems


_NUMBERS = re.compile(r"\d+")


class KafkaPythonRepeatFilter(logging.Filter):
    """A logger filter (it runs once per record, where the record is made; never raises)."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._gate = RepeatGate(interval_s, clock)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        try:
            text = record.getMessage()
            held = self._gate.admit((record.name, record.levelno, _NUMBERS.sub("#", text)))
            if held is None:
                return False
            record.exc_info = record.exc_text = record.stack_info = None
            if held:
                record.msg, record.args = f"{text} ({held} more like this in the last {self.interval_s:.0f}s)", None
        except Exception:
            pass
        return True


#: The one filter every kafka-python logger gets (its rate limit spans the process).
KAFKA_PYTHON_FILTER = KafkaPythonRepeatFilter()


def limit_kafka_python_logs() -> None:
    """Put :data:`KAFKA_PYTHON_FILTER` on every kafka-python logger created so far (idempotent; kafka-python
    makes one logger per module, at import)."""
    for name, existing in list(logging.Logger.manager.loggerDict.items()):
        if ((name == "kafka" or name.startswith("kafka.")) and isinstance(existing, logging.Logger)
                and KAFKA_PYTHON_FILTER not in existing.filters):
            existing.addFilter(KAFKA_PYTHON_FILTER)


with warnings.catch_warnings():
    # kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text, deprecated since
    # Python 3.11: keep that import-time DeprecationWarning out of our users' logs and strict test runs.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka

    check_kafka_python_version(str(kafka.__version__))
    from kafka import errors as kafka_errors
    from kafka.coordinator.base import BaseCoordinator, Generation
    from kafka.net.compat import KafkaNetClient
    from kafka.net.sasl.oauth import AbstractTokenProvider
    from kafka.net.selector import NetworkSelector

_missing = missing_internals(BaseCoordinator) + [
    f"{owner.__name__}.{name}()" for owner, name in ((KafkaNetClient, "get_broker_version"),
                                                     (KafkaNetClient, "close"), (NetworkSelector, "start"),
                                                     (Generation, "is_lost"))
    if not callable(getattr(owner, name, None))]
if "net" not in inspect.signature(KafkaNetClient).parameters:
    _missing.append("KafkaNetClient(net=...)")
if _missing:
    raise UnsupportedKafkaPython(
        f"kafka-python {kafka.__version__} lacks what Connect group membership relies on: "
        f"{', '.join(_missing)}; supported: kafka-python {SUPPORTED_RANGE}")

#: What kafka-python raises; callers catch it without importing kafka-python.
KafkaError = kafka_errors.KafkaError
limit_kafka_python_logs()


@dataclass(frozen=True, slots=True)
class CoordinatorSettings:
    """The group settings of one member (kafka-python calls the rebalance timeout max_poll_interval_ms)."""

    group_id: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    rebalance_timeout_ms: int
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30_000

    def coordinator_config(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                "heartbeat_interval_ms": self.heartbeat_interval_ms,
                "max_poll_interval_ms": self.rebalance_timeout_ms,
                "retry_backoff_ms": self.retry_backoff_ms, "request_timeout_ms": self.request_timeout_ms}


@dataclass(frozen=True, slots=True)
class CoordinatorCallbacks:
    """What the coordinator calls on kafka-python's IO thread. None of them may block on the herder.

    * ``metadata(generation_lost)``: this member's JoinGroup metadata; ``generation_lost`` says the
      broker dropped this member's generation. Any exception it raises aborts the join and comes out of
      :meth:`KafkaPythonCoordinator.ensure_active_group`.
    * ``assign(leader_id, generation, {member id: metadata})``: leader only, ``{member id: assignment}``.
    * ``joined(generation, member_id, assignment)``: a JoinGroup + SyncGroup finished.
    * ``join_in_flight(sent_at or None)``: a JoinGroup was sent (monotonic time) / the exchange ended.
    * ``confirmed(at)``: the broker still counted this member as of ``at`` (monotonic time).
    * ``changed()``: something for the herder's next poll (rebalance needed, join ended, generation lost).
    """

    metadata: Callable[[bool], bytes]
    assign: Callable[[str, int, Mapping[str, bytes]], dict[str, bytes]]
    joined: Callable[[int, str, bytes], None]
    join_in_flight: Callable[[float | None], None]
    confirmed: Callable[[float], None]
    changed: Callable[[], None]


def _generation_lost(coordinator: Any) -> bool:
    metadata = coordinator.group_metadata()
    return bool(Generation(metadata.generation_id, metadata.member_id, None).is_lost())


class _WorkerCoordinator(BaseCoordinator):  # type: ignore[misc]  # kafka-python is untyped
    """kafka-python's side: the group protocol hooks, forwarded to :class:`CoordinatorCallbacks`."""

    def __init__(self, client: Any, protocol_type: str, protocol_name: str, callbacks: CoordinatorCallbacks,
                 **configs: Any) -> None:
        super().__init__(client, **configs)
        self._connect_protocol = (protocol_type, protocol_name)
        self._callbacks = callbacks
        self._unclaimed: bytes | None = None  # IO thread only

    def protocol_type(self) -> str:
        return self._connect_protocol[0]

    def group_protocols(self) -> list[tuple[str, bytes]]:
        return [(self._connect_protocol[1], self._callbacks.metadata(_generation_lost(self)))]

    def _perform_assignment(self, leader_id: str, protocol: str, members: list[Any]) -> dict[str, bytes]:
        return self._callbacks.assign(leader_id, int(self.group_metadata().generation_id),
                                      {m.member_id: bytes(m.metadata) for m in members})

    async def _on_join_complete_async(self, generation: int, member_id: str, protocol: str,
                                      member_assignment_bytes: bytes) -> None:
        self._unclaimed = None
        self._callbacks.joined(generation, member_id, bytes(member_assignment_bytes))

    async def _do_join_and_sync_async(self) -> Any:
        """One JoinGroup + SyncGroup, unless the previous one finished while nobody was waiting
        (see the module docstring); kept until ``_on_join_complete_async`` has consumed it."""
        if self._unclaimed is not None:
            claimed, self._unclaimed = self._unclaimed, None
            return claimed
        self._callbacks.join_in_flight(time.monotonic())
        try:
            self._unclaimed = await super()._do_join_and_sync_async()
            return self._unclaimed
        finally:
            self._callbacks.join_in_flight(None)
            self._callbacks.changed()  # the herder's next poll completes the join

    def _process_sync_group_response(self, response: Any, send_time: float) -> Any:
        try:
            result = super()._process_sync_group_response(response, send_time)
        except kafka_errors.RebalanceInProgressError:
            # Still a member; it must rejoin. The broker held this SyncGroup until another member's
            # JoinGroup started a new rebalance, and restarted our session when it answered (Kafka's
            # coordinator reschedules the heartbeat expiry of every member it answers that way), so
            # the answer's arrival confirms us, give or take one network latency. Confirming at the
            # send time instead made a worker whose SyncGroup was held for a session fence itself.
            self._callbacks.confirmed(time.monotonic())
            raise
        self._callbacks.confirmed(send_time)
        return result

    def _handle_heartbeat_response(self, response: Any, send_time: float) -> Any:
        try:
            result = super()._handle_heartbeat_response(response, send_time)
        except kafka_errors.RebalanceInProgressError:
            self._callbacks.confirmed(send_time)  # still a member; it must rejoin
            raise
        self._callbacks.confirmed(send_time)
        return result

    def request_rejoin(self) -> None:
        super().request_rejoin()
        self._callbacks.changed()

    def reset_generation(self, member_id: str = "") -> None:
        super().reset_generation(member_id)
        self._callbacks.changed()


class KafkaPythonCoordinator:
    """One member's connection to its group coordinator: a kafka-python client and its IO thread.

    Built by :meth:`connect`; the herder's thread calls the methods, the callbacks run on the IO thread.
    """

    def __init__(self, client: Any, coordinator: _WorkerCoordinator, broker_version: Any) -> None:
        self._client = client
        self._coordinator = coordinator
        self.broker_version = broker_version

    @classmethod
    def connect(cls, client_config: Mapping[str, Any], settings: CoordinatorSettings, protocol_type: str,
                protocol_name: str, callbacks: CoordinatorCallbacks, timeout_s: float) -> KafkaPythonCoordinator:
        """Start the client's IO thread and bootstrap; ConnectError if the cluster is not reached in time.

        ``client_config`` holds kafka-python client keywords (see :func:`group_client_config`).
        """
        config = dict(client_config)
        limit_kafka_python_logs()  # the loggers of modules kafka-python imported since
        net = NetworkSelector(**config)
        client = KafkaNetClient(net=net, **config)
        net.start()
        try:
            version = client.get_broker_version(int(timeout_s * 1000))
        except kafka_errors.KafkaError as exc:
            client.close()
            raise ConnectError(
                f"cannot reach the Kafka cluster of Connect group {settings.group_id}: {exc!r}") from exc
        if version is None:
            client.close()
            raise ConnectError(f"cannot reach the Kafka cluster of Connect group {settings.group_id}")
        try:
            coordinator = _WorkerCoordinator(client, protocol_type, protocol_name, callbacks, api_version=version,
                                             **settings.coordinator_config())
        except BaseException:
            client.close()
            raise
        return cls(client, coordinator, version)

    @property
    def member_id(self) -> str:
        return str(self._coordinator.group_metadata().member_id)

    @property
    def generation_lost(self) -> bool:
        """The broker dropped this member's generation (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, never joined)."""
        return _generation_lost(self._coordinator)

    def stable(self) -> bool:
        """Joined and synced, heartbeating."""
        return bool(self._coordinator.stable())

    def need_rejoin(self) -> bool:
        return bool(self._coordinator.need_rejoin())

    def request_rejoin(self) -> None:
        self._coordinator.request_rejoin()

    def poll_heartbeat(self) -> None:
        """Tell the heartbeat loop the herder is alive; raises KafkaError if the loop died (it restarts
        on the next :meth:`ensure_active_group`)."""
        self._coordinator.poll_heartbeat()

    def ensure_active_group(self, timeout_s: float) -> bool:
        """Join (JoinGroup + SyncGroup) if needed, up to ``timeout_s``; True once joined."""
        return bool(self._coordinator.ensure_active_group(timeout_ms=max(1, int(timeout_s * 1000))))

    def leave_group(self, timeout_ms: int) -> None:
        """Stop heartbeating and send LeaveGroup (may raise KafkaError or RuntimeError)."""
        self._coordinator.close(timeout_ms=timeout_ms)

    def close(self) -> None:
        """Close the client and stop its IO thread."""
        self._client.close()


#: Java connection keys -> kafka-python keywords (security comes from the shared TLS and SASL translations).
_CONNECTION_KEYS = {
    "bootstrap.servers": "bootstrap_servers", "client.id": "client_id",
    "request.timeout.ms": "request_timeout_ms", "retry.backoff.ms": "retry_backoff_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms", "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "connections.max.idle.ms": "connections_max_idle_ms", "metadata.max.age.ms": "metadata_max_age_ms",
    "socket.connection.setup.timeout.ms": "socket_connection_setup_timeout_ms",
    "socket.connection.setup.timeout.max.ms": "socket_connection_setup_timeout_max_ms",
    "client.dns.lookup": "client_dns_lookup",
}
_DNS_LOOKUPS = ("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")
#: Keys the security translations read (or refuse for this client): never "not used".
_SECURITY = ("security.protocol", "ssl.", "ssl_", "sasl.", "enable.ssl.", "enable.sasl.", "https.")


def group_client_config(java: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python client keywords for a group member, from the Java client properties the worker's admin
    client gets (``DistributedWorkerConfig.group_client_config()``).

    The connection keys are taken by their Java names; TLS and SASL come from the same translations as
    librdkafka's (:func:`~connect_runtime.clients.tls_properties.ssl_context` over
    :func:`~connect_runtime.clients.tls_properties.tls_settings`,
    :func:`~connect_runtime.clients.sasl_properties.kafka_python_sasl` over
    :func:`~connect_runtime.clients.sasl_properties.sasl_login`), so a key reaches this client when it
    reaches librdkafka's, or is refused naming this client (ConfigError,
    :func:`~connect_runtime.clients.security_keys.group_client_refusals`). A key the admin client uses
    and a group member does not (``client.rack``, ``socket.keepalive.enable`` ...) is named once at INFO.
    """
    plain = factory.java_text(java)
    security_keys.check(plain)
    refused = security_keys.group_client_refusals(plain)
    if refused:
        raise security_keys.group_client_error(*next(iter(refused.items())))
    out: dict[str, Any] = {}
    for key, value in plain.items():
        name = _CONNECTION_KEYS.get(key)
        if name is None:
            if not key.startswith(_SECURITY) and factory.has_librdkafka_equivalent(key, "admin"):
                factory.log_unused(key, GROUP_CLIENT)
        elif name == "client_dns_lookup":
            if value.strip() not in _DNS_LOOKUPS:
                raise ConfigError(f"Invalid value {value} for configuration {key}: expected one of "
                                  f"{', '.join(_DNS_LOOKUPS)}", key)
            out[name] = value.strip()
        elif name.endswith("_ms"):
            try:
                out[name] = int(value)
            except ValueError:
                raise ConfigError(f"Invalid value {value} for configuration {key}: not a whole number", key) from None
        else:
            out[name] = value
    if "security.protocol" in plain:
        out["security_protocol"] = plain["security.protocol"].strip().upper()
    tls = tls_settings(plain)
    if tls is not None:
        out["ssl_context"] = ssl_context(tls)
    login = sasl_login(plain)
    if login is not None:
        keywords = kafka_python_sasl(login)
        if login.tokens is not None:
            keywords["sasl_oauth_token_provider"] = _TokenProvider(login.tokens)
        out.update(keywords)
    return out


class _TokenProvider(AbstractTokenProvider):  # type: ignore[misc]  # kafka-python is untyped
    """kafka-python's OAUTHBEARER token provider over the token source librdkafka's keys describe; a token
    is reused until 80% of its lifetime has passed, when librdkafka refreshes its own (Java's default
    ``sasl.login.refresh.window.factor``, the one value accepted)."""

    def __init__(self, tokens: TokenSource) -> None:
        super().__init__()
        self._tokens = tokens
        self._token: str | None = None
        self._refresh_at = 0.0

    def token(self) -> str:
        now = time.time()
        if self._token is None or now >= self._refresh_at:
            token, expiry = self._tokens.token()
            self._token, self._refresh_at = token, now + 0.8 * max(0.0, expiry - now)
        return self._token

    def extensions(self) -> dict[str, str]:
        return self._tokens.extensions()
