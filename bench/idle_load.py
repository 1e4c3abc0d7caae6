"""What an idle node costs the brokers: their CPU and the requests it sends them, by client and API.

Two single-node Apache Kafka 4.4 clusters A and B (bench/kafka_brokers.py, every completed request
logged). Each round measures the two brokers alone, then with one ``connect-mirror-maker`` node running
the flow as shipped (checkpoints and heartbeats on, bench/replication.py) for an idle topic, once per
code under test (the current code, and with ``--compare-code DIR`` the code in DIR), one after the
other. A node is given ``--settle`` seconds after its task runs, then measured for ``--seconds``: the
brokers' CPU (user + system of both JVMs, in cores) and the requests they completed per second.

Why it matters: the brokers of a small box spend their CPU on every request, and a node that copies a
backlog still sends every request an idle one does (its internal topics' readers, group heartbeats,
health probes). On the benchmark box that load competes with the copy.

Usage::

    python bench/idle_load.py [--runs 3] [--seconds 20] [--settle 15] [--compare-code DIR] [--json out.json]
                              [--record [--title TITLE] [--output FILE]]

``--record`` records the run in bench/results.md as every bench command does (bench/recording.py: the
machine, the load at the start, the commit), or writes that section to ``--output``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import kafka_brokers, recording, replication
from bench.common import create_topic, machine_facts, unique

DEFAULT_FLOW = replication.DEFAULT_FLOW
_REQUEST = re.compile(r'"clientId":"([^"]*)","requestApiKeyName":"(\w+)"')
#: Random parts of client ids (aliases, uuids): requests of the same role are counted together.
_RANDOM = re.compile(r"[0-9a-f]{6,}|A[0-9a-f]{5}")
#: A ``|`` in a client id (Connect's ``A->B|Connector|role``), escaped inside a Markdown table cell.
PIPE = "\\|"


def broker_cpu_s() -> float:
    """User + system CPU seconds of every Kafka broker JVM on the machine (this script's brokers)."""
    return sum(total for total, _ in kafka_brokers.broker_cpu().values())


def log_sizes(logs: list[Path]) -> dict[Path, int]:
    return {log: log.stat().st_size for log in logs}


def requests_since(sizes: dict[Path, int]) -> Counter[tuple[str, str, str]]:
    """Requests completed since ``sizes`` were taken: (broker, client role, API) -> count."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for log, offset in sizes.items():
        with log.open("rb") as handle:
            handle.seek(offset)
            text = handle.read().decode(errors="replace")
        for client, api in _REQUEST.findall(text):
            counts[(log.parent.name, _RANDOM.sub("*", client), api)] += 1
    return counts


def measure(logs: list[Path], seconds: float) -> tuple[float, Counter[tuple[str, str, str]]]:
    """Brokers' CPU in cores and requests per ``seconds`` from now."""
    sizes, cpu, began = log_sizes(logs), broker_cpu_s(), time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - began
    return (broker_cpu_s() - cpu) / elapsed, requests_since(sizes)


def run(runs: int, seconds: float, settle: float, compare_code: Path | None) -> list[dict[str, Any]]:
    codes: list[tuple[str, Path | None]] = [("current", None)]
    if compare_code is not None:
        codes.insert(0, ("compared", compare_code))
    results: list[dict[str, Any]] = []
    with kafka_brokers.kafka_brokers(("bench-a", "bench-b"), log_requests=True) as (source, target):
        logs = [kafka_brokers.BROKER_LOGS[source], kafka_brokers.BROKER_LOGS[target]]
        topic = unique("idle")
        create_topic(source, topic, 8)
        time.sleep(settle)  # the brokers' own start-up work
        for round_ in range(runs):
            alone, _ = measure(logs, seconds)
            order = codes if round_ % 2 == 0 else codes[::-1]
            for name, code in order:
                workdir = Path(tempfile.mkdtemp(prefix="idle-load-"))
                repl = replication.start(workdir, source, target, topic=topic, tasks=1, workers=1,
                                         source_alias=f"A{unique('')[1:6]}", extra=DEFAULT_FLOW, code=code)
                try:
                    time.sleep(settle)
                    cores, requests = measure(logs, seconds)
                finally:
                    repl.stop()
                results.append({"round": round_, "code": name, "alone_cores": alone, "cores": cores,
                                "requests_per_s": sum(requests.values()) / seconds,
                                "by_source": {" ".join(k): v / seconds for k, v in requests.most_common()}})
                print(f"round {round_} {name}: brokers {alone:.3f} cores alone, {cores:.3f} with the node, "
                      f"{sum(requests.values()) / seconds:.1f} requests/s", flush=True)
                time.sleep(5)
    return results


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| code | runs | brokers' CPU alone (cores) | with an idle node | added by the node | requests/s |",
             "|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["code"] for r in results):
        rows = [r for r in results if r["code"] == name]

        def med(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return float(statistics.median(r[key] for r in rows))

        added = statistics.median(r["cores"] - r["alone_cores"] for r in rows)
        lines.append(f"| {name} | {len(rows)} | {med('alone_cores'):.3f} | {med('cores'):.3f} | {added:.3f} | "
                     f"{med('requests_per_s'):.1f} |")
    codes = list(dict.fromkeys(r["code"] for r in results))
    medians = {name: Counter({k: statistics.median(r["by_source"].get(k, 0.0) for r in rows)
                              for r in rows for k in r["by_source"]})
               for name in codes if (rows := [r for r in results if r["code"] == name])}
    lines += ["", "| code | broker, client, API: requests/s (median over the runs, the 12 largest) |", "|---|---|"]
    for name in codes:
        cells = (f"{key.replace('|', PIPE)} {value:.1f}" for key, value in medians[name].most_common(12))
        lines.append(f"| {name} | {', '.join(cells)} |")
    if len(codes) == 2:  # what the change under test moved: the largest differences, whichever way
        before, after = (medians[name] for name in codes)
        moved = sorted(set(before) | set(after), key=lambda k: -abs(after[k] - before[k]))[:12]
        lines += ["", f"| broker, client, API | {codes[0]}: requests/s | {codes[1]}: requests/s |", "|---|---|---|"]
        lines += [f"| {key.replace('|', PIPE)} | {before[key]:.2f} | {after[key]:.2f} |" for key in moved
                  if before[key] != after[key]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--compare-code", type=Path, metavar="DIR",
                        help="also measure a node on the packages in DIR (e.g. `git archive HEAD~1 | tar -x -C DIR`)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--record", action="store_true", help="record the run (bench/recording.py)")
    parser.add_argument("--title", default="what an idle node asks of the brokers",
                        help="with --record: the recorded section's heading after its date")
    parser.add_argument("--output", type=Path, help="with --record: write the section to FILE instead")
    args = parser.parse_args(argv)
    rule, loads = recording.at_start()
    facts = {**machine_facts(), **rule.rows(loads)}
    start, began = datetime.datetime.now(datetime.UTC), time.monotonic()
    results = run(args.runs, args.seconds, args.settle, args.compare_code)
    print()
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.record:
        compared = f"; \"compared\" is the code in {args.compare_code}" if args.compare_code else ""
        heading, text = recording.section(
            f"python bench/idle_load.py {' '.join(argv if argv is not None else sys.argv[1:])}".strip(),
            args.title, "Kafka 4.4.0", "bench/idle_load.py", facts,
            [(f"idle load (2 brokers; median of {args.runs} rounds{compared})", table(results))], start, began)
        recording.keep(heading, text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
