"""``connect-distributed worker.properties``: one worker of a Connect cluster (Kafka's ConnectDistributed).

Usage::

    connect-distributed worker.properties [--log-level LEVEL] [--log-config FILE]

    --log-level LEVEL   DEBUG, INFO, WARNING, ERROR or CRITICAL       env CONNECT_LOG_LEVEL
    --log-config FILE   logging config (YAML dictConfig or .ini)      env CONNECT_LOG_CONFIG

Exit codes (:class:`~connect_runtime.cli.process.ExitCode`): 0 stopped cleanly (SIGTERM/SIGINT/SIGHUP),
1 failed while running, 2 bad usage or an invalid worker.properties (one
``error: <file>:<line>: <message>`` line, no traceback), 3 failed to start.

Start order: the REST server binds first, because the worker id (``<advertised host>:<port>``, what
status records carry) needs the bound port when ``listeners`` asks for port 0; until the herder exists
it answers 503. Then the stores, the Worker and the DistributedHerder start (assembled by
:func:`connect_runtime.runtime.distributed.assembly.build_herder`, the same wiring the MM2 driver uses); the
herder joins the Connect group ``group.id`` through Kafka's group coordinator
(:class:`~connect_runtime.runtime.coordination.kafka_membership.KafkaGroupMembership`), so several
processes with the same ``group.id`` share connectors and tasks. ``/health`` says "starting" until
the stores are read and the first assignment is applied.

Shutdown (SIGTERM/SIGINT/SIGHUP, :func:`~connect_runtime.cli.process.run_until_stopped`) is bounded:
the REST server stops first (requests in flight are answered, later ones find the port closed), then
tasks get ``task.shutdown.graceful.timeout.ms`` to stop and commit their offsets and the stores are closed.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

import configargparse
import httpx
import prometheus_client
from starlette.types import ASGIApp, Receive, Scope, Send

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.config_provider import build_providers, resolve
from connect_runtime.api.errors import ConfigError, ConnectError
from connect_runtime.api.properties import PropertiesFile, load_properties
from connect_runtime.api.secrets import SECRETS_KEYS, apply_secret_keys
from connect_runtime.cli.process import ExitCode, parse_args, print_error, run_until_stopped
from connect_runtime.cli.process_metrics import register_process_metrics
from connect_runtime.logging_setup import configure_logging, log_level
from connect_runtime.rest.app import create_app
from connect_runtime.rest.security import RestSecurity
from connect_runtime.rest.server import RestServer
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.distributed.assembly import (
    MembershipFactory,
    build_herder,
    kafka_cluster_id,
    kafka_membership,
)
from connect_runtime.runtime.distributed.distributed_herder import DistributedHerder
from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.runtime.worker.plugins import Plugins

logger = logging.getLogger(__name__)

PROG = "connect-distributed"
_STOP_MARGIN_S = 15.0


class _LateApp:
    """Serves 503 until the real app is set; lets the server bind (and fix the worker id) first."""

    def __init__(self) -> None:
        self.target: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rsplit(".", 1)[-1]
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        if self.target is not None:
            await self.target(scope, receive, send)
            return
        if scope.get("path") == "/health":  # KIP-1017's WorkerStatus, as the herder answers it later
            body = b'{"status":"starting","message":"Worker is still starting up."}'
        else:
            body = b'{"error_code":503,"message":"Worker is still starting up."}'
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def build_parser() -> configargparse.ArgumentParser:
    parser = configargparse.ArgumentParser(
        prog=PROG, description="Run a Kafka Connect distributed worker.",
        epilog="exit codes: 0 stopped cleanly, 1 failed while running, 2 bad input, 3 failed to start")
    parser.add_argument("config", metavar="worker.properties", help="the worker configuration file")
    parser.add_argument("--log-level", env_var="CONNECT_LOG_LEVEL", type=log_level, default=None,
                        help="root log level (default INFO)")
    parser.add_argument("--log-config", env_var="CONNECT_LOG_CONFIG", default=None,
                        help="logging configuration file: YAML dictConfig or .ini fileConfig")
    return parser


def load_worker_config(path: str) -> tuple[wc.DistributedWorkerConfig, dict[str, Any]]:
    """Read, resolve (config providers) and validate ``worker.properties``.

    Raises ConfigError whose message starts with ``<file>:<line>:`` when the key is in the file.
    """
    props = load_properties(path)
    try:
        apply_secret_keys(props)  # before the resolved secrets are remembered
    except ValueError as exc:
        raise ConfigError(f"{_where(props, SECRETS_KEYS)}: {exc}", SECRETS_KEYS) from exc
    try:
        providers = build_providers(props)
        resolved = resolve(props, providers)
        return wc.DistributedWorkerConfig(resolved), dict(providers)
    except ConfigError as exc:
        raise ConfigError(f"{_where(props, exc.key)}: {exc}", exc.key) from exc


def load_rest_security(path: str, config: wc.DistributedWorkerConfig) -> RestSecurity:
    """Who may change what through REST, the HTTPS listener's TLS and CORS (``rest.*``, ``listeners.https.*``,
    ``access.control.*``); ConfigError naming ``<file>:<line>`` like :func:`load_worker_config`."""
    try:
        return RestSecurity.from_props(config.originals, https=any(lst.scheme == "https" for lst in config.listeners))
    except ConfigError as exc:
        raise ConfigError(f"{_where(load_properties(path), exc.key)}: {exc}", exc.key) from exc


def _where(props: PropertiesFile, key: str | None) -> str:
    return props.location(key)


class ConnectDistributed:
    """The assembled worker process: REST server, stores, Worker, herder."""

    def __init__(self, config: wc.DistributedWorkerConfig, providers: dict[str, Any],
                 membership: MembershipFactory = kafka_membership, security: RestSecurity | None = None) -> None:
        self.config = config
        self.membership = membership
        self.providers = providers
        self.security = security if security is not None else RestSecurity.from_props(
            config.originals, https=any(lst.scheme == "https" for lst in config.listeners))
        self.registry = prometheus_client.CollectorRegistry()
        register_process_metrics(self.registry, "connect")
        self.app = _LateApp()
        listeners = ",".join(f"{lst.scheme}://{lst.host}:{lst.port}" for lst in config.listeners)
        self.rest = RestServer(self.app, listeners, ssl_context=self.security.server_ssl)
        self.herder: DistributedHerder | None = None
        self._previous_code_policy: plugin_allowlist.CodePolicy | None = None
        self.worker_id = ""
        self.url = ""
        self._started = False

    def start(self, timeout_s: float = 120.0) -> None:
        config = self.config
        # Before any connector config is read: REST callers may name only registered plugins, the
        # plugin.allowlist and what worker.properties names itself (connect_runtime.api.plugin_allowlist).
        code_policy = plugin_allowlist.operator_policy(config.originals)
        self._previous_code_policy = plugin_allowlist.install(code_policy)
        logger.info("Plugins: %s", code_policy.describe())
        self.rest.start()
        listener = config.listeners[0]
        logger.info("REST server listening on %s://%s:%d", listener.scheme, listener.host or "0.0.0.0",
                    self.rest.port)
        logger.info("REST API: %s", self.security.describe())
        worker_id = self.worker_id = wc.worker_id(config, self.rest.port)
        url = self.url = wc.advertised_url(config, self.rest.port)
        forwarder = None
        if self.security.client_ssl is not None:  # task configs go to the leader's https listener
            timeout = config[wc.REST_REQUEST_TIMEOUT_MS] / 1000
            forwarder = TaskConfigForwarder(timeout, name=f"forward-tasks-{worker_id}",
                                            client=httpx.Client(verify=self.security.client_ssl))
        self.herder = build_herder(config, DistributedHerder, worker_id=worker_id, advertised_url=url,
                                   plugins=Plugins(), registry=self.registry, providers=self.providers,
                                   membership=self.membership, cluster_id=kafka_cluster_id(config),
                                   start_timeout_s=timeout_s, forwarder=forwarder)
        self.app.target = create_app(self.herder, registry=self.registry, security=self.security)
        self.herder.start()
        if not self.herder.wait_until_ready(timeout_s):
            raise ConnectError(f"Worker did not start within {timeout_s:.0f}s")
        self._started = True

    def ready(self) -> bool:
        """``start`` returned: the stores are read and the first assignment is applied."""
        return self._started

    def announce_ready(self, _elapsed_s: float) -> None:
        logger.info("Worker %s started (group %s), advertised as %s", self.worker_id, self.config.group_id,
                    self.url)

    def failed(self) -> bool:
        return self.herder is not None and self.herder.failed()

    def failure(self) -> str | None:
        """Why the worker must exit while running (its herder died), or None."""
        return "the herder failed; see the log" if self.failed() else None

    def stop(self) -> None:
        """REST first, then the herder, as Java's ``Connect.stop``: no request reaches a stopping herder."""
        self.rest.stop()
        if self.herder is not None:
            self.herder.stop(self.config[wc.TASK_SHUTDOWN_TIMEOUT_MS] / 1000 + _STOP_MARGIN_S)
        if self._previous_code_policy is not None:  # an embedding process gets its own policy back
            plugin_allowlist.install(self._previous_code_policy)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        configure_logging(args.log_level, args.log_config)
        config, providers = load_worker_config(args.config)
        security = load_rest_security(args.config, config)
    except ConfigError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    process = ConnectDistributed(config, providers, security=security)
    return run_until_stopped(process, name=PROG, announce_ready=process.announce_ready, failure=process.failure,
                             log=logger)


if __name__ == "__main__":
    sys.exit(main())
