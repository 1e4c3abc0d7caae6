"""Python ``ssl.SSLContext`` objects from PEM text, for the clients that are not librdkafka.

The group membership client (kafka-python) and HTTPS servers take an ``SSLContext``. The stores are
already PEM text in memory (:mod:`connect_runtime.clients.java_stores`), and Python's ``ssl`` module loads
trusted certificates from memory but a certificate chain and key only from a file path. So the chain and
key are handed to OpenSSL through an anonymous in-memory file (``memfd_create``, Linux), or where there
is none, a file readable only by this process in a private directory, deleted as soon as it is loaded.
"""

from __future__ import annotations

import os
import ssl
import tempfile

from connect_runtime.clients.java_stores import KeyMaterial


def client_context(ca_pem: str | None = None, key: KeyMaterial | None = None, *, verify: bool = True,
                   check_hostname: bool = True) -> ssl.SSLContext:
    """A TLS client context trusting ``ca_pem`` (the system's CAs when None) and presenting ``key``."""
    context = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = check_hostname
    if key is not None:
        load_key_material(context, key)
    return context


def load_key_material(context: ssl.SSLContext, key: KeyMaterial) -> None:
    """``context.load_cert_chain`` from PEM text, without leaving the key in a file."""
    data = (key.certificate_chain_pem + key.private_key_pem).encode()
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        fd = memfd_create("tls-key-material", getattr(os, "MFD_CLOEXEC", 0))
        try:
            os.write(fd, data)
            context.load_cert_chain(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="tls-") as private:  # created 0700
        path = os.path.join(private, "key-material.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        context.load_cert_chain(path)
