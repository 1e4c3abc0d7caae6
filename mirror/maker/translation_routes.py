"""``POST /mirror/offsets/translate``: the batch offset translation of :mod:`mirror.client.translation` over REST.

Served by the dedicated driver next to the Connect API, for the flows it runs. Body (JSON)::

    {"source": "A", "target": "B",          # a flow of this driver
     "reverse": false,                      # true: target -> source (failback)
     "groups": ["billing"],                 # optional: groups (on the source; on the target if reverse)
     "offsets": [{"topic": "orders", "partition": 0, "offset": 777}],   # optional positions
     "at": 1700000000000, "topics": ["orders"]}                          # optional point in time

Answer: ``{"translations": [{"group", "source_topic", "remote_topic", "partition", "upstream",
"downstream", "basis"}, ...]}``. A bad body is a 400 naming the field; the work runs on a thread, not
on the event loop. Nothing is written: applying offsets stays a deliberate CLI/Python step.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mirror.client.mirror_client import mirror_client_config
from mirror.client.replication_policy import policy_from_config
from mirror.client.translation import OffsetTranslator, Translation
from mirror.config.connector_base import OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT
from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS, MirrorMakerConfig, SourceAndTarget
from mirror.errors import MirrorError

#: What the endpoint's clients do, in their ``client.id`` (after the node's id).
TRANSLATION_CLIENT_LABEL = "offset-translation"


class BadRequest(MirrorError, ValueError):
    """The request body is not what the endpoint expects (the message names the field)."""


def _list(body: dict[str, Any], key: str) -> list[Any]:
    value = body.get(key, [])
    if not isinstance(value, list):
        raise BadRequest(f"'{key}' must be a list")
    return value


def translate_request(config: MirrorMakerConfig, flows: set[tuple[str, str]], body: Any,
                      client_label: str = TRANSLATION_CLIENT_LABEL) -> list[dict[str, Any]]:
    """Answer one request body (blocking); raises :class:`BadRequest` for a bad body. ``client_label``
    names the clients that read the clusters (:func:`~mirror.client.mirror_client.mirror_client_config`)."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    source, target = body.get("source"), body.get("target")
    if (source, target) not in flows:
        raise BadRequest(f"'source' and 'target' must name a flow of this driver: "
                         f"{', '.join(f'{s}->{t}' for s, t in sorted(flows))}")
    reverse = body.get("reverse", False)
    if not isinstance(reverse, bool):
        raise BadRequest("'reverse' must be true or false")
    groups = _list(body, "groups")
    if not all(isinstance(g, str) for g in groups):
        raise BadRequest("'groups' must be a list of group ids")
    offsets = []
    for item in _list(body, "offsets"):
        if not (isinstance(item, dict) and isinstance(item.get("topic"), str)
                and all(isinstance(item.get(k), int) and item[k] >= 0 for k in ("partition", "offset"))):
            raise BadRequest("each of 'offsets' must be {\"topic\": str, \"partition\": int >= 0, "
                             "\"offset\": int >= 0}")
        offsets.append((item["topic"], item["partition"], item["offset"]))
    at = body.get("at")
    topics = _list(body, "topics")
    if at is not None and (not isinstance(at, int) or not topics):
        raise BadRequest("'at' must be epoch milliseconds, with 'topics' naming source topics")
    pair = SourceAndTarget(str(source), str(target))
    target_config = mirror_client_config(config.client_config(pair.target), client_label)
    source_config = mirror_client_config(config.client_config(pair.source), client_label)
    location = config.connector_base_config(pair, SOURCE_CONNECTOR_CLASS).get(
        OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT).strip().lower()
    on_source = location != "target"
    rows: list[dict[str, Any]] = []

    def add(translations: dict[Any, Translation], group: str | None = None) -> None:
        rows.extend({"group": group, **t.to_dict()} for _, t in sorted(translations.items()))

    syncs_topic = policy_from_config(target_config).offset_syncs_topic(pair.target) if on_source else None
    with OffsetTranslator(target_config, pair.source, offset_syncs_config=source_config if on_source else None,
                          offset_syncs_topic=syncs_topic) as translator:
        if at is not None:
            add(translator.at_time(at, [translator.policy.format_remote_topic(pair.source, t) for t in topics]))
        for topic, partition, offset in offsets:
            position = {(topic, partition): offset}
            add(translator.to_source(position) if reverse else translator.to_target(position))
        if groups:
            answers = translator.groups_to_source(groups) if reverse else translator.groups_to_target(
                groups, source_config)
            for group, translations in answers.items():
                add(translations, group)
    return rows


def translation_routes(config: MirrorMakerConfig, pairs: list[SourceAndTarget], node: str = "") -> list[BaseRoute]:
    """The endpoint for ``pairs``; ``node`` (the node's id) goes first in its clients' ``client.id``."""
    flows = {(p.source, p.target) for p in pairs}
    client_label = "|".join(filter(None, (node, TRANSLATION_CLIENT_LABEL)))

    async def handle(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error_code": 400, "message": "the body is not valid JSON"}, status_code=400)
        try:
            rows = await run_in_threadpool(translate_request, config, flows, body, client_label)
        except BadRequest as exc:
            return JSONResponse({"error_code": 400, "message": str(exc)}, status_code=400)
        return JSONResponse({"translations": rows})

    return [Route("/mirror/offsets/translate", handle, methods=["POST"])]
