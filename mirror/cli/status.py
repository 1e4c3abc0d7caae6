"""``mirror status mm2.properties [--clusters B] [--json]``: is replication healthy? Exit 0, 1 or 2.

For every flow (those a ``connect-mirror-maker`` with the same ``--clusters`` would run), measured from
the clusters alone, so it works from any machine and whether or not replication runs there: heartbeat
age, end-to-end latency from heartbeats, lag per remote partition in records and seconds, checkpoint
freshness and translatability per consumer group, and an estimated RPO (see ``docs/metrics.md``).

Exit codes: 0 healthy, 1 degraded, 2 down (also 2 for a bad config, as every ``mirror`` command), so
cron jobs and Kubernetes probes can use it. Thresholds come from the ``health.*`` keys of mm2.properties
(top level or ``A->B.health.*``) and are overridden by the flags below.

``--watch`` keeps the status page's figures up to date in the terminal: the same
:class:`~mirror.health.collector.HealthMonitor` the driver runs for ``/ui`` probes the flows in the
background (a pass every ``--interval`` seconds, latency watched closely in between), so the terminal
shows exactly what the page would: one line per flow (state, heartbeat age, latency, lag, RPO, groups),
then one line per lagging partition and the reasons a flow is not healthy. ``rich`` redraws it in place;
with ``--json`` each new report is one JSON line instead, for scripts (``... --watch --json | jq``). It
runs until SIGINT, SIGTERM or SIGHUP, then exits 0.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.cli.process import ExitCode, stop_on_signals
from mirror.cli import indented_json
from mirror.cli.subcommand import positive_seconds, split_clusters
from mirror.health.flow_health import FlowHealth, HealthReport, PartitionLag, ThresholdError

if TYPE_CHECKING:
    from rich.console import Group

    from mirror.health.probe import HealthProbe

logger = logging.getLogger(__name__)

#: flag dest -> Thresholds field
_THRESHOLD_FLAGS: dict[str, tuple[str, str]] = {
    "max_heartbeat_age_ms": ("heartbeat_max_age_ms", "degraded when the newest heartbeat is older (ms)"),
    "down_heartbeat_age_ms": ("heartbeat_down_age_ms", "down when the newest heartbeat is older (ms)"),
    "max_lag_ms": ("lag_max_ms", "degraded when the oldest unreplicated record is older (ms)"),
    "max_lag_records": ("lag_max_records", "degraded when a partition lags by more records"),
    "max_rpo_ms": ("rpo_max_ms", "down when the estimated RPO is larger (ms)"),
    "max_checkpoint_age_ms": ("checkpoint_max_age_ms", "degraded when a group's newest checkpoint is older (ms)"),
}


def add_parser(subparsers: Any) -> None:
    """Register ``mirror status``."""
    parser = subparsers.add_parser("status", help="health of every replication flow (exit 0/1/2)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", metavar="mm2.properties", help="MirrorMaker 2 configuration file")
    parser.add_argument("--clusters", nargs="+", metavar="ALIAS",
                        help="only flows whose target is one of these aliases (default: all)")
    parser.add_argument("--json", action="store_true",
                        help="print JSON instead of a table (with --watch: one JSON line per refresh)")
    parser.add_argument("--watch", action="store_true",
                        help="keep the figures up to date in the terminal until Ctrl-C (exit 0)")
    parser.add_argument("--interval", type=positive_seconds, default=2.0, metavar="SECONDS",
                        help="with --watch, seconds between two probe passes (default 2)")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="timeout of each cluster request (default 10)")
    parser.add_argument("--latency-window", type=float, default=None, metavar="SECONDS",
                        help="how long to watch for new heartbeats to measure latency "
                             "(default: 2 heartbeat intervals, at most 5 s; 0 to skip)")
    for dest, (_, help_text) in _THRESHOLD_FLAGS.items():
        parser.add_argument("--" + dest.replace("_", "-"), dest=dest, type=int, metavar="N", help=help_text)
    parser.add_argument("--require-translatable", action="store_true", default=None,
                        help="degraded when a consumer group could not be translated on failover")
    parser.set_defaults(func=run)


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Threshold overrides given on the command line."""
    result: dict[str, Any] = {field: getattr(args, dest, None) for dest, (field, _) in _THRESHOLD_FLAGS.items()}
    result["require_translatable"] = getattr(args, "require_translatable", None)
    return result


def _fmt(value: float | int | None, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.1f}{unit}" if isinstance(value, float) else f"{value}{unit}"


def render(report: HealthReport) -> str:
    """The human-readable report: one block per flow."""
    out: list[str] = [f"overall: {report.state.label.upper()}"]
    for flow in report.flows:
        out.append("")
        out.append(f"{flow.name}  {flow.state.label.upper()}")
        out.append(f"  heartbeat age  {_fmt(flow.heartbeat_age_seconds, 's')} ({flow.heartbeat_basis}, "
                   f"interval {flow.heartbeat_interval_seconds:g}s)")
        out.append(f"  latency        {_fmt(flow.latency_seconds, 's')} ({flow.latency_basis})")
        out.append(f"  lag            {_fmt(flow.lag_records)} records, max {_fmt(flow.max_lag_seconds, 's')}")
        out.append(f"  RPO estimate   {_fmt(flow.rpo_seconds, 's')} ({flow.rpo_basis})")
        for reason in flow.reasons:
            out.append(f"  ! {reason}")
        for note in flow.notes:
            out.append(f"  note: {note}")
        out.extend(_partition_table(flow))
        out.extend(_group_table(flow))
    return "\n".join(out) + "\n"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]


#: the table lists at most this many partitions of a flow, the lagging ones first (worst first); the rest are
#: counted in one line: a flow of thousands of partitions stays a screenful (``--json`` has every one)
MAX_TABLE_PARTITIONS = 50


def _partition_table(flow: FlowHealth) -> list[str]:
    if not flow.partitions:
        return []
    behind = lagging(flow)
    shown_keys = {(p.remote_topic, p.partition) for p in behind}
    ordered = [*behind, *(p for p in flow.partitions if (p.remote_topic, p.partition) not in shown_keys)]
    shown = ordered[:MAX_TABLE_PARTITIONS]
    rows = [(p.remote_topic, str(p.partition), _fmt(p.source_end_offset), _fmt(p.replicated_offset),
             _fmt(p.lag_records), _fmt(p.lag_seconds, "s"), p.basis) for p in shown]
    lines = ["", *_table(("REMOTE TOPIC", "PART", "SOURCE END", "REPLICATED", "LAG", "LAG AGE", "BASIS"), rows)]
    if len(ordered) > len(shown):
        rest = ordered[len(shown):]
        still_behind = sum(1 for p in rest if (p.remote_topic, p.partition) in shown_keys)
        lines.append(f"  ... {len(rest)} more partition(s), {still_behind} of them lagging (--json lists every one)")
    return lines


def _group_table(flow: FlowHealth) -> list[str]:
    if not flow.groups:
        return []
    rows = [(g.group, "yes" if g.translatable else "no", f"{g.checkpointed_partitions}/{g.committed_partitions}",
             str(g.behind), _fmt(g.checkpoint_age_seconds, "s"), f"{g.exact_partitions}/{g.checkpointed_partitions}",
             g.sync) for g in flow.groups]
    return ["", *_table(("GROUP", "TRANSLATABLE", "CHECKPOINTED", "BEHIND", "CHECKPOINT AGE", "EXACT", "SYNC"),
                        rows)]


def run(args: argparse.Namespace) -> int:
    """Probe every flow once and print the report; the exit code is the overall state."""
    from mirror.config.mirror_maker_config import MirrorMakerConfig
    from mirror.health.probe import HealthProbe

    config = MirrorMakerConfig.from_file(args.config)
    clusters = split_clusters(args.clusters)
    pairs = config.herder_pairs(clusters)
    try:
        probe = HealthProbe.from_config(config, pairs, overrides(args), timeout_s=args.timeout)
    except ThresholdError as exc:
        raise ConfigError(f"{config.location(exc.key)}: {exc}", exc.key) from exc
    if not probe.specs:
        probe.close()
        raise ConfigError(f"{config.location('clusters')}: no enabled replication flow to check "
                          f"(only heartbeat-only pairs: {', '.join(str(p) for p in pairs)})")
    if args.watch:
        return watch(probe, args.interval, args.json)
    try:
        window = args.latency_window
        if window is None:
            window = min(5.0, 2 * max(s.heartbeat_interval_s for s in probe.specs))
        if window > 0:
            latency_probe = HealthProbe.from_config(config, pairs, overrides(args), timeout_s=args.timeout)
            try:
                report = check_while_watching_latency(probe, latency_probe, window)
            finally:
                latency_probe.close()
        else:
            report = probe.check()
    finally:
        probe.close()
    if args.json:
        sys.stdout.write(indented_json.dumps(report.to_dict()) + "\n")
    else:
        sys.stdout.write(render(report))
    return int(report.state)


def check_while_watching_latency(probe: HealthProbe, latency_probe: HealthProbe, window_s: float) -> HealthReport:
    """One full pass of ``probe`` while ``latency_probe`` watches the replicated heartbeats for up to
    ``window_s`` (until each flow got a latency sample), each flow's latency taken from the watch.

    The two overlap, so the answer takes the longer of them, not their sum: at thousands of partitions the
    pass takes about as long as the watch. The watch runs on a thread of its own with clients of its own
    (a probe is not thread-safe); a pass alone finds no latency, its first read being the baseline.
    """
    def watch() -> None:
        try:
            latency_probe.watch_latency(window_s)
        except Exception:  # an unreachable cluster is reported by the pass
            logger.debug("latency watch failed", exc_info=True)

    watcher = threading.Thread(target=watch, name="mirror-status-latency", daemon=True)
    watcher.start()
    try:
        report = probe.check()
    finally:
        watcher.join()
    for flow in report.flows:
        latency = latency_probe.latency(flow.name)
        if latency is not None:
            flow.latency_seconds, flow.latency_basis = latency, "heartbeats"
    return report


# ---- --watch ----

#: rich style of each state
STYLES = {"healthy": "bold green", "degraded": "bold yellow", "down": "bold red"}
#: at most this many lagging partitions per flow are listed (the worst first); the rest are counted
MAX_PARTITION_LINES = 20


def lagging(flow: FlowHealth) -> list[PartitionLag]:
    """The partitions of ``flow`` that are behind, worst (oldest unreplicated record) first."""
    behind = [p for p in flow.partitions if (p.lag_records or 0) > 0 or (p.lag_seconds or 0.0) > 0]
    return sorted(behind, key=lambda p: (-(p.lag_seconds or 0.0), -(p.lag_records or 0), p.remote_topic,
                                         p.partition))


def _groups(flow: FlowHealth) -> str:
    if not flow.groups:
        return "-"
    return f"{sum(1 for g in flow.groups if g.translatable)}/{len(flow.groups)} translatable"


def view(report: HealthReport) -> Group:
    """The renderable for one report: a headline, the flow table, reasons."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    checked = time.strftime("%H:%M:%S", time.localtime(report.checked_at))
    state = report.state.label
    headline = Text.assemble(("overall ", "bold"), (state.upper(), STYLES[state]),
                             f"   checked {checked}   (Ctrl-C to stop)")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("FLOW / PARTITION", "STATE", "HEARTBEAT AGE", "LATENCY", "LAG", "LAG AGE", "RPO", "GROUPS"):
        table.add_column(column, justify="left" if column in ("FLOW / PARTITION", "STATE", "GROUPS") else "right",
                         overflow="fold")  # a narrow terminal wraps a name, never cuts it
    notes: list[Text] = []
    for flow in report.flows:
        label = flow.state.label
        table.add_row(flow.name, Text(label, STYLES[label]), _fmt(flow.heartbeat_age_seconds, " s"),
                      _fmt(flow.latency_seconds, " s"), _fmt(flow.lag_records), _fmt(flow.max_lag_seconds, " s"),
                      _fmt(flow.rpo_seconds, " s"), _groups(flow))
        behind = lagging(flow)
        for p in behind[:MAX_PARTITION_LINES]:
            table.add_row(f"  {p.remote_topic}-{p.partition}", "lagging", "", "", _fmt(p.lag_records),
                          _fmt(p.lag_seconds, " s"), "", p.basis)
        if len(behind) > MAX_PARTITION_LINES:
            table.add_row(f"  ... {len(behind) - MAX_PARTITION_LINES} more lagging partition(s)", "", "", "", "",
                          "", "", "")
        notes += [Text(f"{flow.name}: {reason}", STYLES[label]) for reason in flow.reasons]
    return Group(headline, table, *notes)


def watch(probe: HealthProbe, interval_s: float, as_json: bool) -> int:
    """Show every new report until a stop signal; the probe is closed on the way out."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from mirror.health.collector import HealthMonitor

    monitor = HealthMonitor(probe, interval_s).start()
    stop = threading.Event()
    shown: HealthReport | None = None
    console = Console(highlight=False)
    try:
        with stop_on_signals(stop):
            if as_json:
                while not stop.wait(0.1):
                    report = monitor.latest()
                    if report is not None and report is not shown:
                        shown = report
                        sys.stdout.write(json.dumps(report.to_dict(), separators=(",", ":")) + "\n")
                        sys.stdout.flush()
                return ExitCode.OK
            waiting: Any = Text("probing the clusters...", "dim")
            with Live(waiting, console=console, refresh_per_second=4, auto_refresh=False) as live:
                while not stop.wait(0.1):
                    report = monitor.latest()
                    if report is not None and report is not shown:
                        shown = report
                        live.update(view(report), refresh=True)
    finally:
        monitor.stop()  # closes the probe's clients
    return ExitCode.OK
