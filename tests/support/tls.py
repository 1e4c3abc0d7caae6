"""TLS for tests: a throwaway PKI with Java stores, and test brokers reachable only over TLS.

The test broker (Tansu) cannot serve TLS itself (docs/tansu.md: ``--cert`` with ``--key`` is rejected, ``--cert``
alone still serves plaintext), so :class:`TlsBroker` puts Debian's ``stunnel4`` in front of it: Tansu
listens on a private loopback port and *advertises the proxy's port*, so every connection a client makes
(bootstrap, then the broker named in the metadata) goes through stunnel and speaks TLS end to end. With
``mutual=True`` stunnel requires a client certificate chained to the test CA (``verifyChain``,
``requireCert``, ``CAfile``).

:func:`make_pki` builds, once per session, a root CA, a server certificate for ``127.0.0.1``/``localhost``
and a client certificate issued by an intermediate CA (so a client must send its whole chain), then
the stores a Java user would have: ``keytool``-made JKS and PKCS12 trust and key stores (the JKS key
store's private key has its own password: ``ssl.key.password``), plus PEM files.
"""

from __future__ import annotations

import datetime
import fcntl
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from connect_runtime.clients.log_reader import read_to_end
from mirror.local.broker import BrokerStartError, broker_binary, free_port

#: Passwords of the generated stores (test values; the tests check they never reach a log).
STORE_PASSWORD = "store-pw-5e1f"
KEY_PASSWORD = "key-pw-77a2"
TRUST_PASSWORD = "trust-pw-90c3"


@dataclass(frozen=True)
class Pki:
    """Files of one throwaway PKI (see the module docstring)."""

    directory: Path
    ca_pem: Path  # the root CA: what clients and stunnel trust
    other_ca_pem: Path  # an unrelated CA: trusting only this must fail
    server_chain_pem: Path
    server_key_pem: Path
    client_chain_pem: Path  # leaf + intermediate
    client_key_pem: Path  # unencrypted PKCS#8
    client_key_encrypted_pem: Path  # PKCS#8 encrypted with KEY_PASSWORD
    truststore_jks: Path
    truststore_p12: Path
    keystore_jks: Path  # store password STORE_PASSWORD, key password KEY_PASSWORD
    keystore_p12: Path  # store (and key) password STORE_PASSWORD

    def java_truststore(self, kind: str) -> dict[str, str]:
        """Java client keys for a trust store of type ``kind`` (JKS, PKCS12 or PEM)."""
        if kind == "PEM":
            return {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_pem)}
        path = self.truststore_jks if kind == "JKS" else self.truststore_p12
        return {"ssl.truststore.type": kind, "ssl.truststore.location": str(path),
                "ssl.truststore.password": TRUST_PASSWORD}

    def java_keystore(self, kind: str) -> dict[str, str]:
        """Java client keys for a key store of type ``kind`` (JKS with its own key password, or PKCS12)."""
        if kind == "JKS":
            return {"ssl.keystore.type": "JKS", "ssl.keystore.location": str(self.keystore_jks),
                    "ssl.keystore.password": STORE_PASSWORD, "ssl.key.password": KEY_PASSWORD}
        return {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(self.keystore_p12),
                "ssl.keystore.password": STORE_PASSWORD}

    def librdkafka(self, mutual: bool) -> dict[str, str]:
        """A plain librdkafka SSL config (PEM files) for test setup and checks."""
        config = {"security.protocol": "SSL", "ssl.ca.location": str(self.ca_pem)}
        if mutual:
            config.update({"ssl.certificate.location": str(self.client_chain_pem),
                           "ssl.key.location": str(self.client_key_pem)})
        return config


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _cert(subject: str, key: rsa.RSAPrivateKey, issuer: str, issuer_key: rsa.RSAPrivateKey, *, ca: bool,
          san: list[x509.GeneralName] | None = None, usage: x509.ObjectIdentifier | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(*items: x509.Certificate | rsa.RSAPrivateKey, password: str | None = None) -> bytes:
    out = b""
    for item in items:
        if isinstance(item, x509.Certificate):
            out += item.public_bytes(serialization.Encoding.PEM)
        else:
            encryption: serialization.KeySerializationEncryption = (
                serialization.BestAvailableEncryption(password.encode()) if password
                else serialization.NoEncryption())
            out += item.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return out


def _keytool(*runs: list[str]) -> None:
    """Run keytool once per argument list, all at once (each run starts a JVM)."""
    keytool = shutil.which("keytool")
    if keytool is None:
        raise RuntimeError("keytool (from a JDK) is needed to make Java stores for the TLS tests")
    procs = [subprocess.Popen([keytool, *args, "-noprompt"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for args in runs]
    for args, proc in zip(runs, procs, strict=True):
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"keytool {args[0]} failed: {out.decode(errors='replace')}")


def shared_pki(directory: Path) -> Pki:
    """:func:`make_pki` in ``directory`` once for all the processes that ask (pytest-xdist workers share
    one base temp directory): the first makes it under a lock, the others read it."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        pki = _files(directory / "pki")
        if not (pki.directory / ".complete").exists():
            make_pki(pki.directory)
            (pki.directory / ".complete").touch()
    return pki


def _files(d: Path) -> Pki:
    return Pki(d, d / "ca.pem", d / "other-ca.pem", d / "server-chain.pem", d / "server-key.pem",
               d / "client-chain.pem", d / "client-key.pem", d / "client-key-encrypted.pem",
               d / "truststore.jks", d / "truststore.p12", d / "keystore.jks", d / "keystore.p12")


def make_pki(directory: Path) -> Pki:
    """Certificates, keys and Java stores under ``directory`` (see the module docstring)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, other_key, inter_key, server_key, client_key = (_key() for _ in range(5))
    ca = _cert("test-root-ca", ca_key, "test-root-ca", ca_key, ca=True)
    other = _cert("unrelated-ca", other_key, "unrelated-ca", other_key, ca=True)
    inter = _cert("test-client-ca", inter_key, "test-root-ca", ca_key, ca=True)
    server = _cert("127.0.0.1", server_key, "test-root-ca", ca_key, ca=False,
                   san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
                   usage=ExtendedKeyUsageOID.SERVER_AUTH)
    client = _cert("mm2-client", client_key, "test-client-ca", inter_key, ca=False,
                   usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    files = {
        "ca.pem": _pem(ca), "other-ca.pem": _pem(other), "server-chain.pem": _pem(server, ca),
        "server-key.pem": _pem(server_key), "client-chain.pem": _pem(client, inter),
        "client-key.pem": _pem(client_key), "client-key-encrypted.pem": _pem(client_key, password=KEY_PASSWORD),
        "client.p12": pkcs12.serialize_key_and_certificates(
            b"mm2-client", client_key, client, [inter],
            serialization.BestAvailableEncryption(STORE_PASSWORD.encode())),
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    d = directory
    _keytool(
        *([["-importcert", "-alias", "test-root-ca", "-file", str(d / "ca.pem"), "-keystore",
            str(d / f"truststore.{ext}"), "-storetype", kind, "-storepass", TRUST_PASSWORD]
           for kind, ext in (("JKS", "jks"), ("PKCS12", "p12"))]),
        # Java-made key stores, from the PKCS12 that cryptography wrote: JKS with a separate key password...
        ["-importkeystore", "-srckeystore", str(d / "client.p12"), "-srcstoretype", "PKCS12",
         "-srcstorepass", STORE_PASSWORD, "-srcalias", "mm2-client", "-destkeystore", str(d / "keystore.jks"),
         "-deststoretype", "JKS", "-deststorepass", STORE_PASSWORD, "-destkeypass", KEY_PASSWORD],
        # ... and PKCS12 as keytool writes it (its own algorithms, not cryptography's)
        ["-importkeystore", "-srckeystore", str(d / "client.p12"), "-srcstoretype", "PKCS12",
         "-srcstorepass", STORE_PASSWORD, "-destkeystore", str(d / "keystore.p12"), "-deststoretype", "PKCS12",
         "-deststorepass", STORE_PASSWORD],
    )
    return _files(d)


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerStartError(f"{what} exited with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise BrokerStartError(f"{what} not listening on {port} after {timeout_s}s")


def _stop(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@dataclass
class TlsBroker:
    """One Tansu broker reachable only through a stunnel TLS endpoint (see the module docstring).

    ``bootstrap`` is the TLS endpoint. The broker's own plaintext port is private to this object: it
    answers metadata with the TLS endpoint, so a plaintext client gets nowhere.
    """

    name: str
    pki: Pki
    log_dir: Path
    mutual: bool = False
    #: (lowest, highest) TLS version stunnel accepts, e.g. ("TLSv1.2", "TLSv1.2"); None: stunnel's defaults
    protocols: tuple[str, str] | None = None
    tls_port: int = 0
    broker_port: int = 0
    broker: subprocess.Popen[bytes] | None = None
    stunnel: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.tls_port}"

    def start(self, timeout_s: float = 30.0) -> TlsBroker:
        stunnel = shutil.which("stunnel4") or shutil.which("stunnel")
        if stunnel is None:
            raise BrokerStartError("stunnel4 is not installed (apt-get install stunnel4)")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.tls_port, self.broker_port = free_port(), free_port()
        try:
            self._start_broker(timeout_s)
            self._start_stunnel(stunnel, timeout_s)
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_broker(self, timeout_s: float) -> None:
        cmd = [broker_binary(), "broker", "--cluster-id", f"cluster-{self.name}",
               "--listener-url", f"tcp://127.0.0.1:{self.broker_port}",
               "--advertised-listener-url", f"tcp://127.0.0.1:{self.tls_port}", "--storage-engine", "memory://tansu/"]
        env = {**os.environ, "RUST_LOG": os.environ.get("TANSU_RUST_LOG", "warn")}
        with (self.log_dir / f"tansu-{self.name}-{self.broker_port}.log").open("wb") as out:
            self.broker = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        _wait_port(self.broker_port, self.broker, f"broker {self.name}", timeout_s)

    def _start_stunnel(self, stunnel: str, timeout_s: float) -> None:
        log = self.log_dir / f"stunnel-{self.name}-{self.tls_port}.log"
        lines = ["foreground = yes", "pid =", f"output = {log}", "debug = warning", "",
                 "[kafka]", f"accept = 127.0.0.1:{self.tls_port}", f"connect = 127.0.0.1:{self.broker_port}",
                 f"cert = {self.pki.server_chain_pem}", f"key = {self.pki.server_key_pem}"]
        if self.mutual:
            lines += [f"CAfile = {self.pki.ca_pem}", "verifyChain = yes", "requireCert = yes"]
        if self.protocols is not None:
            lines += [f"sslVersionMin = {self.protocols[0]}", f"sslVersionMax = {self.protocols[1]}"]
        conf = self.log_dir / f"stunnel-{self.name}-{self.tls_port}.conf"
        conf.write_text("\n".join(lines) + "\n")
        self.stunnel = subprocess.Popen([stunnel, str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        _wait_port(self.tls_port, self.stunnel, f"stunnel for {self.name}", timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                self.admin().list_topics(timeout=2)
                return
            except Exception as exc:
                last = exc
                time.sleep(0.1)
        raise BrokerStartError(f"TLS broker {self.name} not ready after {timeout_s}s: {last}")

    def stop(self) -> None:
        _stop(self.stunnel)
        self.stunnel = None
        _stop(self.broker, signal.SIGINT)  # Tansu waits for its clients on SIGTERM (see LocalBroker.stop)
        self.broker = None

    # --- test-side clients (plain librdkafka PEM configs: independent of the product's translation) ---

    def client_config(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "allow.auto.create.topics": False,
                **self.pki.librdkafka(self.mutual)}

    def admin(self) -> AdminClient:
        return AdminClient(self.client_config())

    def create_topic(self, name: str, partitions: int = 1) -> str:
        client = self.admin()
        client.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(15)
        return name

    def produce(self, topic: str, records: Iterable[tuple[bytes, bytes]]) -> int:
        producer = Producer({**self.client_config(), "linger.ms": 5})
        errors: list[KafkaError] = []
        count = 0
        for key, value in records:
            producer.produce(topic, value=value, key=key, on_delivery=lambda err, _m: err and errors.append(err))
            count += 1
        assert producer.flush(30) == 0, "records not delivered"
        assert not errors, f"delivery errors: {errors[:3]}"
        return count

    def read_all(self, topic: str, timeout_s: float = 15.0) -> list[tuple[bytes | None, bytes | None]]:
        """Every (key, value) of ``topic`` up to its end; [] when the topic does not exist."""
        meta = self.admin().list_topics(timeout=10).topics.get(topic)
        if meta is None:
            return []
        consumer = Consumer({**self.client_config(), "group.id": "tls-test-reader", "enable.auto.commit": False,
                             "enable.partition.eof": True})
        out: list[tuple[bytes | None, bytes | None]] = []

        def collect(records: list[Message]) -> None:
            out.extend((m.key(), m.value()) for m in records)

        def fail(err: KafkaError) -> None:
            raise AssertionError(f"consume error: {err}")

        try:
            read_to_end(consumer, {(topic, p): OFFSET_BEGINNING for p in meta.partitions}, collect, timeout_s,
                        on_error=fail)
        finally:
            consumer.close()
        return out


def java_tls(pki: Pki, trust: str, key: str | None = None) -> dict[str, str]:
    """Java client keys for a TLS cluster: ``security.protocol=SSL``, a trust store of type ``trust``
    and, for mutual TLS, a key store of type ``key``."""
    config = {"security.protocol": "SSL", **pki.java_truststore(trust)}
    if key is not None:
        config.update(pki.java_keystore(key))
    return config


def properties(prefix: str, config: Mapping[str, str]) -> str:
    """mm2.properties lines ``<prefix>.<key> = <value>`` (backslashes escaped for a properties file)."""
    return "".join(f"{prefix}.{k} = {v.replace(chr(92), chr(92) * 2)}\n" for k, v in config.items())
