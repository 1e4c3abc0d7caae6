"""The forced-commit route of the driver (no sockets): guarded as every state change, its answer, and how
``mirror failover`` reads a node's answer. The commit itself runs against real brokers in
tests/integration/test_exact_failover.py and tests/integration/test_worker_source_task.py."""

from __future__ import annotations

import json
import time
import warnings
from typing import cast
from unittest import mock

import pytest
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # Starlette 1.x nudges towards the httpx2 package for its TestClient; httpx is what we ship with.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.rest.app import create_app
from connect_runtime.rest.security import RestSecurity
from connect_runtime.runtime.herder import TaskOffsetCommit
from mirror.config.mirror_maker_config import SourceAndTarget
from mirror.maker.flow_commit import flow_commit_routes, node_answer
from mirror.maker.herder_slot import HerderSlot
from mirror.maker.mirror_herder import MirrorHerder

PAIR = SourceAndTarget("A", "B")


def _client(security: RestSecurity) -> tuple[TestClient, mock.NonCallableMagicMock]:
    slot = HerderSlot(PAIR, lambda: pytest.fail("not built in unit tests"))
    herder = cast(mock.NonCallableMagicMock, mock.create_autospec(MirrorHerder, instance=True))
    slot._herder, slot._ready = cast(MirrorHerder, herder), True
    herder.worker_id.return_value = "node-1:8083"
    herder.commit_task_offsets.return_value = [
        TaskOffsetCommit(ConnectorTaskId("MirrorSourceConnector", 0), None, 0.05),
        TaskOffsetCommit(ConnectorTaskId("MirrorSourceConnector", 1), "the task is not running (FAILED: boom)", 0.0)]
    app = create_app({(PAIR.source, PAIR.target): slot}, extra_routes=flow_commit_routes({PAIR: slot}),
                     security=security)
    return TestClient(app), herder


def test_the_commit_is_a_state_change_refused_without_credentials_or_the_opt_in() -> None:
    client, herder = _client(RestSecurity(allow_unauthenticated_mutations=False))
    with client:
        response = client.post("/mirror/flows/A/B/commit")
    assert response.status_code == 403 and "State-changing REST requests are disabled" in response.json()["message"]
    herder.commit_task_offsets.assert_not_called()


def test_the_commit_answers_per_local_task_of_the_source_connector() -> None:
    client, herder = _client(RestSecurity(allow_unauthenticated_mutations=True))
    with client:
        response = client.post("/mirror/flows/A/B/commit", params={"timeout_ms": "2500"})
        unknown = client.post("/mirror/flows/B/A/commit")
        bad = client.post("/mirror/flows/A/B/commit", params={"timeout_ms": "soon"})
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in ("flow", "worker_id", "connector")} == {
        "flow": "A->B", "worker_id": "node-1:8083", "connector": "MirrorSourceConnector"}
    assert body["tasks"] == [{"id": 0, "committed": True, "seconds": 0.05},
                             {"id": 1, "committed": False, "seconds": 0.0,
                              "error": "the task is not running (FAILED: boom)"}]
    herder.commit_task_offsets.assert_called_once_with("MirrorSourceConnector", 2.5)
    assert unknown.status_code == 404 and "B->A is not run by this node" in unknown.json()["message"]
    assert bad.status_code == 400 and "timeout_ms" in bad.json()["message"]


def test_a_nodes_answer_is_committed_only_when_every_task_it_was_expected_to_run_committed() -> None:
    began = time.monotonic()
    ok = json.dumps({"tasks": [{"id": 0, "committed": True, "seconds": 0.1}]})
    assert node_answer("n:1", [0], 200, ok, began).committed_after_s is not None
    moved = node_answer("n:1", [0, 2], 200, ok, began)
    assert moved.committed_after_s is None and moved.error == "task(s) 2 not running there"
    failed = json.dumps({"tasks": [{"id": 0, "committed": False, "error": "no offset commit completed within 5s"}]})
    assert node_answer("n:1", [0], 200, failed, began).error == "task 0: no offset commit completed within 5s"
    refused = node_answer("n:1", [0], 401, json.dumps({"error_code": 401, "message": "Authentication required"}),
                           began)
    assert refused.error == "HTTP 401: Authentication required (set MIRROR_REST_USER and MIRROR_REST_PASSWORD)"
    assert node_answer("n:1", [0], 404, "<html>\nNot Found</html>", began).error == "HTTP 404: <html>"
