"""``mirror config show|docs``: what an ``mm2.properties`` means, and the reference of every key.

``show`` prints exactly what the driver would build (herder pairs, the worker config and the three
connector configs of each pair), so an operator can check precedence before starting anything: the
file's findings first (:mod:`mirror.maker.config_lint`: every key MM2 would not apply where it is
written), then per herder its effective settings and where each value came from
(:mod:`mirror.maker.provenance`). It checks the file as the driver does
(:func:`mirror.maker.config_check.check_mm2_properties`: its structure, and what the herders would refuse,
the connectors' own validation and the client override policy included), so a file whose structure or
herders fail fails here with exit 2 and every refusal on its own line; a file ``connect-mirror-maker``
would refuse only for its lines is printed, its refusals repeated on stderr, and exits 2 too. Secrets
print as ``[hidden]`` and ``${provider:...}`` placeholders are shown unresolved, so the output is safe to
paste into a ticket. ``docs`` renders the ConfigDefs, so the reference cannot drift from the code.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from mirror.cli.subcommand import split_clusters

if TYPE_CHECKING:
    from mirror.config.mirror_maker_config import MirrorMakerConfig

# The config modules are imported in the functions that use them: they bring the clients and the
# runtime's validation (~200 ms), which every other `mirror` command (and its --help) would pay for,
# since `mirror` imports this module to offer `config`.


def add_parser(subparsers: Any) -> None:
    """Register ``mirror config show`` and ``mirror config docs``."""
    parser = subparsers.add_parser("config", help="inspect a configuration or print the key reference")
    commands = parser.add_subparsers(dest="config_command", metavar="{show,docs}", required=True)
    show = commands.add_parser("show", help="print the herders, worker and connector configs of a file")
    show.add_argument("config", metavar="mm2.properties", help="MirrorMaker 2 configuration file")
    show.add_argument("--clusters", nargs="+", metavar="ALIAS", help="only flows into these target aliases")
    show.add_argument("--json", action="store_true", help="print JSON instead of properties-style text")
    show.add_argument("--strict", action="store_true",
                      help="exit 2 on any warning about the file, as connect-mirror-maker --strict would")
    show.set_defaults(func=run_show)
    docs = commands.add_parser("docs", help="print the Markdown reference of every configuration key")
    docs.set_defaults(func=run_docs)


def describe(config: MirrorMakerConfig, clusters: list[str] | None, strict: bool = False) -> dict[str, Any]:
    """The redacted view of what the driver would build, as plain data; ``refused`` lists the findings
    that would refuse the start (ConfigError if a herder would refuse the file)."""
    from connect_runtime.api.config import redact
    from mirror.config.mirror_maker_config import CONNECTOR_CLASSES, connector_simple_name
    from mirror.maker.config_check import LINT, check_mm2_properties
    from mirror.maker.provenance import flow_settings, worker_settings

    report = check_mm2_properties(config, clusters, strict=strict, resolve_providers=False)
    if any(f.stage != LINT for f in report.refused()):  # no view to show of a file the driver cannot build
        report.raise_if_refused()
    herders = []
    for pair in report.pairs:
        connectors = {connector_simple_name(cls): redact(dict(sorted(
            config.connector_base_config(pair, cls).items()))) for cls in CONNECTOR_CLASSES}
        herders.append({
            "flow": str(pair), "source": pair.source, "target": pair.target,
            "settings": {"worker": [s.as_dict() for s in worker_settings(config, pair)],
                         "flow": [s.as_dict() for s in flow_settings(config, pair)]},
            "worker": redact(dict(sorted(config.worker_config(pair, resolve_providers=False).items()))),
            "connectors": connectors,
        })
    return {"file": config.source_name, "clusters": config.clusters, "herders": herders, **report.as_dict()}


def render_text(view: dict[str, Any]) -> str:
    """Properties-style text: a header per herder, ``key = value`` lines per config."""
    herders = view["herders"]
    lines = [f"# {view['file']}: clusters {', '.join(view['clusters'])}",
             f"# herders ({len(herders)}): {', '.join(h['flow'] for h in herders)}"]
    lines += [f"# note: {notice}" for notice in view.get("notices", [])]
    lines += [f"# {f['severity']}: {f['text']}" for f in view.get("findings", [])]
    for herder in herders:
        lines += ["", f"## herder {herder['flow']}"]
        for part, title in (("worker", "effective worker settings"), ("flow", "effective flow settings")):
            lines += ["", f"### {title} (value  # where it comes from)"]
            lines += [_setting_text(s) for s in herder["settings"][part]]
        lines += ["", "### worker config"]
        lines += [f"{k} = {v}" for k, v in herder["worker"].items()]
        for name, connector in herder["connectors"].items():
            lines += ["", f"### connector {name}"]
            lines += [f"{k} = {v}" for k, v in connector.items()]
    return "\n".join(lines) + "\n"


def _setting_text(setting: dict[str, Any]) -> str:
    where = setting["source"] + (f" ({setting['location']})" if setting["location"] else "")
    value = "" if setting["value"] is None else setting["value"]
    return f"{setting['key']} = {value}  # {where}" + "".join(f"; not applied: {i}" for i in setting["ignored"])


def run_show(args: argparse.Namespace) -> int:
    from connect_runtime.cli.process import ExitCode
    from mirror.cli.subcommand import print_error
    from mirror.config.mirror_maker_config import MirrorMakerConfig

    view = describe(MirrorMakerConfig.from_file(args.config), split_clusters(args.clusters),
                    bool(getattr(args, "strict", False)))
    out = json.dumps(view, indent=2) + "\n" if args.json else render_text(view)
    sys.stdout.write(out)
    sys.stdout.flush()
    for line in view["refused"]:
        print_error(line)
    return ExitCode.USAGE if view["refused"] else 0


def reference_markdown() -> str:
    """The Markdown reference of every key: driver keys, then each connector's keys."""
    from connect_runtime.api.connector_config import CONNECTOR_CONFIG_DEF
    from mirror.config import checkpoint as checkpoint_config
    from mirror.config import heartbeat as heartbeat_config
    from mirror.config import mirror_maker_config
    from mirror.config import source as source_config
    from mirror.config.client_keys import CLIENT_SECURITY_CONFIG_DEF
    from mirror.config.connector_base import BASE_CONNECTOR_CONFIG_DEF, MIRROR_SHARED_CONFIG_DEF

    base = BASE_CONNECTOR_CONFIG_DEF.names()
    parts = [
        "# MirrorMaker 2 configuration reference",
        "",
        "Generated by `mirror config docs` from the code's ConfigDefs. In `mm2.properties`, connector keys "
        "can be set at top level (every flow), per flow as `<source>-><target>.<key>` (wins), and client "
        "keys per cluster as `<alias>.<key>`, `<alias>.consumer.<key>`, `<alias>.producer.<key>`, "
        "`<alias>.admin.<key>`.",
        "",
        "## Driver keys (`MirrorMakerConfig`)",
        "",
        mirror_maker_config.CONFIG_DEF.to_markdown(),
        "Top-level `bootstrap.servers`, `security.protocol`, `ssl.*` and `sasl.*` are fallbacks for every "
        "cluster. Top-level keys starting with `offset.storage`, `config.storage`, `status.storage`, "
        "`key.converter`, `value.converter`, `header.converter`, `task`, `worker` or `replication.policy` "
        "go into every herder's worker config.",
        "",
        "## Keys of every connector",
        "",
        MIRROR_SHARED_CONFIG_DEF.to_markdown("MirrorMaker keys"),
        CONNECTOR_CONFIG_DEF.to_markdown("Kafka Connect connector keys"),
        CLIENT_SECURITY_CONFIG_DEF.to_markdown("Client security keys"),
    ]
    for title, definition, task_definition in (
        ("MirrorSourceConnector", source_config.CONFIG_DEF, source_config.TASK_CONFIG_DEF),
        ("MirrorCheckpointConnector", checkpoint_config.CONFIG_DEF, checkpoint_config.TASK_CONFIG_DEF),
        ("MirrorHeartbeatConnector", heartbeat_config.CONFIG_DEF, None),
    ):
        keys = (task_definition or definition).keys()
        own = type(definition)([k for k in keys if k.name not in base])
        parts += [f"## {title}", "", own.to_markdown()]
    parts += [
        "`use.defaults.from` (`target` or `source`, default `target`) is read by the default config "
        "property filter of MirrorSourceConnector. As in Java MM2 it is not a declared key, so only the "
        "per-flow form `<source>-><target>.use.defaults.from` reaches the connector.",
        "",
    ]
    return "\n".join(parts)


def run_docs(args: argparse.Namespace) -> int:
    sys.stdout.write(reference_markdown())
    return 0
