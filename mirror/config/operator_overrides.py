"""The client override keys an ``mm2.properties`` sets for its own connectors are allowed in its workers.

A herder's ``connector.client.config.override.policy`` defaults to KIP-1188's Allowlist with tuning keys
only (:data:`connect_runtime.api.client_overrides.ALLOWLIST_DEFAULT`), which is what a REST caller may
set. The connector configs the driver writes come from the operator's file, which keeps its full power
(Java MM2 runs its workers with the All policy for the same reason): each ``producer.override.X``,
``consumer.override.X`` or ``admin.override.X`` that file gives a connector of the flow is added to the
flow's worker allowlist, unless the operator chose a policy (then it is applied as written).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from connect_runtime.api import client_overrides as co
from connect_runtime.api.prefixed_keys import with_prefix_stripped


def with_operator_overrides(worker: dict[str, str], connector_configs: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """``worker`` (a flow's worker config) with the override keys of ``connector_configs`` allowed."""
    if co.POLICY in worker:
        return worker
    used = sorted({key for config in connector_configs for prefix in co.OVERRIDE_PREFIXES
                   for key in with_prefix_stripped(config, prefix)})
    if not used:
        return worker
    listed = worker.get(co.ALLOWLIST)
    base = [k.strip() for k in listed.split(",") if k.strip()] if listed is not None else list(co.ALLOWLIST_DEFAULT)
    return {**worker, co.ALLOWLIST: ",".join(dict.fromkeys([*base, *used]))}
