"""The MM2 driver: one distributed herder per source->target pair, on one shared runtime in the process.

What ``connect-mirror-maker mm2.properties [--clusters B ...]`` runs (Kafka's ``MirrorMaker.java`` and
``MirrorHerder.java``):

* For each herder pair of :meth:`MirrorMakerConfig.herder_pairs` (the target clusters named by
  ``--clusters``, all without it, including the heartbeat-only reverse pairs of docs/architecture.md) one
  :class:`~mirror.maker.mirror_herder.MirrorHerder`: a Connect cluster member of group ``<src>-mm2``
  on the *target* cluster, with its own config/offset/status topics (``mm2-*.<src>.internal``).
  Several processes started with the same file share each pair's connectors and tasks through Kafka's group coordinator.
* Shared by all herders of the process: one plugin registry, one REST server (each herder's Connect
  API under ``/<src>/<tgt>/``, forwarding between nodes included, KIP-710 in spirit), one ``/metrics``
  (each herder's metrics labelled ``source``/``target``), the health monitor and the status page
  (``/ui``).
* A herder whose leader role is newly acquired writes the three MM2 connector configs
  (Source, Heartbeat, Checkpoint, in Java's order) when they differ from what is stored, so the
  leader's file wins, as in Java.
* A herder that cannot reach its cluster is rebuilt with exponential backoff (1 s up to 60 s) by its
  :class:`~mirror.maker.herder_slot.HerderSlot`; its REST namespace answers 503/409 meanwhile and
  ``/health`` says why; the other herders are not disturbed.

Differences from Java MM2, on purpose: the public Connect REST API is served (namespaced), not only the
internal endpoints, with state changes refused unless basic auth or an explicit opt-in is configured
(:mod:`mirror.maker.rest_wiring`); worker ids are ``<host>:<port>`` of the node's REST server (Java uses
the flow name, so its statuses cannot tell nodes apart); secrets are stored in the configs topic as
references to the node's own mm2.properties (:mod:`mirror.config.secret_references`).

This module is the command's run loop; the node (:mod:`mirror.maker.mirror_maker`), the per-flow supervision
(:mod:`mirror.maker.herder_slot`) and the flow's herder (:mod:`mirror.maker.mirror_herder`) are each
their own module.
"""

from __future__ import annotations

import argparse
import logging

from connect_runtime.api.errors import ConnectError
from connect_runtime.cli.process import ExitCode, run_until_stopped
from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.maker.mirror_maker import MirrorMaker

logger = logging.getLogger(__name__)


def run(config: MirrorMakerConfig, clusters: list[str] | None, options: argparse.Namespace) -> ExitCode:
    """Run until SIGTERM/SIGINT/SIGHUP: :func:`connect_runtime.cli.process.run_until_stopped` and its exit codes.

    Herders start in the background (each slot retries its own cluster), so readiness is announced
    once every herder runs; only a REST or metrics port that cannot be bound fails the start.
    """
    node = MirrorMaker(config, clusters, rest_port=getattr(options, "rest_port", None),
                       metrics_port=getattr(options, "metrics_port", None))

    def announce_ready(elapsed_s: float) -> None:
        logger.info("All %d herder(s) running after %.1fs", len(node.slots), elapsed_s)

    return run_until_stopped(node, name="connect-mirror-maker", announce_ready=announce_ready,
                             poll_interval_s=0.5, start_errors=(OSError, ConnectError), log=logger)
