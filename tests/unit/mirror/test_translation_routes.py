"""The REST translation endpoint's body checks (each bad body is one clear 400, before any I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.maker.translation_routes import BadRequest, translate_request

FLOWS = {("A", "B")}


@pytest.mark.parametrize(("body", "message"), [
    ([], "must be a JSON object"),
    ({"source": "A", "target": "C"}, "must name a flow of this driver: A->B"),
    ({"source": "A", "target": "B", "reverse": "yes"}, "'reverse' must be true or false"),
    ({"source": "A", "target": "B", "groups": "g"}, "'groups' must be a list"),
    ({"source": "A", "target": "B", "groups": [1]}, "'groups' must be a list of group ids"),
    ({"source": "A", "target": "B", "offsets": [{"topic": "t", "partition": -1, "offset": 0}]}, "each of 'offsets'"),
    ({"source": "A", "target": "B", "at": 5}, "'at' must be epoch milliseconds, with 'topics'"),
])
def test_bad_bodies_name_the_field(body: Any, message: str) -> None:
    config = MirrorMakerConfig({"clusters": "A, B", "A.bootstrap.servers": "a:1", "B.bootstrap.servers": "b:1"})
    with pytest.raises(BadRequest, match=message):
        translate_request(config, FLOWS, body)
