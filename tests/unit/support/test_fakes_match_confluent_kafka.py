"""The shared fakes take only calls the real confluent-kafka clients take.

confluent-kafka's Consumer and Producer are C types without introspectable signatures; their docstrings
carry the documented one (``.. py:function:: consume([num_messages=1], [timeout=-1])``), which is what
is compared here. AdminClient is Python: ``inspect.signature`` is used. A fake method must exist on the
real class, its named parameters must be the real ones in the real order (callers pass some positionally),
and it may take ``**kwargs`` only where the real method does.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient

from tests.support.fakes import FakeAdminClient, FakeConsumer, FakeProducer

PAIRS = [(FakeConsumer, confluent_kafka.Consumer), (FakeProducer, confluent_kafka.Producer),
         (FakeAdminClient, AdminClient)]

# Documented in prose only (no ``py:function`` line in the docstring).
UNDOCUMENTED = {("Consumer", "close"): ([], False)}

# Where the documentation is wrong about the positional order: Producer.produce's C keyword list has the
# alias ``callback`` between ``on_delivery`` and ``timestamp`` (the bulk path calls it positionally).
# test_produce_takes_callback_as_its_sixth_positional_parameter proves it on the real client.
ACTUAL = {("Producer", "produce"): (["topic", "value", "key", "partition", "on_delivery", "callback", "timestamp",
                                     "headers"], False)}

_DOC_SIGNATURE = re.compile(r"\.\. py:function::? *(\w+)\(([^)]*)\)")


def real_parameters(real: type, name: str) -> tuple[list[str], bool]:
    """(named parameters in order, whether it takes **kwargs) of a method of a real client class."""
    if (real.__name__, name) in ACTUAL:
        return ACTUAL[(real.__name__, name)]
    try:
        params = list(inspect.signature(getattr(real, name)).parameters.values())[1:]  # self
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY)]
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params)
    if named or (params and not any(p.kind is p.VAR_POSITIONAL for p in params)):
        return named, takes_kwargs
    # A C method, or a Python wrapper passing (*args, **kwargs) on to one (AdminClient.list_topics):
    # the documented signature, from the first class in the MRO that documents it.
    for cls in real.__mro__:
        method = vars(cls).get(name)
        match = _DOC_SIGNATURE.search(getattr(method, "__doc__", None) or "")
        if match is not None and match.group(1) == name:
            names = [part.strip(" []").split("=")[0].strip() for part in match.group(2).split(",")]
            return [n for n in names if n], False
    if (real.__name__, name) in UNDOCUMENTED:
        return UNDOCUMENTED[(real.__name__, name)]
    raise AssertionError(f"{real.__name__}.{name} has neither a signature nor a documented one: add it to "
                         "UNDOCUMENTED from confluent-kafka's documentation")


def fake_methods(fake: type) -> list[str]:
    return sorted(name for name, member in vars(fake).items()
                  if inspect.isfunction(member) and (not name.startswith("_") or name == "__len__"))


def mismatches(fake: type, real: type) -> list[str]:
    problems = []
    for name in fake_methods(fake):
        if not hasattr(real, name):
            problems.append(f"{fake.__name__}.{name}: {real.__name__} has no such method")
            continue
        if name == "__len__":
            continue
        real_names, real_kwargs = real_parameters(real, name)
        params = list(inspect.signature(getattr(fake, name)).parameters.values())[1:]
        positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        keyword_only = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
        if positional != real_names[:len(positional)]:
            problems.append(f"{fake.__name__}.{name}{tuple(positional)}: {real.__name__} takes {tuple(real_names)}")
        problems += [f"{fake.__name__}.{name}: {real.__name__} takes no parameter {n!r}"
                     for n in keyword_only if n not in real_names]
        if any(p.kind is p.VAR_KEYWORD for p in params) and not real_kwargs:
            problems.append(f"{fake.__name__}.{name}: takes **kwargs, {real.__name__}'s does not")
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            problems.append(f"{fake.__name__}.{name}: takes *args, name the real parameters instead")
    return problems


@pytest.mark.parametrize(("fake", "real"), PAIRS, ids=[fake.__name__ for fake, _ in PAIRS])
def test_fake_methods_exist_on_the_real_client_with_its_parameters(fake: type, real: type) -> None:
    assert fake_methods(fake), f"{fake.__name__} has no methods to check"
    assert mismatches(fake, real) == []


def test_the_check_catches_what_it_is_for() -> None:
    class Drifted:
        def poll(self, timeout: float = 0) -> None: ...  # fine
        def consume(self, timeout: float = 0, num_messages: int = 1) -> None: ...  # order swapped
        def commit(self, *, offsets: Any = None, sync: bool = True) -> None: ...  # no 'sync'
        def seek(self, partition: Any, **kwargs: Any) -> None: ...  # seek takes no kwargs
        def replay(self) -> None: ...  # not a Consumer method

    assert mismatches(Drifted, confluent_kafka.Consumer) == [
        "Drifted.commit: Consumer takes no parameter 'sync'",
        "Drifted.consume('timeout', 'num_messages'): Consumer takes ('num_messages', 'timeout')",
        "Drifted.replay: Consumer has no such method",
        "Drifted.seek: takes **kwargs, Consumer's does not",
    ]


def test_documented_signatures_are_parsed() -> None:
    assert real_parameters(confluent_kafka.Producer, "flush") == (["timeout"], False)
    assert real_parameters(confluent_kafka.Consumer, "commit") == (["message", "offsets", "asynchronous"], False)
    assert real_parameters(AdminClient, "create_topics") == (["new_topics"], True)


def test_produce_takes_callback_as_its_sixth_positional_parameter() -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(TypeError, match="integer"):  # the 7th is the timestamp ...
        producer.produce("t", b"v", None, 0, None, None, "not a timestamp")
    with pytest.raises(TypeError, match="headers"):  # ... and the 8th the headers
        producer.produce("t", b"v", None, 0, None, None, 5, "not headers")
    producer.produce("t", b"v", None, 0, None, None, 5, [("h", b"1")])
    producer.purge()
