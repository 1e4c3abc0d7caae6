"""The one way PEM text reaches Python's ``ssl`` loaders: a private file that is gone when its scope ends."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from connect_runtime.clients.tls_properties import private_file, private_files


def test_a_private_file_holds_the_text_until_its_scope_ends() -> None:
    with private_files():
        path = private_file("-----BEGIN CERTIFICATE-----\n", "ca.pem")
        assert Path(path).read_text() == "-----BEGIN CERTIFICATE-----\n"
    assert not os.path.exists(path)


def test_without_memfd_the_file_is_owner_only_and_deleted_even_on_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "memfd_create", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ValueError), private_files():
        path = private_file("key", "key.pem")
        assert Path(path).parent.parent == tmp_path
        assert os.stat(path).st_mode & 0o777 == 0o600
        assert os.stat(Path(path).parent).st_mode & 0o777 == 0o700
        raise ValueError("the context could not be built")
    assert list(tmp_path.iterdir()) == []


def test_a_private_file_outside_a_scope_is_refused() -> None:
    with pytest.raises(RuntimeError, match="private_files"):
        private_file("key", "key.pem")
