"""What becomes of each of Java's client ``ssl.*`` and ``sasl.*`` keys here: mapped, or refused with a reason.

The Kafka clients here are librdkafka (producers, consumers, admin clients), kafka-python (the group
membership client) and Python's ``ssl`` (the REST listener). All of them take their TLS and SASL settings
from one translation of the Java keys (:mod:`~connect_runtime.clients.tls_properties`,
:mod:`~connect_runtime.clients.sasl_properties`), rendered once per library. A Java key either has an
equivalent they enforce (:data:`DECISIONS` says which, for librdkafka and for the group membership client),
or only the value that asks for what they do anyway is accepted: Java's default, written out or not. Any
other value is refused with one line naming the key and the reason (:func:`check`), at config validation
and again at client build, so no key is accepted and then ignored. ``docs/security-keys.md`` is the same
table for operators.

The group membership client gets what the admin client gets. Where kafka-python cannot do what a key
asks (a Kerberos key tab; librdkafka's own keys with no Python equivalent, such as ``ssl.sigalgs.list``),
the key is refused for that client by :func:`group_client_refusals`, with one line naming the key and the
client, rather than left out of its login.

Keys consumed by their own translation (stores: :mod:`~connect_runtime.clients.tls_properties`; logins:
:mod:`~connect_runtime.clients.sasl_properties`) are listed as mapped; their errors are raised there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.clients import sasl_properties as sasl
from connect_runtime.clients import tls_properties as tls

Refusal = Callable[[Any], "str | None"]


#: What the group membership client does with a key whose accepted values ask nothing of any client.
SAME = "the same: the values accepted ask for what every client here does anyway"
#: ... with a TLS key: the one TLS translation, rendered as its SSLContext.
SSL_CONTEXT = "its SSLContext, from the same TLS settings (tls_properties.ssl_context)"
#: ... with a login key: the one SASL translation, rendered as its keywords.
SASL_LOGIN = ("its SASL keywords, from the same login (sasl_properties.kafka_python_sasl); GSSAPI from the "
              "process's ticket cache, a key tab refused")


@dataclass(frozen=True)
class Decision:
    """``mapping``: what the key does for librdkafka; ``refuse``: why a value cannot be enforced (None:
    accepted); ``group``: what the group membership client (kafka-python) does with an accepted value."""

    mapping: str
    refuse: Refusal
    refuses: bool = True  # False: every value is mapped (errors, if any, come from the key's translation)
    group: str = SAME


def _mapped(mapping: str, group: str) -> Decision:
    return Decision(mapping, lambda _value: None, refuses=False, group=group)


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value).strip()


def _default_only(default: str, why: str, *also: str) -> Decision:
    """Only ``default`` (or an equivalent in ``also``) is accepted: ``why`` the rest cannot be enforced."""
    accepted = {default.casefold(), *(a.casefold() for a in also)}

    def refuse(value: Any) -> str | None:
        text = _text(value)
        if not text or text.casefold() in accepted:
            return None
        return f"{why} (only {default}, Java's default, is accepted)"

    return Decision(f"{default} only: {why}", refuse)


def _number_default(default: float, why: str) -> Decision:
    def refuse(value: Any) -> str | None:
        text = _text(value)
        if not text:
            return None
        try:
            same = float(text) == default
        except ValueError:
            return "not a number"
        shown = int(default) if default == int(default) else default
        return None if same else f"{why} (only {shown}, Java's default, is accepted)"

    shown = int(default) if default == int(default) else default
    return Decision(f"{shown} only: {why}", refuse)


def _unset_only(why: str, *accepted: str) -> Decision:
    def refuse(value: Any) -> str | None:
        text = _text(value)
        return None if not text or text in accepted else why

    return Decision(f"unset only: {why}", refuse)


def _endpoint_identification(value: Any) -> str | None:
    if _text(value).lower() in ("", "https"):
        return None
    return "librdkafka checks broker host names the HTTPS way (https, Java's default) or not at all (empty)"


_JAVA_ONLY_PROVIDER = ("a Java security provider; librdkafka and Python's ssl use OpenSSL, whose own providers "
                       "are librdkafka's ssl.providers (not a Java key)")
_LIBRDKAFKA_OAUTH = "librdkafka refreshes a token when 80% of its lifetime has passed, with its own fixed retries"
_KINIT = ("librdkafka renews Kerberos tickets by running kinit every sasl.kerberos.min.time.before.relogin ms; "
          "set that instead")
_BROKER_SIDE = ("a broker-side token validation key: clients do not validate their own tokens against it (Java's "
                "neither), so it would be ignored; remove it")
_DEFAULT_LOGINS = ("org.apache.kafka.common.security.authenticator.DefaultLogin",
                   "org.apache.kafka.common.security.kerberos.KerberosLogin",
                   "org.apache.kafka.common.security.oauthbearer.internals.OAuthBearerRefreshingLogin")

#: Every client ``ssl.*`` / ``sasl.*`` key Kafka declares (``SslConfigs``, ``SaslConfigs``) -> its decision.
DECISIONS: dict[str, Decision] = {
    # --- TLS: versions and suites (connect_runtime.clients.tls_properties) ---
    tls.PROTOCOL: Decision("TLSv1.3 (default) or TLS: no cap on ssl.enabled.protocols",
                           tls.protocol_refusal, group=SSL_CONTEXT),
    tls.ENABLED_PROTOCOLS: Decision(
        "TLSv1.2,TLSv1.3 (default): both, as librdkafka and Python do anyway; TLSv1.3 alone: librdkafka "
        f"ssl.cipher.suites={tls.TLS13_ONLY_CIPHERS} (no TLSv1.2 suite offered), Python minimum_version "
        "TLSv1.3; TLSv1.1 and older are not enabled, as in current JDKs", tls.enabled_protocols_refusal,
        group=SSL_CONTEXT),
    tls.CIPHER_SUITES: Decision(
        "the TLSv1.2 suites, by their OpenSSL names -> librdkafka ssl.cipher.suites and Python set_ciphers",
        tls.cipher_suites_refusal, group=SSL_CONTEXT),
    "ssl.endpoint.identification.algorithm": Decision(
        "https -> librdkafka https and Python check_hostname; empty -> none", _endpoint_identification,
        group=SSL_CONTEXT),
    # --- TLS: stores (connect_runtime.clients.tls_properties) ---
    **{key: _mapped("read here (JKS, PKCS12, PEM) and given as PEM in memory: librdkafka ssl.ca.pem / "
                    "ssl.certificate.pem / ssl.key.pem, Python SSLContext", SSL_CONTEXT)
       for key in ("ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
                   "ssl.truststore.certificates", "ssl.keystore.location", "ssl.keystore.type",
                   "ssl.keystore.password", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.key.password")},
    # --- TLS: Java's machinery, which OpenSSL replaces ---
    "ssl.provider": _unset_only(_JAVA_ONLY_PROVIDER),
    "ssl.engine.factory.class": _unset_only(
        "a Java SslEngineFactory class; the TLS engine here is OpenSSL, configured by the other ssl.* keys",
        "org.apache.kafka.common.security.ssl.DefaultSslEngineFactory"),
    "ssl.keymanager.algorithm": _default_only(
        "SunX509", "OpenSSL presents the key store's one private key and its chain, as SunX509 does"),
    "ssl.trustmanager.algorithm": _default_only(
        "PKIX", "OpenSSL validates certificate paths the PKIX way (RFC 5280)", "SunPKIX", "X509", "X.509"),
    "ssl.secure.random.implementation": _unset_only(
        "a Java SecureRandom algorithm; OpenSSL uses its own random generator"),
    # --- SASL: logins (connect_runtime.clients.sasl_properties) ---
    **{key: _mapped("the SASL login: librdkafka sasl.* keys or a token callback (see the SASL section)", SASL_LOGIN)
       for key in ("sasl.mechanism", "sasl.jaas.config", "sasl.client.callback.handler.class",
                   "sasl.login.callback.handler.class", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
                   "sasl.oauthbearer.token.endpoint.url")},
    "sasl.login.class": _unset_only(
        "a Java Login class; the login here is librdkafka's for the mechanism (Kafka's default Login classes "
        "are accepted)", *_DEFAULT_LOGINS),
    # --- SASL: Kerberos ---
    "sasl.kerberos.min.time.before.relogin": _mapped(
        "librdkafka sasl.kerberos.min.time.before.relogin (the same)",
        "the same: it runs no kinit, and with the one GSSAPI login it can do (a ticket cache, no key tab) "
        "librdkafka runs none either"),
    "sasl.kerberos.ticket.renew.window.factor": _number_default(0.8, _KINIT),
    "sasl.kerberos.ticket.renew.jitter": _number_default(0.05, _KINIT),
    # --- SASL: token refresh and the token endpoint ---
    "sasl.login.refresh.window.factor": _number_default(0.8, _LIBRDKAFKA_OAUTH),
    "sasl.login.refresh.window.jitter": _number_default(0.05, _LIBRDKAFKA_OAUTH),
    "sasl.login.refresh.min.period.seconds": _number_default(60, _LIBRDKAFKA_OAUTH),
    "sasl.login.refresh.buffer.seconds": _number_default(300, _LIBRDKAFKA_OAUTH),
    "sasl.login.retry.backoff.ms": _number_default(100, _LIBRDKAFKA_OAUTH),
    "sasl.login.retry.backoff.max.ms": _number_default(10000, _LIBRDKAFKA_OAUTH),
    "sasl.login.connect.timeout.ms": _unset_only(
        "librdkafka's token endpoint request has its own fixed timeouts; it cannot be given this one"),
    "sasl.login.read.timeout.ms": _unset_only(
        "librdkafka's token endpoint request has its own fixed timeouts; it cannot be given this one"),
    "sasl.oauthbearer.sub.claim.name": _mapped(
        "librdkafka sasl.oauthbearer.sub.claim.name (OIDC tokens)",
        "nothing to apply: librdkafka reads the principal's name from that claim for itself; the token is "
        "sent as fetched and the broker reads its own claim"),
    "sasl.oauthbearer.scope.claim.name": _default_only(
        "scope", "librdkafka reads no scope claim from the tokens it fetches"),
    # --- SASL: broker-side token validation (Java's clients ignore these too) ---
    "sasl.oauthbearer.jwks.endpoint.url": _unset_only(_BROKER_SIDE),
    "sasl.oauthbearer.expected.audience": _unset_only(_BROKER_SIDE),
    "sasl.oauthbearer.expected.issuer": _unset_only(_BROKER_SIDE),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": _number_default(3600000, _BROKER_SIDE),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": _number_default(100, _BROKER_SIDE),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": _number_default(10000, _BROKER_SIDE),
    "sasl.oauthbearer.clock.skew.seconds": _number_default(30, _BROKER_SIDE),
}


def refusal(key: str, value: Any) -> str | None:
    """Why ``key = value`` is refused, or None (accepted, or not a key of :data:`DECISIONS`)."""
    decision = DECISIONS.get(key)
    return None if decision is None or value is None else decision.refuse(value)


#: For a TLS endpoint only Python's ssl serves (the REST listener): it enforces both version bounds.
_PYTHON_ONLY: dict[str, Refusal] = {tls.PROTOCOL: tls.python_protocol_refusal,
                                    tls.ENABLED_PROTOCOLS: tls.python_enabled_protocols_refusal}


def python_refusal(key: str, value: Any) -> str | None:
    """:func:`refusal` for a TLS endpoint served by Python's ``ssl`` alone (TLSv1.2 only is enforced there)."""
    if value is not None and key in _PYTHON_ONLY:
        return _PYTHON_ONLY[key](value)
    return refusal(key, value)


def error(name: str, value: Any, why: str) -> ConfigError:
    """The one-line error for a refused value; ``name`` is the key as the operator wrote it."""
    return ConfigError(f"Invalid value {_text(value)} for configuration {name}: {why}", name)


def check(java: Mapping[str, Any], prefix: str = "") -> None:
    """ConfigError for the first key of ``java`` (``prefix`` + a declared key) whose value is refused."""
    for name, value in java.items():
        if name.startswith(prefix):
            why = refusal(name[len(prefix):], value)
            if why is not None:
                raise error(name, value, why)


def errors(config: Mapping[str, Any], prefixes: tuple[str, ...]) -> dict[str, str]:
    """Every refused key under any of ``prefixes`` (``producer.override.`` ...) -> its message."""
    out: dict[str, str] = {}
    for name, value in config.items():
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is not None:
            why = refusal(name[len(prefix):], value)
            if why is not None:
                out[name] = str(error(name, value, why))
    return out


def validator(key: str) -> Callable[[str, Any], None] | None:
    """A ConfigDef validator refusing what :func:`refusal` refuses for ``key``; None for a mapped key."""
    if not DECISIONS[key].refuses:
        return None

    def validate(name: str, value: Any) -> None:
        why = refusal(key, value)
        if why is not None:
            raise error(name, value, why)

    validate.__doc__ = f"{DECISIONS[key].mapping.split(':')[0]} (docs/security-keys.md)"
    return validate


# --- the group membership client ---------------------------------------------------------------------

#: librdkafka's own TLS/SASL keys that Python's ssl / kafka-python cannot apply, and why.
_NO_GROUP_EQUIVALENT = {
    "ssl.sigalgs.list": "cannot restrict the signature algorithms (Python's ssl has no such setting)",
    "ssl.curves.list": "cannot restrict the key exchange curves (Python's ssl has no such setting for a client)",
    "ssl.providers": "loads no OpenSSL provider (Python's ssl uses the default ones)",
    "ssl.engine.location": "loads no OpenSSL engine",
    "ssl.engine.id": "loads no OpenSSL engine",
    "ssl.ca.certificate.stores": "reads no Windows certificate store; give the CA in ssl.truststore.* instead",
    "sasl.kerberos.keytab": "cannot log in from a key tab: its GSSAPI uses the process's Kerberos ticket cache",
    "sasl.oauthbearer.grant.type": "fetches OIDC tokens with client credentials only",
    "sasl.oauthbearer.metadata.authentication.type": "fetches OIDC tokens with client credentials only",
}
#: Key prefixes of TLS and SASL settings (Java's and librdkafka's): none may be left out of a login.
_SECURITY_PREFIXES = ("ssl.", "ssl_", "sasl.", "enable.ssl.", "enable.sasl.", "https.")
#: Keys the group membership client takes from the shared parse (DECISIONS' keys aside).
_GROUP_TAKES = sasl.LIBRDKAFKA_KEYS | tls.LIBRDKAFKA_KEYS


def group_client_refusals(java: Mapping[str, Any]) -> dict[str, str]:
    """The TLS/SASL keys of the group membership client's Java properties (the admin client's) that
    kafka-python cannot apply -> why, read without resolving or importing anything. A key counts only
    under a ``security.protocol`` that uses it, as it does for librdkafka."""
    out: dict[str, str] = {}
    tls_on, sasl_on = tls.uses_tls(java), sasl.uses_sasl(java)
    for key, value in java.items():
        if value is None or key in DECISIONS or key in _GROUP_TAKES or not key.startswith(_SECURITY_PREFIXES):
            continue
        if not (sasl_on if key.startswith(("sasl.", "enable.sasl.", "https.")) else tls_on):
            continue
        why = _NO_GROUP_EQUIVALENT.get(key)
        if why is None and key.startswith("sasl.oauthbearer.assertion."):
            why = "fetches OIDC tokens with client credentials only"
        out[key] = (f"{why or 'has no equivalent of this librdkafka key'}; it gets the admin client's keys, so "
                    "set this one under producer. or consumer. only, or remove it")
    login = sasl.group_client_refusal(java)
    if login is not None:
        out[login[0]] = login[1]
    return out


def group_client_error(name: str, why: str) -> ConfigError:
    """The one-line error for a key the group membership client cannot apply (its value is not shown: it
    may be a JAAS line with a password). ``name`` is the key as the operator wrote it."""
    return ConfigError(f"Configuration {name}: {sasl.GROUP_CLIENT} {why}", name)
