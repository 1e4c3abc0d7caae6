"""Python ``ssl.SSLContext`` objects from PEM material, for the clients that are not librdkafka.

The group membership client (kafka-python) and the REST listener and its forwarding client
(:mod:`connect_runtime.rest.tls`) take an ``SSLContext``. The stores are already PEM text in memory
(:mod:`connect_runtime.clients.java_stores`), and Python's ``ssl`` module loads trusted certificates from
memory but a certificate chain and key only from a file path. So such PEM text is handed to OpenSSL
through :func:`private_file`: an anonymous in-memory file (``memfd_create``, Linux, closed on exec), or
where there is none, a file readable only by this process in a private directory. Either is gone when
the :func:`private_files` scope it was written in ends, however it ends: an ``SSLContext`` keeps what it
loaded in memory, so no copy of key material outlives the context's construction, on disk or in a child.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import tempfile
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from connect_runtime.clients.java_stores import KeyMaterial

#: The clean-ups of the innermost :func:`private_files` scope of this thread (None outside any).
_SCOPE: ContextVar[list[Callable[[], None]] | None] = ContextVar("tls_private_files", default=None)


@contextlib.contextmanager
def private_files() -> Iterator[None]:
    """The scope of :func:`private_file`: every file written inside it is closed or deleted at its end."""
    cleanups: list[Callable[[], None]] = []
    token = _SCOPE.set(cleanups)
    try:
        yield
    finally:
        _SCOPE.reset(token)
        for cleanup in reversed(cleanups):
            with contextlib.suppress(OSError):
                cleanup()


def private_file(content: str, name: str) -> str:
    """``content`` as a file only this process can read, for ``ssl`` loaders that take a path; its path.

    In memory (``memfd_create``) where Linux offers it, so no decrypted key reaches a disk, else a 0600
    file in a new 0700 directory. Only inside :func:`private_files`, which removes it."""
    cleanups = _SCOPE.get()
    if cleanups is None:
        raise RuntimeError("private_file() is only for use inside a private_files() scope")
    data = content.encode("utf-8")
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        fd = memfd_create(name, getattr(os, "MFD_CLOEXEC", 0))
        cleanups.append(lambda: os.close(fd))
        os.write(fd, data)
        return f"/proc/self/fd/{fd}"
    directory = tempfile.mkdtemp(prefix="tls-")  # created 0700
    cleanups.append(lambda: shutil.rmtree(directory))
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path


def client_context(ca_pem: str | None = None, key: KeyMaterial | None = None, *, verify: bool = True,
                   check_hostname: bool = True) -> ssl.SSLContext:
    """A TLS client context trusting ``ca_pem`` (the system's CAs when None) and presenting ``key``; a
    caller with files rather than PEM text loads them on the context it gets (:mod:`connect_runtime.rest.tls`)."""
    context = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = check_hostname
    if key is not None:
        load_key_material(context, key)
    return context


def server_context() -> ssl.SSLContext:
    """A TLS server context with Python's defaults for serving clients (no client certificate asked yet):
    the caller loads its certificate chain, trust store and client-auth mode."""
    return ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)


def load_key_material(context: ssl.SSLContext, key: KeyMaterial) -> None:
    """``context.load_cert_chain`` from PEM text, without leaving the key in a file."""
    with private_files():
        context.load_cert_chain(private_file(key.certificate_chain_pem + key.private_key_pem, "key-material.pem"))
