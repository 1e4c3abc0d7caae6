"""bench/native_copier.py: built on the wheel's librdkafka, with the task's settings; Java's tuned keys from them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import java_copier, native_copier, pipe

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                                reason="the native copier needs a C compiler")


def test_it_links_the_librdkafka_confluent_kafka_loaded() -> None:
    import confluent_kafka

    library = native_copier.librdkafka_path()
    assert "librdkafka" in library.name and library.exists()
    assert Path(confluent_kafka.__file__).parent.parent in library.parents  # the wheel's own copy
    assert native_copier.binary().exists()


def test_its_clients_run_with_the_task_settings(tmp_path: Path) -> None:
    configs = native_copier.effective_configs(tmp_path)
    producer, consumer = configs["producer"], configs["consumer"]
    task = pipe.producer_config("localhost:9092", None)
    assert producer["request.required.acks"] == "-1" and task["acks"] == "all"
    assert producer["queue.buffering.max.ms"] == task["linger.ms"]
    assert producer["message.timeout.ms"] == task["message.timeout.ms"]
    assert producer["queue.buffering.max.kbytes"] == task["queue.buffering.max.kbytes"]
    assert producer["enable.idempotence"] == producer["enable.gapless.guarantee"] == "true"
    assert producer["max.in.flight.requests.per.connection"] == "5"  # what librdkafka makes of it with idempotence
    assert producer["delivery.report.only.error"] == "true"
    aliases = {"bootstrap.servers": "metadata.broker.list"}  # the names and values rd_kafka_conf_dump uses
    same = {"earliest": "smallest"}
    for key, value in pipe.consumer_config("localhost:9092").items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        assert consumer[aliases.get(key, key)] == same.get(text, text), key


def test_a_python_only_entry_is_left_out_and_a_line_break_refused() -> None:
    lines = native_copier.librdkafka_lines({"a.b": "1", "on_delivery": print, "error_cb": None, "c": True})
    assert lines == "a.b=1\nc=true\n"
    with pytest.raises(SystemExit, match="line break"):
        native_copier.librdkafka_lines({"a": "1\nb=2"})


def test_java_tuned_gets_our_settings_under_java_keys() -> None:
    settings = java_copier.tuned_settings()
    assert settings["producer"] == {
        "acks": "all", "enable.idempotence": "true", "max.in.flight.requests.per.connection": "5",
        "linger.ms": "10", "batch.size": "1000000", "buffer.memory": str(131072 * 1024), "compression.type": "none",
        "delivery.timeout.ms": str(2**31 - 1), "send.buffer.bytes": "-1", "receive.buffer.bytes": "-1"}
    assert settings["consumer"] == {
        "fetch.min.bytes": "1", "fetch.max.bytes": "52428800", "max.partition.fetch.bytes": "1048576",
        "fetch.max.wait.ms": "500", "max.poll.records": "500", "isolation.level": "read_uncommitted",
        "receive.buffer.bytes": "-1"}
    props = java_copier.tuned_properties("A->B", settings)
    assert props["A->B.producer.override.linger.ms"] == "10" and props["A->B.consumer.max.poll.records"] == "500"
