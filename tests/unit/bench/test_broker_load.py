"""bench/broker_load.py: the brokers' CPU by broker and thread pool, and Kafka's request log counted per client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import broker_load, throughput
from bench.broker_load import Sample


def log_line(client: str, api: str, request: object, response: object = None) -> str:
    entry = {"isForwarded": False,
             "requestHeader": {"requestApiKey": 0, "requestApiVersion": 12, "correlationId": 7, "clientId": client,
                               "requestApiKeyName": api},
             "request": request, "response": response, "connection": "127.0.0.1:9092-127.0.0.1:5000-0",
             "totalTimeMs": 1.5}
    return f"[2026-11-29 03:00:00,000] DEBUG Completed request:{json.dumps(entry)} (kafka.request.logger)"


def produce(client: str, sizes: list[int]) -> str:
    partitions = [{"index": i, "recordsSizeInBytes": n} for i, n in enumerate(sizes)]
    topics = [{"name": "A1b2c3.bench", "partitionData": partitions}]
    return log_line(client, "PRODUCE", {"acks": -1, "topicData": topics})


def fetch(client: str, sizes: list[int]) -> str:
    return log_line(client, "FETCH", {"maxWaitMs": 500, "topics": [{"topic": "bench", "partitions": []}]},
                    {"responses": [{"topic": "bench", "partitions": [
                        {"partitionIndex": i, "highWatermark": 9, "recordsSizeInBytes": n}
                        for i, n in enumerate(sizes)]}]})


def test_a_produce_counts_the_batches_it_carried_a_fetch_those_its_response_carried() -> None:
    assert broker_load.parse_line(produce("connector-producer-MirrorSourceConnector-0", [1000, 2000, 0])) == (
        "connector-producer-MirrorSourceConnector-0", "PRODUCE", "A1b2c3.bench", 2, 3000)
    assert broker_load.parse_line(fetch("bench-pipe", [0, 500])) == ("bench-pipe", "FETCH", "bench", 1, 500)
    assert broker_load.parse_line(fetch("bench-pipe", [0])) == ("bench-pipe", "FETCH", "-", 0, 0)
    started = "[2026-11-29 03:00:00,000] INFO Kafka Server started (kafka.server.KafkaRaftServer)"
    assert broker_load.parse_line(started) is None
    assert broker_load.parse_line('[x] DEBUG Completed request:{"requestHeader": {"clie') is None  # cut at the end


def test_requests_between_two_samples_are_counted_per_broker_api_and_client_role(tmp_path: Path) -> None:
    log = tmp_path / "kafka.log"
    before_lines = [produce("early", [1])]
    during = [produce("A1b2c3->B|MirrorSourceConnector-0|offset-syncs-source-producer", [80]),
              produce("Aa9f00->B|MirrorSourceConnector-0|offset-syncs-source-producer", [80, 80]),
              fetch("A1b2c3->B|MirrorSourceConnector-0|replication-consumer", [100_000])]
    after_lines = [produce("late", [1])]
    log.write_text("\n".join(before_lines) + "\n")
    start = log.stat().st_size
    log.write_text("\n".join(before_lines + during) + "\n")
    end = log.stat().st_size
    log.write_text("\n".join(before_lines + during + after_lines) + "\n")
    before = {1: Sample("bench-a", {}, 0.0, log, start)}
    after = {1: Sample("bench-a", {}, 0.0, log, end)}
    rows = broker_load.requests_between(before, after).as_rows()
    assert rows == {"A PRODUCE *.bench *->B|MirrorSourceConnector-0|offset-syncs-source-producer": [2, 3, 240],
                    "A FETCH bench *->B|MirrorSourceConnector-0|replication-consumer": [1, 1, 100_000]}


def test_the_brokers_cpu_goes_to_thread_pools_by_the_jvms_names_with_the_kernels_share(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    names = {11: "data-plane-kafka-request-handler-0", 12: "data-plane-kafka-request-handler-1",
             13: "data-plane-kafka-network-thread-1-ListenerName(PLAINTEXT)-PLAINTEXT-0", 14: "C2 CompilerThread0"}
    monkeypatch.setattr(broker_load, "java_thread_names", lambda pid: names)
    broker_load._NAMES.clear()
    short = {tid: "data-plane-kafk" for tid in (11, 12, 13)} | {14: "C2 CompilerThre", 15: "java"}
    before = {7: Sample("bench-b", {tid: (short[tid], 1.0) for tid in short}, 0.5, tmp_path / "log", 0)}
    now = {11: 2.0, 12: 1.5, 13: 1.25, 14: 1.0, 15: 1.1}
    after = {7: Sample("bench-b", {tid: (short[tid], cpu) for tid, cpu in now.items()}, 0.9, tmp_path / "log", 0)}
    threads, totals = broker_load.cpu_since(before, after)
    assert threads == {"B data-plane-kafka-request-handler-*": 1.5,
                       "B data-plane-kafka-network-thread-*-ListenerName(PLAINTEXT)-PLAINTEXT-*": 0.25,
                       "B java": 0.1}  # a thread the JVM does not name keeps its OS name
    assert totals == {"B": 1.85, "B system": 0.4}
    assert broker_load.pool("GC Thread#1") == "GC Thread#*" and broker_load.pool("C2 CompilerThread3") == \
        "C2 CompilerThread*"


def test_the_summary_gives_medians_per_record_of_each_broker_thread_and_request_count() -> None:
    runs = [throughput.Result("mm2-1", 100, 1000, records_per_s=1.0, round=i) for i in range(3)]
    for run, (handler, requests) in zip(runs, [(0.002, 10), (0.004, 30), (0.003, 20)], strict=True):
        run.broker_threads = {"B data-plane-kafka-request-handler-*": handler}
        run.broker_totals = {"B": handler * 2, "B system": handler / 2}
        run.requests = {"B PRODUCE *.bench *->B": [requests, requests * 8, 1000]}
    runs[2].broker_threads = {"B data-plane-kafka-request-handler-*": 0.003, "B C2 CompilerThread*": 0.003}
    row = next(r for r in throughput.summarize(runs) if r["mode"] == "mm2-1")
    assert row["broker_threads"] == {"B data-plane-kafka-request-handler-*": 3.0, "B C2 CompilerThread*": 0.0}
    assert row["broker_totals"] == {"B": 6.0, "B system": 1.5}
    assert row["requests"] == {"B PRODUCE *.bench *->B": [20, 160, 1000]}
    text = throughput.report([row], ["mm2-1"])
    assert "| B | 6.000 | 1.500 | data-plane-kafka-request-handler-* 3.000, C2 CompilerThread* 0.000 |" in text
    assert "| B | PRODUCE | *.bench | *->B | 20,000.0 | 8.00 | 6 |" in text


def test_a_variant_is_the_flow_as_shipped_with_its_settings() -> None:
    mode = throughput.add_variant("linger50:B.producer.linger.ms=50,offset.lag.max=1000")
    try:
        assert mode == "mm2-1-linger50" and throughput.on_default_flow(mode)
        assert throughput.VARIANTS[mode] == {"B.producer.linger.ms": "50", "offset.lag.max": "1000"}
        assert throughput.tasks_and_workers(mode) == (1, 1)
        with pytest.raises(SystemExit):
            throughput.add_variant("linger50:linger.ms=5")  # the mode exists already
        with pytest.raises(SystemExit):
            throughput.add_variant("bad")
    finally:
        for table in (throughput.SETTING_VARIANTS, throughput.VARIANTS, throughput.LABELS):
            table.pop(mode, None)
