"""The forced commit of a flow's source offsets: the driver's route, and how ``mirror failover`` calls it.

A source task stores its offsets every ``offset.flush.interval.ms`` (60 s by default). A planned cutover
wants them final when it ends, so that the flow, restarted anywhere, resumes exactly where the target
is. Only a running task can store them, so the cutover asks every node that runs one:

* **The route** (served by each ``connect-mirror-maker`` node, :func:`flow_commit_routes`):
  ``POST /mirror/flows/<source>/<target>/commit[?timeout_ms=N]`` has every task of the flow's
  ``MirrorSourceConnector`` running on *this* node commit now and answers once each has
  (:meth:`~connect_runtime.runtime.herder.Herder.commit_task_offsets`)::

      {"flow": "A->B", "worker_id": "host:8083", "connector": "MirrorSourceConnector", "seconds": 0.08,
       "tasks": [{"id": 0, "committed": true, "seconds": 0.08},
                 {"id": 1, "committed": false, "seconds": 0.0, "error": "the task is not running (FAILED: ...)"}]}

  A commit covers every record the target acknowledged before the request; under exactly-once it is the
  open transaction's commit. It is a state change, so the REST security of every other one applies (basic
  auth, or ``rest.mutations.allow.unauthenticated``): 401/403 otherwise. 404 for a flow this node does
  not run, 409 while its herder is not running.
* **The caller** (:func:`force_flow_commit`): the nodes are the worker ids (``host:port`` of their REST
  listeners) of the flow's source tasks in its status topic (``mm2-status.<source>.internal`` on the
  target), each asked at once. The scheme and the trust come from the same mm2.properties as the nodes'
  (``listeners``, ``listeners.https.*``); credentials from ``MIRROR_REST_USER`` / ``MIRROR_REST_PASSWORD``.
  A node that cannot be reached, refuses, or has a task that could not commit is one line in the
  report; the cutover's exactness does not depend on it (the offset map is on the target first).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from connect_runtime.api.errors import BadRequestError, ConfigError, NotFoundError
from connect_runtime.lifecycle import State
from connect_runtime.rest.handling import route
from connect_runtime.rest.parsing import Call
from connect_runtime.rest.responses import json_response
from connect_runtime.rest.server import parse_listeners
from connect_runtime.rest.tls import client_ssl_context
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.herder import Herder
from connect_runtime.storage.status_store import Status, can_write_safely, parse_status, parse_status_key
from mirror.client.cutover import ForcedCommit, NodeCommit
from mirror.client.mirror_client import CONSUMER_CLIENT_PREFIX, client_config, mirror_client_config
from mirror.client.translation import read_topic
from mirror.config.mirror_maker_config import (
    SOURCE_CONNECTOR_CLASS,
    MirrorMakerConfig,
    SourceAndTarget,
    connector_simple_name,
)
from mirror.maker.rest_wiring import rest_listeners

SOURCE_CONNECTOR = connector_simple_name(SOURCE_CONNECTOR_CLASS)
COMMIT_PATH = "/mirror/flows/{source}/{target}/commit"
DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 300_000
#: Environment variables of the caller's basic-auth credentials (never a flag: ``ps`` shows flags).
USER_ENV, PASSWORD_ENV = "MIRROR_REST_USER", "MIRROR_REST_PASSWORD"
#: Task states whose node is asked (a FAILED task's node answers why it could not commit).
_ASKED_STATES = frozenset({State.RUNNING, State.PAUSED, State.FAILED})
_STATUS_READER_GROUP = "mirror-failover-status-reader"  # never joined: assign() only


# ---- the route ------------------------------------------------------------------------------------------


def flow_commit_routes(herders: Mapping[SourceAndTarget, Herder]) -> list[BaseRoute]:
    """The commit route over this node's flows (each a herder, or the slot standing for one)."""

    def commit(call: Call) -> Response:
        pair = SourceAndTarget(call.param("source"), call.param("target"))
        herder = herders.get(pair)
        if herder is None:
            raise NotFoundError(f"Flow {pair} is not run by this node: "
                                f"{', '.join(str(p) for p in herders) or 'none'}")
        raw = call.query_values("timeout_ms")
        try:
            timeout_ms = int(raw[0]) if raw else DEFAULT_TIMEOUT_MS
        except ValueError:
            timeout_ms = 0
        if not 0 < timeout_ms <= MAX_TIMEOUT_MS:
            raise BadRequestError(f"timeout_ms must be an integer in 1..{MAX_TIMEOUT_MS}")
        began = time.monotonic()
        outcomes = herder.commit_task_offsets(SOURCE_CONNECTOR, timeout_ms / 1000)
        return json_response({"flow": str(pair), "worker_id": herder.worker_id(), "connector": SOURCE_CONNECTOR,
                              "seconds": round(time.monotonic() - began, 3),
                              "tasks": [o.to_json() for o in outcomes]})

    return [route(COMMIT_PATH, commit, ["POST"], None, timeout_s=MAX_TIMEOUT_MS / 1000 + 10)]


# ---- the caller -----------------------------------------------------------------------------------------


def flow_task_nodes(config: MirrorMakerConfig, pair: SourceAndTarget, timeout_s: float) -> dict[str, list[int]]:
    """Worker id -> the flow's source tasks it runs, from the newest statuses in the flow's status topic.

    A status replaces the one before it unless it comes from another worker with an older generation (a
    late report of a task that moved on): the status store's own rule, :func:`can_write_safely`."""
    topic = config.worker_config(pair)[wc.STATUS_TOPIC]
    target = client_config(mirror_client_config(config.client_config(pair.target)), CONSUMER_CLIENT_PREFIX)
    newest: dict[int, Status] = {}
    for message in read_topic(target, topic, timeout_s, _STATUS_READER_GROUP):
        parsed = parse_status_key((message.key() or b"").decode("utf-8", "replace"))
        if parsed is None or parsed[0] != SOURCE_CONNECTOR or parsed[1] is None:
            continue
        task, value = parsed[1], message.value()
        if value is None:
            newest.pop(task, None)
            continue
        try:
            status = parse_status(SOURCE_CONNECTOR, task, json.loads(value))
        except (ValueError, TypeError, KeyError, AttributeError):
            continue
        if can_write_safely(newest.get(task), status):
            newest[task] = status
    nodes: dict[str, list[int]] = {}
    for task, status in sorted(newest.items()):
        if status.state in _ASKED_STATES and status.worker_id:
            nodes.setdefault(status.worker_id, []).append(task)
    return nodes


def force_flow_commit(config: MirrorMakerConfig, pair: SourceAndTarget, began: float, timeout_s: float,
                      environ: Mapping[str, str] | None = None) -> ForcedCommit:
    """Ask every node running the flow's source tasks to commit now (at once); ``began`` is the command's
    start (``time.monotonic()``), from which each node's ``committed_after_s`` counts."""
    import httpx  # here: only a failover that executes needs it

    try:
        nodes = flow_task_nodes(config, pair, timeout_s)
    except Exception as exc:  # any failure to read the statuses leaves the offsets to the flow
        return ForcedCommit(problem=f"the flow's task statuses could not be read ({_one_line(exc)})")
    if not nodes:
        return ForcedCommit(problem=f"no node runs a task of {SOURCE_CONNECTOR} for {pair} "
                                    f"(its status topic {config.worker_config(pair)[wc.STATUS_TOPIC]})")
    scheme, verify = _rest_client_settings(config)
    env = os.environ if environ is None else environ
    auth = (env[USER_ENV], env.get(PASSWORD_ENV, "")) if env.get(USER_ENV) else None
    path = COMMIT_PATH.format(source=pair.source, target=pair.target)
    with httpx.Client(verify=verify, auth=auth, timeout=timeout_s + 5, trust_env=False) as client:

        def ask(node: str) -> NodeCommit:
            try:
                response = client.post(f"{scheme}://{node}{path}", params={"timeout_ms": int(timeout_s * 1000)})
            except httpx.HTTPError as exc:
                return NodeCommit(node, None, error=f"could not be reached ({_one_line(exc)})")
            return node_answer(node, nodes[node], response.status_code, response.text, began)

        with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="force-commit") as pool:
            return ForcedCommit(list(pool.map(ask, sorted(nodes))))


def node_answer(node: str, expected: list[int], status: int, text: str, began: float) -> NodeCommit:
    """One node's HTTP answer as a :class:`NodeCommit`."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if status != 200 or not isinstance(body, dict):
        message = body.get("message") if isinstance(body, dict) else None
        hint = f" (set {USER_ENV} and {PASSWORD_ENV})" if status == 401 else ""
        return NodeCommit(node, None, error=f"HTTP {status}: {_one_line(message or text or 'no answer')}{hint}")
    tasks = [t for t in body.get("tasks") or [] if isinstance(t, dict)]
    failed = [f"task {t.get('id')}: {t.get('error') or 'not committed'}" for t in tasks if not t.get("committed")]
    missing = sorted(set(expected) - {t.get("id") for t in tasks})
    if missing:  # the status topic named it here, but it runs elsewhere now (a rebalance since)
        failed.append(f"task(s) {', '.join(map(str, missing))} not running there")
    if failed:
        return NodeCommit(node, None, tasks, error="; ".join(failed))
    return NodeCommit(node, time.monotonic() - began, tasks)


def _rest_client_settings(config: MirrorMakerConfig) -> tuple[str, Any]:
    """(scheme, httpx ``verify``) for the nodes' REST listeners: those of the same mm2.properties."""
    listeners, _ = rest_listeners(config, None)
    first = parse_listeners(listeners)[0]
    if first.scheme != "https":
        return "http", True
    try:
        return "https", client_ssl_context(config.raw_properties())
    except ConfigError as exc:
        raise ConfigError(f"{config.location(exc.key)}: {exc}", exc.key) from exc


def _one_line(value: object) -> str:
    lines = str(value).strip().splitlines()
    return lines[0] if lines else type(value).__name__
