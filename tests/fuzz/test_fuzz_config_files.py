"""Fuzzing mm2.properties: ``connect-mirror-maker`` and ``mirror config show`` on generated files.

Files are built from the keys the code declares (driver, connector, worker and client keys, at top
level, per cluster, per flow and per client), the values that break parsers (empty, negative, huge,
non-numeric, lists, regexes, ``${provider:...}`` placeholders, non-ASCII) and raw junk lines, sometimes
not even UTF-8. Whatever the file, the command answers with exit 0 (a valid file) or exit 2 and one
``error: ...`` line per finding, each naming the file, never a traceback and never exit 1 (an exception nobody mapped to
a message: a bug). ``connect-mirror-maker`` runs in-process up to the replication driver, whose ``run``
is replaced by a recorder: the fuzzed part is everything before the driver connects to a cluster.
:func:`~mirror.maker.config_check.check_mm2_properties` itself, on every file that loads, never raises,
and refuses the file exactly when it has a refusal.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from connect_runtime.api.errors import ConfigError
from mirror.cli import connect_mirror_maker
from mirror.cli import main as mirror_main
from mirror.config import checkpoint, heartbeat, mirror_maker_config, source
from mirror.maker import mirror_maker
from mirror.maker.config_check import FileRefused, check_mm2_properties
from tests.support.fuzz import fuzz_settings, timeout_s

pytestmark = pytest.mark.timeout(timeout_s())

ALIASES = ["A", "B", "C", "us-east", "b c", "A.B", "é", "A->B", "", "clusters", "x" * 60]
WORKER_KEYS = ["group.id", "offset.flush.interval.ms", "offset.storage.topic", "config.storage.topic",
               "status.storage.topic", "offset.storage.partitions", "scheduled.rebalance.max.delay.ms",
               "session.timeout.ms", "heartbeat.interval.ms", "tasks.max", "key.converter",
               "value.converter", "header.converter", "replication.policy.class",
               "replication.policy.separator", "bootstrap.servers", "listeners", "rest.advertised.port",
               "admin.timeout.ms", "metrics.port", "health.lag.max.records", "enabled"]
KEYS = sorted(mirror_maker_config.CONFIG_DEF.names() | source.CONFIG_DEF.names() | checkpoint.CONFIG_DEF.names()
              | heartbeat.CONFIG_DEF.names()) + WORKER_KEYS
VALUES = ["", " ", "true", "false", "TRUE", "yes", "-1", "0", "1", "3", "2147483648", "99999999999999999999999",
          "1.5", "-0.5", "nan", "inf", "1e309", "abc", ",", ",,", "A, B", "A,,B", ".*", "[", "(?P<", "*",
          "${env:HOME}", "${file:/nonexistent/secrets.properties:password}", "${x}", "${", "${env:}",
          "\\u12", "\\", "PLAINTEXT", "SASL_SSL", "SSL", "PLAIN", "http://127.0.0.1:0", "http://:99999",
          "127.0.0.1:9092", "localhost", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
          "org.apache.kafka.connect.mirror.IdentityReplicationPolicy", "com.example.Nope",
          "org.apache.kafka.connect.converters.ByteArrayConverter", "\u00e9\u00e8", "\x00", "a=b", "a:b"]

aliases = st.one_of(st.sampled_from(ALIASES), st.text(min_size=0, max_size=8))
values = st.one_of(st.sampled_from(VALUES), st.text(max_size=30), st.integers().map(str))


@st.composite
def keys(draw: st.DrawFn) -> str:
    key = draw(st.one_of(st.sampled_from(KEYS), st.text(max_size=20)))
    form = draw(st.integers(0, 5))
    if form == 1:
        return f"{draw(aliases)}.{key}"
    if form == 2:
        return f"{draw(aliases)}->{draw(aliases)}.{key}"
    if form == 3:
        client = draw(st.sampled_from(["consumer", "producer", "admin"]))
        return f"{draw(aliases)}.{client}.{key}"
    if form == 4:
        return f"{draw(aliases)}->{draw(aliases)}.enabled"
    return key


@st.composite
def lines(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:  # raw junk: continuation backslashes, separators, comments, unicode
        return draw(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
    separator = draw(st.sampled_from([" = ", "=", ": ", " ", "\t"]))
    return f"{draw(keys())}{separator}{draw(values)}"


@st.composite
def known_lines(draw: st.DrawFn) -> str:
    """A declared key, at top level or for the flow A->B, with an awkward value: deep validation."""
    key = draw(st.sampled_from(KEYS))
    prefix = draw(st.sampled_from(["", "A->B.", "A.", "B.consumer.", "B.producer."]))
    return f"{prefix}{key} = {draw(st.sampled_from(VALUES))}"


@st.composite
def properties_files(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):  # a valid skeleton and a few declared keys with odd values
        body = ["clusters = A, B", "A.bootstrap.servers = 127.0.0.1:9", "B.bootstrap.servers = 127.0.0.1:9",
                "A->B.enabled = true", *draw(st.lists(known_lines(), max_size=4))]
    else:
        body = draw(st.lists(lines(), max_size=25))
        if draw(st.booleans()):  # usually declare clusters and a flow, so validation goes deep
            declared = draw(st.lists(aliases, min_size=1, max_size=3))
            body.insert(0, f"clusters = {', '.join(declared)}")
            for alias in declared:
                body.append(f"{alias}.bootstrap.servers = 127.0.0.1:9")
            if len(declared) > 1:
                body.append(f"{declared[0]}->{declared[1]}.enabled = true")
    text = "\n".join(draw(st.permutations(body)))
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 20)) == 0:
        data += draw(st.binary(max_size=20))  # not even UTF-8
    return data


cluster_flags = st.one_of(st.just([]), st.lists(aliases, min_size=1, max_size=3).map(lambda a: ["--clusters", *a]))


#: argparse's own usage errors (a flag value it rejects), one line after the usage text
USAGE_ERROR = re.compile(r"^(connect-mirror-maker|mirror( \w+)*): error: ")


def check_answer(code: int, err: str, path: Path) -> None:
    event(f"exit {code}")  # --hypothesis-show-statistics: how many files were valid
    assert "Traceback" not in err, err
    assert code in (0, 2), f"exit {code} (an unmapped exception):\n{err}"
    if code == 2:
        # one usage line, or one line per finding of the file, each naming it (all findings at once)
        usage = [line for line in err.split("\n") if USAGE_ERROR.match(line)]
        errors = [line for line in err.split("\n") if line.startswith("error:")]
        assert (len(usage), len(errors)) == (1, 0) or (not usage and errors), err
        assert usage or all(str(path) in line for line in errors), f"an error does not name the file: {err}"


@pytest.fixture
def no_driver(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    started: list[Any] = []
    monkeypatch.setattr(mirror_maker, "run", lambda config, clusters, args: started.append(config) or 0)
    return started


@fuzz_settings()
@given(data=properties_files(), flags=cluster_flags)
def test_connect_mirror_maker_answers_any_file(data: bytes, flags: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str], no_driver: list[Any]) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes(data)
    started = len(no_driver)
    code = connect_mirror_maker.main([str(path), "--log-level", "ERROR", *flags])
    check_answer(code, capsys.readouterr().err, path)
    assert (len(no_driver) > started) == (code == 0)


@fuzz_settings()
@given(data=properties_files(), flags=cluster_flags, as_json=st.booleans())
def test_config_show_answers_any_file(data: bytes, flags: list[str], as_json: bool, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes(data)
    code = mirror_main.main(["config", "show", str(path), *flags, *(["--json"] if as_json else [])])
    captured = capsys.readouterr()
    check_answer(code, captured.err, path)
    if code == 0:
        assert captured.out


@fuzz_settings()
@given(data=properties_files(), flags=cluster_flags, strict=st.booleans(), resolve_providers=st.booleans())
def test_the_check_never_raises_and_refuses_exactly_its_refusals(data: bytes, flags: list[str], strict: bool,
                                                                  resolve_providers: bool, tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes(data)
    try:
        config = mirror_maker_config.MirrorMakerConfig.from_file(str(path))
    except ConfigError:
        return  # not even a file to check (unreadable, no clusters...): the CLI tests above cover its line
    report = check_mm2_properties(config, flags[1:] or None, strict=strict, resolve_providers=resolve_providers)
    event(f"{len(report.refused())} refusal(s)")
    try:
        report.raise_if_refused()
    except FileRefused as refused:
        assert refused.lines == [str(f) for f in report.refused()] != []
    else:
        assert report.refused() == []
    assert all(str(path) in str(f) for f in report.findings)
