"""The copier's garbage-collector settings (connect_runtime/runtime/worker/gc_policy.py).

Each case runs in a fresh interpreter: freezing the test process's heap would change every later test's.
The workload is a task's: batches of 10,000 consumed-message objects (``confluent_kafka.Message``, which the
cyclic collector tracks), each freed once handled, in a process that first built a heap of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

_WORKLOAD = """
import gc, json, sys
from confluent_kafka import Message
from connect_runtime.runtime.worker import gc_policy

heap = [{"key": i, "values": [i, str(i)]} for i in range(100_000)]  # what a node builds at start
tuned = gc_policy.tune_collector()
frozen = gc_policy.freeze_startup_objects()
collections = [0, 0, 0]
gc.callbacks.append(lambda phase, info: phase == "start" and collections.__setitem__(
    info["generation"], collections[info["generation"]] + 1))
for b in range(30):
    batch = [Message(topic="t", partition=b % 8, offset=i, value=b"x" * 100) for i in range(10_000)]
    del batch
print(json.dumps({"tuned": tuned, "frozen": frozen, "collections": collections,
                  "threshold": gc.get_threshold()}))
"""


def _run(env_value: str | None) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CONNECT_GC_TUNE", None)
    if env_value is not None:
        env["CONNECT_GC_TUNE"] = env_value
    out = subprocess.run([sys.executable, "-c", _WORKLOAD], env=env, capture_output=True, text=True, timeout=120,
                         check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_batches_of_messages_no_longer_start_full_collections() -> None:
    default = _run("0")
    tuned = _run(None)
    # CPython's defaults: a young collection every 700 objects, so full ones every ~70,000 messages,
    # each walking the whole start-up heap
    assert default["tuned"] is False and default["frozen"] == 0
    assert default["collections"][2] >= 3, default  # type: ignore[index]
    # tuned: the start-up heap is frozen, and a batch is freed before a young collection is due
    assert tuned["tuned"] is True and tuned["frozen"] > 100_000, tuned  # type: ignore[operator]
    assert tuned["threshold"][0] == 50_000, tuned  # type: ignore[index]
    assert tuned["collections"] == [0, 0, 0], tuned
