"""Transformations and predicates (connect_runtime.api.transforms): each built-in, the config model, and
the errors a bad config gets (one line, naming the key and what was expected)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.records import SourceRecord
from connect_runtime.api.transforms import TransformationChain, TransformError, build_chain, validate_chain
from connect_runtime.runtime.worker import connector_validation
from connect_runtime.testing.sequence_source import SequenceSourceConnector

T = "org.apache.kafka.connect.transforms."
P = "org.apache.kafka.connect.transforms.predicates."


def rec(topic: str = "A.orders", value: bytes | None = b"v", headers: list[tuple[str, bytes | None]] | None = None,
        timestamp: int | None = 1_706_700_000_123) -> SourceRecord:
    return SourceRecord(topic, value, key=b"k", partition=2, headers=headers, timestamp=timestamp,
                        source_partition={"p": 1}, source_offset={"o": 7})


def chain(**keys: str) -> TransformationChain:
    config = {k.replace("__", "."): v for k, v in keys.items()}
    built = build_chain(config)
    assert built is not None
    return built


def one(type_: str, **keys: str) -> TransformationChain:
    return build_chain({"transforms": "x", "transforms.x.type": type_,
                        **{f"transforms.x.{k.replace('_', '.')}": v for k, v in keys.items()}}) or pytest.fail()


# -- the built-ins -------------------------------------------------------------------------------------
def test_filter_drops_every_record_it_applies_to() -> None:
    assert one(T + "Filter").apply(rec()) is None


def test_regex_router_renames_a_whole_match_with_java_group_syntax() -> None:
    router = one(T + "RegexRouter", regex=r"A\.(?<name>.*)", replacement="mirror-${name}-$1")
    renamed = router.apply(rec())
    assert renamed is not None and renamed.topic == "mirror-orders-orders"
    assert (renamed.value, renamed.key, renamed.partition, renamed.source_offset) == (b"v", b"k", 2, {"o": 7})
    assert router.apply(rec("B.orders")) == rec("B.orders")  # no whole match: unchanged
    assert router.apply(rec("xA.orders")) == rec("xA.orders")  # matches(), not find()
    literal = one("RegexRouter", regex="(.*)", replacement=r"\$1-$1")
    assert (literal.apply(rec()) or pytest.fail()).topic == "$1-A.orders"


def test_timestamp_router_formats_the_record_timestamp_in_utc() -> None:
    router = one(T + "TimestampRouter")
    assert (router.apply(rec()) or pytest.fail()).topic == "A.orders-20240131"
    custom = build_chain({"transforms": "x", "transforms.x.type": "TimestampRouter",
                          "transforms.x.topic.format": "${timestamp}_${topic}",
                          "transforms.x.timestamp.format": "yyyy-MM-dd'T'HH:mm:ss.SSS"}) or pytest.fail()
    assert (custom.apply(rec()) or pytest.fail()).topic == "2024-01-31T11:20:00.123_A.orders"
    with pytest.raises(TransformError, match="Timestamp missing"):
        router.apply(rec(timestamp=None))


def test_insert_header_appends_a_utf8_header_after_existing_ones() -> None:
    insert = one(T + "InsertHeader", header="via", value_literal="mm2 ✓")
    out = insert.apply(rec(headers=[("via", b"old"), ("a", None)]))
    assert out is not None and out.headers == [("via", b"old"), ("a", None), ("via", "mm2 ✓".encode())]
    assert (insert.apply(rec()) or pytest.fail()).headers == [("via", "mm2 ✓".encode())]


def test_drop_headers_removes_every_header_of_the_named_keys() -> None:
    drop = one(T + "DropHeaders", headers="a, b")
    out = drop.apply(rec(headers=[("a", b"1"), ("c", b"3"), ("b", None), ("a", b"2")]))
    assert out is not None and out.headers == [("c", b"3")]
    untouched = rec(headers=[("c", b"3")])
    assert drop.apply(untouched) is untouched and drop.apply(rec()) == rec()


@pytest.mark.parametrize(("predicate", "keys", "record", "expected"), [
    ("TopicNameMatches", {"pattern": r"A\..*"}, rec("A.orders"), True),
    ("TopicNameMatches", {"pattern": "orders"}, rec("A.orders"), False),  # the whole name must match
    ("HasHeaderKey", {"name": "trace"}, rec(headers=[("x", b""), ("trace", None)]), True),
    ("HasHeaderKey", {"name": "trace"}, rec(headers=[("x", b"trace")]), False),
    ("RecordIsTombstone", {}, rec(value=None), True),
    ("RecordIsTombstone", {}, rec(value=b""), False),  # empty is not null
])
@pytest.mark.parametrize("negate", [False, True])
def test_each_predicate_selects_the_records_a_filter_drops(predicate: str, keys: Mapping[str, str],
                                                           record: SourceRecord, expected: bool, negate: bool) -> None:
    filtered = chain(transforms="drop", transforms__drop__type=T + "Filter", transforms__drop__predicate="p",
                     transforms__drop__negate=str(negate).lower(), predicates="p", predicates__p__type=P + predicate,
                     **{f"predicates__p__{k}": v for k, v in keys.items()})
    dropped = filtered.apply(record) is None
    assert dropped is (expected != negate)


def test_stages_apply_in_order_and_a_drop_stops_the_chain() -> None:
    steps = chain(transforms="route,mark,drop", transforms__route__type="RegexRouter",
                  transforms__route__regex="A\\.(.*)", transforms__route__replacement="$1",
                  transforms__mark__type="InsertHeader", transforms__mark__header="h",
                  transforms__mark__value__literal="1", transforms__drop__type="Filter",
                  transforms__drop__predicate="renamed", predicates="renamed",
                  predicates__renamed__type="TopicNameMatches", predicates__renamed__pattern="gone")
    assert steps.aliases == ["route", "mark", "drop"]
    out = steps.apply(rec("A.orders"))
    assert out is not None and (out.topic, out.headers) == ("orders", [("h", b"1")])
    assert steps.apply(rec("A.gone")) is None  # the predicate sees the renamed topic


class UpperValue:
    """A custom transformation: Connect's shape, no base class."""

    instances: list[UpperValue] = []

    def __init__(self) -> None:
        self.closed = False
        self.configs: dict[str, str] = {}
        UpperValue.instances.append(self)

    def configure(self, configs: Mapping[str, str]) -> None:
        if configs.get("mode") not in ("upper", None):
            raise ValueError(f"mode must be upper, got {configs.get('mode')}")
        self.configs = dict(configs)

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        if record.value == b"boom":
            raise RuntimeError("cannot shout boom")
        return SourceRecord(record.topic, (record.value or b"").upper(), source_partition=record.source_partition,
                            source_offset=record.source_offset)

    def close(self) -> None:
        self.closed = True


class NotATransformation:
    def configure(self, configs: Mapping[str, Any]) -> None:
        pass


def test_a_python_class_by_dotted_path_gets_its_keys_and_is_closed() -> None:
    UpperValue.instances.clear()
    custom = chain(transforms="up", transforms__up__type=f"{__name__}.UpperValue", transforms__up__mode="upper",
                   transforms__up__predicate="p", transforms__up__negate="false", predicates="p",
                   predicates__p__type="HasHeaderKey", predicates__p__name="shout")
    [instance] = UpperValue.instances
    assert instance.configs == {"type": f"{__name__}.UpperValue", "mode": "upper"}  # as Java: type, no predicate
    assert (custom.apply(rec(headers=[("shout", None)])) or pytest.fail()).value == b"V"
    assert (custom.apply(rec()) or pytest.fail()).value == b"v"
    with pytest.raises(TransformError, match=r"transformation up failed on a record of topic A\.orders: cannot shout"):
        custom.apply(rec(value=b"boom", headers=[("shout", None)]))
    custom.close()
    assert instance.closed


def test_no_transforms_is_no_chain() -> None:
    assert build_chain({}) is None and build_chain({"transforms": ""}) is None
    assert validate_chain({"transforms": " "}) == {}


# -- errors --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("config", "key", "expected"), [
    ({"transforms": "r", "transforms.r.type": "Nope"}, "transforms.r.type",
     "Invalid value Nope for configuration transforms.r.type: class Nope could not be found (the "
     "transformations here are Filter, RegexRouter, TimestampRouter, InsertHeader, DropHeaders"),
    ({"transforms": "r", "transforms.r.type": T + "RegexRouter", "transforms.r.regex": "(",
      "transforms.r.replacement": "x"}, "transforms.r.regex",
     "Invalid value ( for configuration transforms.r.regex: not a valid regular expression"),
    ({"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "a",
      "transforms.r.replacement": "$2"}, "transforms.r.replacement",
     "Invalid value $2 for configuration transforms.r.replacement: no group 2: the regex has 0"),
    ({"transforms": "r", "transforms.r.type": "RegexRouter"}, "transforms.r.regex",
     "Missing required configuration 'transforms.r.regex' which has no default value"),
    ({"transforms": "r"}, "transforms.r.type", "Missing required configuration 'transforms.r.type'"),
    ({"transforms": "r", "transforms.r.type": T + "HeaderFrom$Value"}, "transforms.r.type",
     "HeaderFrom$Value reads fields of a structured key or value, and records are copied here as bytes"),
    ({"transforms": "r", "transforms.r.type": "Filter", "transforms.r.predicate": "p"}, "transforms.r.predicate",
     "Invalid value p for configuration transforms.r.predicate: not a predicate alias declared in predicates"),
    ({"transforms": "r", "transforms.r.type": "Filter", "transforms.r.negate": "true"}, "transforms.r.negate",
     "negate needs transforms.r.predicate"),
    ({"transforms": "r", "transforms.r.type": "Filter", "transforms.r.negate": "yes"}, "transforms.r.negate",
     "Invalid value 'yes' for configuration transforms.r.negate: expected true or false"),
    ({"transforms": "r,r", "transforms.r.type": "Filter"}, "transforms",
     "Invalid value r,r for configuration transforms: duplicate alias r"),
    ({"transforms": "r", "transforms.r.type": "Filter", "transforms.r.predicate": "p", "predicates": "p",
      "predicates.p.type": P + "TopicNameMatches", "predicates.p.pattern": "[a"}, "predicates.p.pattern",
     "Invalid value [a for configuration predicates.p.pattern: not a valid regular expression"),
    ({"transforms": "r", "transforms.r.type": "Filter", "transforms.r.predicate": "p", "predicates": "p",
      "predicates.p.type": T + "Filter"}, "predicates.p.type", "class org.apache.kafka.connect.transforms.Filter "
     "could not be found (the predicates here are TopicNameMatches, HasHeaderKey, RecordIsTombstone"),
    ({"transforms": "r", "transforms.r.type": f"{__name__}.NotATransformation"}, "transforms.r.type",
     "NotATransformation is not a transformation class (it needs the methods configure, apply)"),
    ({"transforms": "r", "transforms.r.type": f"{__name__}.UpperValue", "transforms.r.mode": "lower"},
     "transforms.r.type", "UpperValue (transforms.r.type) refused its configuration: mode must be upper, got lower"),
    ({"transforms": "r", "transforms.r.type": "no_such_package.Thing"}, "transforms.r.type",
     "class no_such_package.Thing could not be found: No module named 'no_such_package'"),
    ({"transforms": "r", "transforms.r.type": "TimestampRouter", "transforms.r.timestamp.format": "EEE"},
     "transforms.r.timestamp.format", "unsupported date pattern 'EEE'"),
])
def test_a_bad_config_gets_one_line_naming_the_key(config: dict[str, str], key: str, expected: str) -> None:
    errors = validate_chain(config)
    assert key in errors, errors
    assert expected in errors[key][0] and "\n" not in errors[key][0]
    with pytest.raises(ConfigError) as raised:
        build_chain(config)
    assert raised.value.key in errors


def test_rest_validation_lists_transformation_errors_on_their_keys() -> None:
    """PUT .../config/validate: each error on its own key, counted; a valid chain has none."""
    base = {"name": "seq", "connector.class": "SequenceSourceConnector", "topic": "t"}
    infos = connector_validation.validate(SequenceSourceConnector(), {
        **base, "transforms": "a,b", "transforms.a.type": "Nope", "transforms.b.type": "RegexRouter",
        "transforms.b.regex": "(", "transforms.b.replacement": "x"})
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos.configs if c["value"]["errors"]}
    assert set(errors) == {"transforms.a.type", "transforms.b.regex"} and infos.error_count == 2
    valid = connector_validation.validate(SequenceSourceConnector(), {
        **base, "transforms": "a", "transforms.a.type": T + "Filter", "transforms.a.predicate": "t",
        "predicates": "t", "predicates.t.type": P + "RecordIsTombstone"})
    assert valid.error_count == 0
    duplicate = connector_validation.validate(SequenceSourceConnector(), {
        **base, "transforms": "a, a", "transforms.a.type": "Filter"})
    assert duplicate.error_count == 1  # the key's own validator and the chain say it in the same words
