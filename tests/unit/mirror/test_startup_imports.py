"""Start-up imports: what the entry points import before they do any work.

Importing is most of the ~1 s between spawning ``connect-mirror-maker`` and its first log line, so the
modules that only optional features need are imported where those features run: pyjks/cryptography
(a JKS, PKCS12 or PEM store is configured), httpx (a follower forwards to the leader; the quickstart's
live summary), and for the ``mirror`` command everything its subcommands need only when they run.
These tests guard that without timing anything: a fresh interpreter imports the entry point and
reports which of those packages ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mirror.cli import offsets

CHECKOUT = Path(__file__).resolve().parents[3]

#: Top-level packages a node needs only for a configured store (jks, cryptography and their own
#: dependencies) or for forwarding (httpx, and rich/pygments which only httpx's CLI module brings).
OPTIONAL_AT_NODE_START = {"jks", "cryptography", "Cryptodome", "pyasn1", "pyasn1_modules", "javaobj", "httpx",
                          "rich", "pygments", "pyspark"}

#: What ``mirror <command> --help`` must not import: the runtime, the REST stack, the Kafka client.
NOT_FOR_THE_MIRROR_PARSER = {"confluent_kafka", "starlette", "uvicorn", "prometheus_client", "httpx", "jks",
                             "cryptography", "pyspark"}


def imported_after(code: str) -> set[str]:
    """The top-level packages in ``sys.modules`` after a fresh interpreter (importing this checkout,
    not whatever is pip-installed) runs ``code``."""
    report = "import json, sys; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    done = subprocess.run([sys.executable, "-c", f"{code}\n{report}"], cwd=CHECKOUT, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(CHECKOUT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_a_node_imports_no_optional_feature_before_it_starts() -> None:
    # The node's whole import set: the entry point, and what its run() imports before the driver starts.
    loaded = imported_after("import mirror.cli.connect_mirror_maker\n"
                            "import mirror.maker.mirror_maker, mirror.maker.config_check, mirror.maker.config_lint\n"
                            "import mirror.config.mirror_maker_config")
    assert {"mirror", "connect_runtime", "confluent_kafka"} <= loaded  # the probe saw a real import
    assert loaded & OPTIONAL_AT_NODE_START == set()


def test_the_mirror_command_builds_its_parser_without_the_runtime() -> None:
    loaded = imported_after("from mirror.cli.main import build_parser\nbuild_parser()")
    assert "mirror" in loaded and "configargparse" in loaded
    assert loaded & NOT_FOR_THE_MIRROR_PARSER == set()


def test_the_mirror_command_still_offers_every_subcommand() -> None:
    # Deferred imports must not turn into a silently missing subcommand (main.py skips modules that
    # fail to import): the same parser, built in a fresh interpreter, lists them all.
    code = ("from mirror.cli.main import build_parser\n"
            "p = build_parser()\n"
            "import json\n"
            "print(json.dumps(sorted(p._subparsers._group_actions[0].choices)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=CHECKOUT, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(CHECKOUT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    offered = set(json.loads(done.stdout.splitlines()[-1]))
    assert {"run", "config", "offsets", "failover", "failback", "status", "backfill", "quickstart"} <= offered


def test_offsets_timeout_default_is_mirror_clients() -> None:
    # offsets.py repeats the constant so that its parser does not import MirrorClient.
    from mirror.client.mirror_client import DEFAULT_TIMEOUT_S

    assert offsets.DEFAULT_TIMEOUT_S == DEFAULT_TIMEOUT_S
