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
own consumer starts its IO thread the same way), ``KafkaNetClient.get_broker_version``, and
``BaseCoordinator.group_metadata`` (generation and member id, read under the coordinator's lock) with
``Generation.is_lost`` for what counts as a lost generation.

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

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients import tls_policy
from connect_runtime.clients.java_stores import KeyMaterial
from connect_runtime.clients.librdkafka_logging import DEFAULT_INTERVAL_S, RepeatGate
from connect_runtime.clients.sasl_properties import token_source
from connect_runtime.clients.ssl_context import client_context
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

        ``client_config`` holds kafka-python client keywords (see :func:`kafka_python_config`).
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


#: librdkafka property -> kafka-python keyword, for the client settings the coordinator needs.
_CLIENT_KEYS = {
    "bootstrap.servers": "bootstrap_servers", "client.id": "client_id",
    "request.timeout.ms": "request_timeout_ms", "retry.backoff.ms": "retry_backoff_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms", "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "connections.max.idle.ms": "connections_max_idle_ms", "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism", "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username", "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile", "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile", "ssl.key.password": "ssl_password", "ssl.crl.location": "ssl_crlfile",
}
_INT_KEYS = frozenset({"request_timeout_ms", "retry_backoff_ms", "reconnect_backoff_ms",
                       "reconnect_backoff_max_ms", "connections_max_idle_ms"})


def kafka_python_config(librdkafka: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python client keywords from a librdkafka config (``DistributedWorkerConfig.group_client_config()``
    passes its ``admin_config()``).

    Only connection and security settings matter to a group member; other keys are ignored.
    """
    out: dict[str, Any] = {}
    for key, value in librdkafka.items():
        name = _CLIENT_KEYS.get(key)
        if name is None or value is None:
            continue
        text = str(value)
        out[name] = int(text) if name in _INT_KEYS else text
    if "security_protocol" in out:
        out["security_protocol"] = str(out["security_protocol"]).upper()
    check_hostname = str(librdkafka.get("ssl.endpoint.identification.algorithm", "https")).lower() != "none"
    if not check_hostname:
        out["ssl_check_hostname"] = False
    if any(key in librdkafka for key in ("ssl.ca.pem", "ssl.certificate.pem", "ssl.cipher.suites")):
        # Java stores arrive as PEM text in memory (connect_runtime.clients.tls_properties)
        identity = (KeyMaterial(librdkafka["ssl.certificate.pem"], librdkafka["ssl.key.pem"])
                    if "ssl.certificate.pem" in librdkafka else None)
        verify = str(librdkafka.get("enable.ssl.certificate.verification", "true")).lower() != "false"
        context = client_context(librdkafka.get("ssl.ca.pem"), identity, verify=verify, check_hostname=check_hostname)
        if librdkafka.get("ssl.ca.location") and "ssl.ca.pem" not in librdkafka:
            context.load_verify_locations(cafile=str(librdkafka["ssl.ca.location"]))
        tls_policy.configure_context(context, librdkafka)  # the TLS versions and suites librdkafka keeps to
        out["ssl_context"] = context
    tokens = token_source(librdkafka)
    if tokens is not None:
        out["sasl_oauth_token_provider"] = _token_provider(*tokens)
    return out


def _token_provider(source: Callable[[], tuple[str, float]], extensions: dict[str, str]) -> Any:
    """kafka-python's OAUTHBEARER token provider over the token source librdkafka's config describes;
    a token is reused until a minute before it expires."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class TokenProvider(AbstractTokenProvider):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self._token: tuple[str, float] | None = None

        def token(self) -> str:
            if self._token is None or self._token[1] - 60 < time.time():
                self._token = source()
            return self._token[0]

        def extensions(self) -> dict[str, str]:
            return dict(extensions)

    return TokenProvider()
