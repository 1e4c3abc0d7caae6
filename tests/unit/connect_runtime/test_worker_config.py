"""Worker config parsing, derived client configs, worker id, and the CLI's bad-config exit path."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_runtime.api.errors import ConfigError
from connect_runtime.cli.connect_distributed import main
from connect_runtime.runtime import worker_config as wc

BASE = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o",
        "status.storage.topic": "s"}


def test_defaults_match_connect() -> None:
    config = wc.DistributedWorkerConfig(BASE)
    assert (config[wc.OFFSET_PARTITIONS], config[wc.STATUS_PARTITIONS], config[wc.CONFIG_RF]) == (25, 5, 3)
    keys = (wc.OFFSET_FLUSH_INTERVAL_MS, wc.SESSION_TIMEOUT_MS, wc.HEARTBEAT_INTERVAL_MS, wc.REBALANCE_TIMEOUT_MS,
            wc.SCHEDULED_REBALANCE_MAX_DELAY_MS)
    # heartbeat.interval.ms is ours (Java: 3000): a crashed worker's work moves 2 s sooner (worker_config.py)
    assert [config[k] for k in keys] == [60000, 10000, 1000, 60000, 300000]
    assert config.listeners == [wc.Listener("http", "", 8083)]
    assert config[wc.EXACTLY_ONCE_SOURCE_SUPPORT] == "disabled"


@pytest.mark.parametrize("missing", sorted(BASE))
def test_required_keys(missing: str) -> None:
    with pytest.raises(ConfigError) as err:
        wc.DistributedWorkerConfig({k: v for k, v in BASE.items() if k != missing})
    assert err.value.key == missing


@pytest.mark.parametrize(("key", "value"), [("exactly.once.source.support", "maybe"), ("listeners", "ftp://:1"),
                                            ("config.storage.replication.factor", "0"),
                                            ("offset.storage.partitions", "0")])
def test_invalid_values_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        wc.DistributedWorkerConfig({**BASE, key: value})
    assert err.value.key == key


def test_client_configs_take_top_level_connection_keys_and_role_overrides() -> None:
    config = wc.DistributedWorkerConfig({**BASE, "bootstrap.servers": "h1:9092, h2:9092",
                                         "security.protocol": "SSL",
                                         "producer.linger.ms": "7", "consumer.fetch.max.wait.ms": "9",
                                         "admin.security.protocol": "PLAINTEXT", "key.converter": "x",
                                         "session.timeout.ms": "6000"})
    producer, consumer, admin = config.producer_config("p"), config.consumer_config(), config.admin_config()
    assert producer == {"bootstrap.servers": "h1:9092,h2:9092", "security.protocol": "SSL", "linger.ms": "7",
                        "client.id": "connect-g-p"}
    assert consumer["fetch.wait.max.ms"] == "9" and "linger.ms" not in consumer
    assert "session.timeout.ms" not in consumer  # a membership setting, not a log consumer's
    assert admin["security.protocol"] == "PLAINTEXT"


def test_worker_id_uses_advertised_host_and_bound_port() -> None:
    config = wc.DistributedWorkerConfig({**BASE, "listeners": "http://127.0.0.1:0"})
    assert wc.worker_id(config, 41234) == "127.0.0.1:41234"
    assert wc.advertised_url(config, 41234) == "http://127.0.0.1:41234"
    advertised = wc.DistributedWorkerConfig({**BASE, "rest.advertised.host.name": "w1",
                                             "rest.advertised.port": "80"})
    assert wc.worker_id(advertised, 41234) == "w1:80"


def test_cli_bad_config_is_one_line_naming_file_and_key(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "worker.properties"
    path.write_text("group.id=g\nconfig.storage.topic=c\noffset.storage.topic=o\nstatus.storage.topic=s\n"
                    "offset.storage.partitions=many\n")
    assert main([str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}:5: ") and "offset.storage.partitions" in err and "\n" not in err
    assert main([str(tmp_path / "missing.properties")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_the_example_worker_properties_is_valid() -> None:
    from connect_runtime.cli.connect_distributed import load_worker_config

    example = Path(__file__).resolve().parents[3] / "etc" / "connect-distributed.properties"
    config, providers = load_worker_config(str(example))
    assert config.group_id == "connect-cluster" and providers == {}
    assert config[wc.CONFIG_TOPIC] == "connect-configs" and config.listeners == [wc.Listener("http", "", 8083)]
