"""Every public endpoint of the Connect REST API: success status and JSON shape, against a FakeHerder."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from connect_runtime.api.errors import NotFoundError
from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.runtime.herder import ConnectorOffset, WorkerHealth

from .conftest import MIRROR_SOURCE, source_config
from .fake_herder import FakeHerder


def create(client: TestClient, name: str = "src", **extra: str) -> None:
    response = client.post("/connectors", json={"name": name, "config": source_config(name, **extra)})
    assert response.status_code == 201, response.text


def test_server_info(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"version", "commit", "kafka_cluster_id"}
    assert body["kafka_cluster_id"] == "cluster-A"


@pytest.mark.parametrize(("status", "code"), [("healthy", 200), ("starting", 503), ("unhealthy", 500)])
def test_health_maps_worker_status(client: TestClient, herder: FakeHerder, status: str, code: int) -> None:
    herder.health_state = WorkerHealth(status, f"worker is {status}")
    response = client.get("/health")
    assert response.status_code == code
    assert response.json() == {"status": status, "message": f"worker is {status}"}


def test_create_connector_returns_201_with_location(client: TestClient, herder: FakeHerder) -> None:
    config = {"connector.class": MIRROR_SOURCE, "tasks.max": "2"}
    response = client.post("/connectors", json={"name": "src", "config": config})
    assert response.status_code == 201
    assert response.headers["location"] == "/connectors/src"
    assert response.json() == {"name": "src", "config": {**config, "name": "src"}, "type": "source",
                               "tasks": [{"connector": "src", "task": 0}, {"connector": "src", "task": 1}]}
    # Connect adds the name to the config and never replaces an existing connector on POST
    assert herder.called("put_connector_config") == [("src", {**config, "name": "src"}, False, None)]


def test_create_connector_trims_name_and_passes_initial_state(client: TestClient, herder: FakeHerder) -> None:
    response = client.post("/connectors", json={"name": " src ", "config": {"connector.class": MIRROR_SOURCE},
                                                "initial_state": "stopped"})
    assert response.status_code == 201
    assert herder.called("put_connector_config")[0][0] == "src"
    assert herder.called("put_connector_config")[0][3] is TargetState.STOPPED


def test_create_existing_connector_is_409(client: TestClient) -> None:
    create(client)
    response = client.post("/connectors", json={"name": "src", "config": source_config()})
    assert response.status_code == 409
    assert response.json() == {"error_code": 409, "message": "Connector src already exists"}


def test_config_values_are_coerced_like_jackson(client: TestClient, herder: FakeHerder) -> None:
    response = client.put("/connectors/src/config",
                          content=b'{"connector.class": "X", "tasks.max": 3, "ratio": 1e3, "flag": true}',
                          headers={"content-type": "application/json"})
    assert response.status_code == 201
    assert herder.configs["src"] == {"connector.class": "X", "tasks.max": "3", "ratio": "1e3", "flag": "true",
                                     "name": "src"}


def test_list_connectors(client: TestClient) -> None:
    assert client.get("/connectors").json() == []
    create(client, "b")
    create(client, "a")
    assert client.get("/connectors").json() == ["a", "b"]


def test_list_connectors_expanded(client: TestClient, herder: FakeHerder) -> None:
    create(client, "a")
    body = client.get("/connectors?expand=status&expand=info").json()
    assert body["a"]["info"] == herder.connector_info("a").to_json()
    assert body["a"]["status"] == {"name": "a", "type": "source",
                                   "connector": {"state": "RUNNING", "worker_id": "worker-1:8083"},
                                   "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "worker-1:8083"},
                                             {"id": 1, "state": "RUNNING", "worker_id": "worker-1:8083"}]}
    assert set(client.get("/connectors?expand=status").json()["a"]) == {"status"}
    # Connect ignores unknown expansions rather than failing the request
    assert client.get("/connectors?expand=bogus").json() == {"a": {}}


def test_list_connectors_expanded_skips_connector_deleted_meanwhile(client: TestClient,
                                                                     herder: FakeHerder) -> None:
    create(client, "a")
    herder.fail("connector_status", NotFoundError("gone"))
    assert client.get("/connectors?expand=status").json() == {}


def test_get_connector_and_config(client: TestClient) -> None:
    create(client, "src", **{"sasl.jaas.config": "secret", "ssl.key.password": "${env:KEY_PASSWORD}"})
    info = client.get("/connectors/src")
    assert info.status_code == 200
    assert info.json()["name"] == "src"
    assert info.json()["tasks"] == [{"connector": "src", "task": 0}, {"connector": "src", "task": 1}]
    config = client.get("/connectors/src/config")
    assert config.status_code == 200
    # Unlike Connect, a literal secret is hidden; a reference to one is shown as stored.
    expected = source_config("src", **{"sasl.jaas.config": "[hidden]", "ssl.key.password": "${env:KEY_PASSWORD}"})
    assert config.json() == expected
    assert info.json()["config"] == expected


def test_put_config_creates_then_updates(client: TestClient) -> None:
    first = client.put("/connectors/src/config", json=source_config())
    assert first.status_code == 201
    assert first.headers["location"] == "/connectors/src"
    second = client.put("/connectors/src/config", json=source_config(**{"tasks.max": "1"}))
    assert second.status_code == 200
    assert "location" not in second.headers
    assert second.json()["tasks"] == [{"connector": "src", "task": 0}]


def test_patch_config_removes_null_keys(client: TestClient, herder: FakeHerder) -> None:
    create(client, "src", extra="x")
    response = client.patch("/connectors/src/config", json={"extra": None, "tasks.max": "1"})
    assert response.status_code == 200
    assert "extra" not in response.json()["config"]
    assert response.json()["config"]["tasks.max"] == "1"
    assert herder.called("patch_connector_config") == [("src", {"extra": None, "tasks.max": "1"})]


def test_status_and_task_status(client: TestClient) -> None:
    create(client)
    status = client.get("/connectors/src/status")
    assert status.status_code == 200
    assert status.json()["connector"] == {"state": "RUNNING", "worker_id": "worker-1:8083"}
    task = client.get("/connectors/src/tasks/1/status")
    assert task.status_code == 200
    assert task.json() == {"id": 1, "state": "FAILED", "worker_id": "worker-1:8083",
                           "trace": "java.lang.RuntimeException: boom"}


def test_tasks_and_tasks_config_redact_secrets(client: TestClient) -> None:
    create(client, "src", **{"ssl.keystore.password": "hunter2"})
    tasks = client.get("/connectors/src/tasks")
    assert tasks.status_code == 200
    ids = [t["id"] for t in tasks.json()]
    assert ids == [{"connector": "src", "task": 0}, {"connector": "src", "task": 1}]
    assert tasks.json()[1]["config"]["task.id"] == "1"
    assert tasks.json()[0]["config"]["ssl.keystore.password"] == "[hidden]"
    legacy = client.get("/connectors/src/tasks-config")
    assert legacy.status_code == 200
    assert set(legacy.json()) == {"src-0", "src-1"}
    assert legacy.json()["src-0"]["ssl.keystore.password"] == "[hidden]"
    assert "hunter2" not in tasks.text + legacy.text


def test_restart_task_is_204(client: TestClient, herder: FakeHerder) -> None:
    create(client)
    response = client.post("/connectors/src/tasks/1/restart")
    assert response.status_code == 204
    assert response.content == b""
    assert herder.called("restart_task") == [(ConnectorTaskId("src", 1),)]


def test_restart_connector_only_is_204(client: TestClient, herder: FakeHerder) -> None:
    create(client)
    response = client.post("/connectors/src/restart")
    assert response.status_code == 204
    assert herder.called("restart_connector") == [("src", False, False)]


def test_restart_connector_and_tasks_is_202_with_states(client: TestClient, herder: FakeHerder) -> None:
    create(client)
    response = client.post("/connectors/src/restart?onlyFailed=false&includeTasks=true")
    assert response.status_code == 202
    assert response.json()["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in response.json()["tasks"]] == ["RESTARTING", "RESTARTING"]
    assert herder.called("restart_connector") == [("src", True, False)]


def test_pause_resume_stop_delete(client: TestClient, herder: FakeHerder) -> None:
    create(client)
    pause = client.put("/connectors/src/pause")
    assert (pause.status_code, pause.content) == (202, b"")
    assert herder.target.get("src") is TargetState.PAUSED
    resume = client.put("/connectors/src/resume")
    assert (resume.status_code, resume.content) == (202, b"")
    assert herder.target.get("src") is TargetState.STARTED
    stop = client.put("/connectors/src/stop")
    assert (stop.status_code, stop.content) == (204, b"")
    assert client.get("/connectors/src/status").json()["tasks"] == []
    delete = client.delete("/connectors/src")
    assert (delete.status_code, delete.content) == (204, b"")
    assert client.get("/connectors/src").status_code == 404


def test_offsets_get_alter_reset(client: TestClient, herder: FakeHerder) -> None:
    create(client)
    partition = {"cluster": "A", "topic": "t", "partition": 0}
    body = {"offsets": [{"partition": partition, "offset": {"offset": 42}}]}
    refused = client.patch("/connectors/src/offsets", json=body)
    assert refused.status_code == 400  # the fake, like Connect, requires a STOPPED connector
    assert "STOPPED" in refused.json()["message"]
    client.put("/connectors/src/stop")
    altered = client.patch("/connectors/src/offsets", json=body)
    assert altered.status_code == 200
    assert altered.json() == {"message": "The offsets for this connector have been altered successfully"}
    expected = ("src", [ConnectorOffset(partition, {"offset": 42})])
    assert herder.called("alter_connector_offsets")[-1] == expected
    listed = client.get("/connectors/src/offsets")
    assert listed.status_code == 200
    assert listed.json() == {"offsets": [{"partition": partition, "offset": {"offset": 42}}]}
    reset = client.delete("/connectors/src/offsets")
    assert reset.status_code == 200
    assert reset.json() == {"message": "The offsets for this connector have been reset successfully"}
    assert client.get("/connectors/src/offsets").json() == {"offsets": []}


def test_alter_offsets_null_offset_resets_one_partition(client: TestClient, herder: FakeHerder) -> None:
    create(client)
    client.put("/connectors/src/stop")
    body = {"offsets": [{"partition": {"p": 1}, "offset": None}]}
    response = client.patch("/connectors/src/offsets", json=body)
    assert response.status_code == 200
    assert herder.called("alter_connector_offsets")[-1] == ("src", [ConnectorOffset({"p": 1}, None)])


def test_topics_endpoints_report_tracking_disabled(client: TestClient) -> None:
    create(client)
    assert client.get("/connectors/src/topics").json() == {"error_code": 403,
                                                           "message": "Topic tracking is disabled."}
    assert client.put("/connectors/src/topics/reset").status_code == 403


def test_connector_plugins(client: TestClient, herder: FakeHerder) -> None:
    plugins = client.get("/connector-plugins")
    assert plugins.status_code == 200
    assert plugins.json()[0] == {"class": MIRROR_SOURCE, "type": "source", "version": "3.9.0"}
    everything = client.get("/connector-plugins?connectorsOnly=false").json()
    converter = {"class": "org.apache.kafka.connect.converters.ByteArrayConverter", "type": "converter"}
    assert converter in everything
    assert herder.called("connector_plugins") == [(True,), (False,)]


def test_plugin_config(client: TestClient) -> None:
    response = client.get("/connector-plugins/MirrorSourceConnector/config")
    assert response.status_code == 200
    assert response.json()[0]["name"] == "topics"
    assert client.get("/connector-plugins/Nope/config").status_code == 404


@pytest.mark.parametrize("plugin", ["MirrorSourceConnector", "MirrorSource", MIRROR_SOURCE])
def test_validate_accepts_plugin_aliases_and_hides_passwords(client: TestClient, herder: FakeHerder,
                                                             plugin: str) -> None:
    config = {"connector.class": MIRROR_SOURCE, "ssl.truststore.password": "hunter2"}
    response = client.put(f"/connector-plugins/{plugin}/config/validate", json=config)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"name", "error_count", "groups", "configs"}
    values = {c["value"]["name"]: c["value"]["value"] for c in body["configs"]}
    assert values == {"connector.class": MIRROR_SOURCE, "ssl.truststore.password": "[hidden]"}
    assert herder.called("validate_connector_config") == [(config, plugin)]


def test_validate_rejects_mismatched_connector_class(client: TestClient, herder: FakeHerder) -> None:
    response = client.put("/connector-plugins/MirrorHeartbeatConnector/config/validate",
                          json={"connector.class": MIRROR_SOURCE})
    assert response.status_code == 400
    message = f"Included connector type {MIRROR_SOURCE} does not match request type MirrorHeartbeatConnector"
    assert response.json() == {"error_code": 400, "message": message}
    assert herder.called("validate_connector_config") == []
