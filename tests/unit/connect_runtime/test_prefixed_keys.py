"""``with_prefix_stripped``: how every client config is cut out of a bigger config (Java ``originalsWithPrefix``)."""

from __future__ import annotations

from connect_runtime.api.prefixed_keys import with_prefix_stripped


def test_keys_under_the_prefix_come_back_without_it() -> None:
    props = {"consumer.override.fetch.min.bytes": "1", "consumer.override.acks": "all",
             "consumer.fetch.min.bytes": "2", "producer.override.linger.ms": "5"}
    assert with_prefix_stripped(props, "consumer.override.") == {"fetch.min.bytes": "1", "acks": "all"}


def test_a_key_that_is_the_prefix_alone_names_nothing() -> None:
    assert with_prefix_stripped({"admin.": "x", "admin.retries": "3"}, "admin.") == {"retries": "3"}


def test_values_of_any_type_are_kept_as_they_are() -> None:
    callback = object()
    assert with_prefix_stripped({"a.cb": callback, "a.n": 1}, "a.") == {"cb": callback, "n": 1}
