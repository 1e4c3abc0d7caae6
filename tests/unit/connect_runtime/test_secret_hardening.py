"""Issue 27, item 6: which keys are secrets is extensible (``secrets.keys``), every log handler scrubs
(also one added after start-up), every CLI error line scrubs, and no key material stays on disk."""

from __future__ import annotations

import io
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.properties import parse_properties
from connect_runtime.api.secrets import (
    HIDDEN,
    configure_secret_keys,
    is_sensitive_key,
    mask_config,
    remember_secrets,
    scrub_every_log_record,
)
from connect_runtime.cli.connect_distributed import load_worker_config
from connect_runtime.cli.process import print_error
from connect_runtime.logging_setup import configure_logging
from connect_runtime.rest.app import create_app
from connect_runtime.rest.security import RestSecurity
from mirror.cli.subcommand import invoke
from mirror.config.mirror_maker_config import MirrorMakerConfig
from tests.support.rest_certs import self_signed
from tests.unit.connect_runtime.rest.fake_herder import FakeHerder

with warnings.catch_warnings():  # as in tests/unit/connect_runtime/rest/conftest.py
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

MM2 = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"


@pytest.fixture(autouse=True)
def restore_process_state() -> Iterator[None]:
    factory, root_handlers, level = logging.getLogRecordFactory(), list(logging.getLogger().handlers), \
        logging.getLogger().level
    yield
    configure_secret_keys(())
    logging.setLogRecordFactory(factory)
    logging.getLogger().handlers[:] = root_handlers
    logging.getLogger().setLevel(level)


def test_a_custom_password_key_is_secret_by_default() -> None:
    """Before: ``consumer.override.my.custom.pwd`` was shown in GET .../config."""
    assert is_sensitive_key("consumer.override.my.custom.pwd")
    assert is_sensitive_key("producer.override.db.passwd")
    herder = FakeHerder()
    herder.configs["src"] = {"connector.class": "X", "consumer.override.my.custom.pwd": "pwd-value-1"}
    with TestClient(create_app(herder)) as client:
        assert client.get("/connectors/src/config").json()["consumer.override.my.custom.pwd"] == HIDDEN
        assert "pwd-value-1" not in client.get("/connectors/src").text


def test_secrets_keys_extends_the_rule_from_mm2_properties() -> None:
    assert not is_sensitive_key("consumer.override.vault.pin")
    MirrorMakerConfig(parse_properties(MM2 + "secrets.keys = \\\\.pin$, ^my\\\\.\n", "mm2.properties"))
    assert is_sensitive_key("consumer.override.vault.pin") and is_sensitive_key("my.anything")
    assert is_sensitive_key("A.ssl.key.password")  # the built-in rule stays
    assert mask_config({"consumer.override.vault.pin": "1234-5678"}) == {"consumer.override.vault.pin": HIDDEN}


def test_secrets_keys_from_worker_properties(tmp_path: Path) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text("bootstrap.servers = 127.0.0.1:9092\ngroup.id = g\nconfig.storage.topic = c\n"
                      "offset.storage.topic = o\nstatus.storage.topic = s\nsecrets.keys = \\\\.pin$\n"
                      "producer.override.x.pin = 24680-pin\n")
    load_worker_config(str(worker))
    assert is_sensitive_key("producer.override.x.pin")


def test_a_bad_secrets_keys_pattern_names_its_line() -> None:
    with pytest.raises(ConfigError, match=r"mm2\.properties:4: secrets\.keys: '\(' is not a regular expression"):
        MirrorMakerConfig(parse_properties(MM2 + "secrets.keys = (\n", "mm2.properties"))


def test_a_handler_added_after_start_up_is_scrubbed() -> None:
    """Before: only the handlers present when logging was configured got the scrubbing filter."""
    remember_secrets({"late.handler.password": "late-handler-s3cret"})
    configure_logging("INFO", None)
    late, stream = logging.getLogger("tests.late.handler"), io.StringIO()
    handler = logging.StreamHandler(stream)
    late.addHandler(handler)
    try:
        late.warning("connecting with %s", "late-handler-s3cret")
        try:
            raise RuntimeError("login failed for late-handler-s3cret")
        except RuntimeError:
            late.exception("failed")
        late.warning("stack", stack_info=True, extra={"x": 1})
    finally:
        late.removeHandler(handler)
    assert "late-handler-s3cret" not in stream.getvalue()
    assert stream.getvalue().count(HIDDEN) >= 2


def test_the_record_factory_is_installed_once() -> None:
    scrub_every_log_record()
    installed = logging.getLogRecordFactory()
    scrub_every_log_record()
    assert logging.getLogRecordFactory() is installed


def test_every_cli_error_line_is_scrubbed(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: print_error and the subcommands' own ``error:`` lines printed exception text as it was."""
    remember_secrets({"cli.password": "cli-error-s3cret"})
    print_error("cannot connect with cli-error-s3cret")

    def failing(_: object) -> int:
        raise RuntimeError("broker refused cli-error-s3cret")

    def misconfigured(_: object) -> int:
        raise ConfigError("bad value cli-error-s3cret")

    assert invoke(failing, object()) != 0  # type: ignore[arg-type]
    assert invoke(misconfigured, object()) != 0  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert "cli-error-s3cret" not in err and err.count(HIDDEN) == 3


@pytest.fixture
def no_memfd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A platform without memfd_create (macOS, old kernels): scratch files go to a temp dir we watch."""
    monkeypatch.delattr(os, "memfd_create", raising=False)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def test_no_key_file_is_left_on_disk_without_memfd(no_memfd: Path, tmp_path: Path) -> None:
    """Before: rest/tls.py wrote the inline key with mkstemp and never deleted it."""
    pem = self_signed(tmp_path)
    inline = {"listeners.https.ssl.keystore.type": "PEM", "listeners.https.ssl.keystore.key": pem.key_pem,
              "listeners.https.ssl.keystore.certificate.chain": pem.cert_pem,
              "listeners.https.ssl.truststore.type": "PEM", "listeners.https.ssl.truststore.certificates": pem.cert_pem}
    security = RestSecurity.from_props(inline, https=True)
    assert security.server_ssl is not None and security.client_ssl is not None
    assert list(no_memfd.iterdir()) == []
    (tmp_path / "other").mkdir()
    other = self_signed(tmp_path / "other")
    with pytest.raises(ConfigError):  # a key that does not match its certificate: the error path too
        RestSecurity.from_props({**inline, "listeners.https.ssl.keystore.key": other.key_pem}, https=True)
    assert list(no_memfd.iterdir()) == []
