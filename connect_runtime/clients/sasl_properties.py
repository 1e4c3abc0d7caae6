"""One SASL translation for every client: Java's login keys (``sasl.mechanism``, ``sasl.jaas.config``, the
callback handler classes) parsed once into a :class:`SaslLogin`, then rendered for each library.

* librdkafka (producers, consumers, admin clients): :func:`librdkafka_sasl` gives its flat keys, or a
  token callback (``oauth_cb``).
* kafka-python (the group membership client): :func:`kafka_python_sasl` gives its keywords; an
  OAUTHBEARER login there draws its tokens from the *same* :class:`TokenSource` librdkafka's keys
  describe, so both kinds of client log in as the same principal.

A Java client describes its login with a JAAS line and, for token logins, callback handler classes;
librdkafka has flat keys instead. The mapping, by JAAS login module:

* ``PlainLoginModule`` / ``ScramLoginModule``: ``username`` / ``password`` -> ``sasl.username`` /
  ``sasl.password`` (``sasl.mechanism`` PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 passes through).
* ``Krb5LoginModule`` (GSSAPI): ``principal`` / ``keyTab`` -> ``sasl.kerberos.principal`` / ``.keytab``;
  ``serviceName`` (or ``sasl.kerberos.service.name``; both set and different is Kafka's error too) ->
  ``sasl.kerberos.service.name``; a ticket cache without a key tab turns librdkafka's own kinit off;
  Java's ``sasl.kerberos.kinit.cmd`` (a path) becomes librdkafka's kinit command line. kafka-python
  logs in with the process's Kerberos ticket cache only (its GSSAPI takes no key tab or principal), so
  for the group membership client a key tab is refused, naming that client, rather than ignored.
* ``OAuthBearerLoginModule`` with ``sasl.oauthbearer.token.endpoint.url``: OIDC client credentials,
  ``sasl.oauthbearer.method=oidc`` with ``clientId`` / ``clientSecret`` / ``scope`` and ``extension_*``;
  with ``unsecuredLoginStringClaim_sub`` (Kafka's development tokens): librdkafka's unsecured JWT.
* AWS MSK IAM, ``software.amazon.msk.auth.iam.IAMLoginModule`` (mechanism ``AWS_MSK_IAM``) or the
  ``IAMOAuthBearerLoginCallbackHandler`` classes: OAUTHBEARER with a token callback from the
  ``aws-msk-iam-sasl-signer-python`` library (the ``aws`` extra); ``awsProfileName``, ``awsRoleArn``,
  ``awsRoleSessionName`` and ``awsDebugCreds`` are honoured.
* ``sasl.login.callback.handler.class`` naming a Python callable (``package.module.function`` or a class
  with ``__call__``): that callable is the OAUTHBEARER token callback (``oauth_cb``), if the process's code
  policy permits the name (``plugin.allowlist``, or named in the operator's own file: it is called with
  ``sasl.oauthbearer.config``, a string from the same config).

librdkafka's own OIDC keys a config may name (``sasl.oauthbearer.client.id`` ..., ``https.ca.location`` /
``https.ca.pem`` for the token endpoint's certificate) reach librdkafka by name and fill what the JAAS
line leaves out, for the other clients' token requests too.

SASL keys are read only when ``security.protocol`` is SASL_PLAINTEXT or SASL_SSL, as Java does. Anything
that cannot be honoured is a ConfigError naming the key; values (secrets) are never in a message.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.errors import ConfigError

JAAS = "sasl.jaas.config"
LOGIN_HANDLER = "sasl.login.callback.handler.class"
CLIENT_HANDLER = "sasl.client.callback.handler.class"
ENDPOINT = "sasl.oauthbearer.token.endpoint.url"

#: Java SASL keys this module consumes; they are never passed to librdkafka by name.
HANDLED = frozenset({JAAS, LOGIN_HANDLER, CLIENT_HANDLER, "sasl.login.class", "sasl.mechanism",
                     "sasl.kerberos.kinit.cmd", "sasl.kerberos.service.name"})

#: librdkafka's own login keys a config may name: they reach librdkafka by name, and :func:`sasl_login`
#: reads them too (the OIDC ones fill in what the JAAS line leaves out; the others the login overrides).
LIBRDKAFKA_KEYS = frozenset({
    "sasl.mechanisms", "sasl.username", "sasl.password", "sasl.kerberos.principal",
    "sasl.oauthbearer.method", "sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.client.credentials.client.id", "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.scope", "sasl.oauthbearer.extensions", "sasl.oauthbearer.config",
    "enable.sasl.oauthbearer.unsecure.jwt", "https.ca.location", "https.ca.pem",
})

#: The client kafka-python is here: every refusal for it names it.
GROUP_CLIENT = "the group membership client (kafka-python)"

_IAM_HANDLERS = frozenset({"software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
                           "software.amazon.msk.auth.iam.IAMClientCallbackHandler"})
_JAVA_HANDLERS = frozenset({
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredLoginCallbackHandler",
    "org.apache.kafka.common.security.authenticator.SaslClientCallbackHandler",
    "org.apache.kafka.common.security.authenticator.AbstractLogin$DefaultLoginCallbackHandler",
}) | _IAM_HANDLERS
_KINIT_TEMPLATE = ('{kinit} -R -t "%{{sasl.kerberos.keytab}}" -k %{{sasl.kerberos.principal}} || '
                   '{kinit} -t "%{{sasl.kerberos.keytab}}" -k %{{sasl.kerberos.principal}}')
_MSK_REGION = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.(?:amazonaws\.com|on\.aws)", re.I)

_JAAS_OPTION = re.compile(r'([A-Za-z_][\w.\-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;"]+)')
_JAAS_MODULE = re.compile(r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b", re.I)


def parse_jaas(jaas: str) -> tuple[str, dict[str, str]]:
    """Split a JAAS login line into (login module class, options). Quoted values are unescaped.

    ``org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";``
    -> ``("org.apache...PlainLoginModule", {"username": "u", "password": "p"})``. Raises ConfigError
    (naming the key, never the value) when it cannot be parsed.
    """
    match = _JAAS_MODULE.match(jaas)
    if match is None:
        raise ConfigError(f"{JAAS} is not a JAAS login line: expected '<LoginModule> required ...;'", JAAS)
    options: dict[str, str] = {}
    for name, raw in _JAAS_OPTION.findall(jaas[match.end():]):
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        options[name] = raw
    return match.group(1), options


def uses_sasl(java: Mapping[str, Any]) -> bool:
    return str(java.get("security.protocol") or "PLAINTEXT").strip().upper().startswith("SASL_")


# --- the login, parsed once --------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class KerberosLogin:
    """A GSSAPI login: ``ticket_cache_only`` is ``useTicketCache=true`` without a key tab (no kinit)."""

    principal: str | None
    key_tab: str | None
    service_name: str | None
    ticket_cache_only: bool
    kinit_cmd: str | None

    def __repr__(self) -> str:
        return f"KerberosLogin(principal={self.principal!r}, service_name={self.service_name!r})"


class TokenSource:
    """Where an OAUTHBEARER login's tokens come from; one per parsed login, shared by every client of it.

    :meth:`librdkafka` gives librdkafka's keys for the source (it fetches OIDC and unsecured tokens
    itself, and calls a callback); :meth:`token` fetches one token for a client that takes a token
    provider (kafka-python), with :meth:`extensions` the SASL extensions to send with it.
    """

    def __init__(self, extensions: Mapping[str, str]) -> None:
        self._extensions = dict(extensions)

    def librdkafka(self) -> dict[str, Any]:
        raise NotImplementedError

    def token(self) -> tuple[str, float]:
        """A fresh token and its expiry (seconds since the epoch)."""
        raise NotImplementedError

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)


class CallbackTokens(TokenSource):
    """Tokens from a Python callable, called as librdkafka calls ``oauth_cb``: with ``sasl.oauthbearer.config``,
    returning ``(token, expiry[, principal, extensions])``."""

    def __init__(self, callback: Callable[[str], Any], config: str = "") -> None:
        super().__init__({})
        self.callback, self._config = callback, config

    def librdkafka(self) -> dict[str, Any]:
        return {"oauth_cb": self.callback}

    def token(self) -> tuple[str, float]:
        result = self.callback(self._config)
        if len(result) > 3 and result[3]:
            self._extensions = {str(k): str(v) for k, v in dict(result[3]).items()}
        return str(result[0]), float(result[1])


class OidcClientCredentials(TokenSource):
    """OAuth client credentials from a token endpoint, what librdkafka's ``sasl.oauthbearer.method=oidc``
    does; :meth:`token` makes the same request for a client with no OIDC of its own (kafka-python),
    trusting the certificates librdkafka's ``https.ca.location`` / ``https.ca.pem`` name, if any."""

    def __init__(self, endpoint: str, client_id: str | None, client_secret: str | None, scope: str | None,
                 extensions: Mapping[str, str], *, ca_location: str | None = None, ca_pem: str | None = None) -> None:
        super().__init__(extensions)
        self.endpoint, self.client_id, self._secret, self.scope = endpoint, client_id, client_secret, scope
        self._ca_location, self._ca_pem = ca_location, ca_pem

    def librdkafka(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": self.endpoint}
        for key, value in (("sasl.oauthbearer.client.id", self.client_id),
                           ("sasl.oauthbearer.client.secret", self._secret), ("sasl.oauthbearer.scope", self.scope)):
            if value is not None:
                out[key] = value
        if self._extensions:
            out["sasl.oauthbearer.extensions"] = ",".join(f"{k}={v}" for k, v in self._extensions.items())
        return out

    def token(self) -> tuple[str, float]:
        import httpx

        verify: ssl.SSLContext | bool = True
        if self._ca_location or self._ca_pem:
            verify = ssl.create_default_context(cafile=self._ca_location, cadata=self._ca_pem)
        form = {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {})}
        auth = (self.client_id or "", self._secret or "")
        response = httpx.post(self.endpoint, data=form, auth=auth, headers={"Accept": "application/json"},
                              timeout=30, verify=verify)
        if response.status_code != 200:
            raise ConfigError(f"OIDC token endpoint {self.endpoint} answered HTTP {response.status_code}", ENDPOINT)
        body = response.json()
        return str(body["access_token"]), time.time() + float(body.get("expires_in", 3600))

    def __repr__(self) -> str:
        return f"OidcClientCredentials(endpoint={self.endpoint!r}, client_id={self.client_id!r})"


class UnsecuredTokens(TokenSource):
    """Kafka's unsecured development tokens (``unsecuredLoginStringClaim_sub``): librdkafka's
    ``enable.sasl.oauthbearer.unsecure.jwt``, and the same unsigned JWT for the other clients."""

    def __init__(self, principal: str, life_seconds: str | None, extensions: Mapping[str, str]) -> None:
        super().__init__(extensions)
        self.principal, self.life_seconds = principal, life_seconds

    def librdkafka(self) -> dict[str, Any]:
        parts = [f"principal={self.principal}"]
        if self.life_seconds is not None:
            parts.append(f"lifeSeconds={self.life_seconds}")
        parts += [f"extension_{k}={v}" for k, v in self._extensions.items()]
        return {"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": " ".join(parts)}

    def token(self) -> tuple[str, float]:
        import base64
        import json

        now = time.time()
        expiry = now + float(self.life_seconds or 3600)

        def encode(claims: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()

        claims = {"sub": self.principal, "iat": int(now), "exp": int(expiry)}
        return f"{encode({'alg': 'none'})}.{encode(claims)}.", expiry


@dataclass(frozen=True, repr=False)
class SaslLogin:
    """One client's SASL login, parsed once from its Java properties (:func:`sasl_login`).

    ``mechanism`` is what goes on the wire (AWS MSK IAM is OAUTHBEARER with the signer's tokens); exactly
    one of ``username``/``password``, ``kerberos`` and ``tokens`` is set, by mechanism.
    """

    mechanism: str
    username: str | None = None
    password: str | None = None
    kerberos: KerberosLogin | None = None
    tokens: TokenSource | None = None

    def __repr__(self) -> str:  # never print a password by accident
        return f"SaslLogin(mechanism={self.mechanism!r}, username={self.username!r})"


def sasl_login(java: Mapping[str, str]) -> SaslLogin | None:
    """The SASL login ``java`` describes; None unless ``security.protocol`` is SASL_*. ConfigError naming
    the key for anything that cannot be honoured (a Python token callback is resolved here, under the
    process's code policy; the MSK IAM signer is loaded here)."""
    if not uses_sasl(java):
        return None
    mechanism = java.get("sasl.mechanism", "GSSAPI").strip().upper()
    module, options = parse_jaas(java[JAAS]) if java.get(JAAS) else ("", {})
    short = module.rsplit(".", 1)[-1]
    login_handler = java.get(LOGIN_HANDLER, "").strip()
    _check_handler(CLIENT_HANDLER, java.get(CLIENT_HANDLER, "").strip())
    if mechanism == "AWS_MSK_IAM" or short == "IAMLoginModule" or login_handler in _IAM_HANDLERS:
        return SaslLogin("OAUTHBEARER", tokens=CallbackTokens(msk_iam_token_callback(java, options)))
    if mechanism == "PLAIN" or mechanism.startswith("SCRAM-"):
        if short not in ("PlainLoginModule", "ScramLoginModule"):
            raise ConfigError(f"{JAAS}: {mechanism} needs PlainLoginModule or ScramLoginModule "
                              f"with username and password (found {short or 'none'})", JAAS)
        for option in ("username", "password"):
            if option not in options:
                raise ConfigError(f"{JAAS}: the {short} line has no {option}", JAAS)
        return SaslLogin(mechanism, username=options["username"], password=options["password"])
    if mechanism == "GSSAPI":
        return SaslLogin(mechanism, kerberos=_kerberos(java, short, options))
    if mechanism == "OAUTHBEARER":
        return SaslLogin(mechanism, tokens=_tokens(java, short, options, login_handler))
    raise ConfigError(f"sasl.mechanism '{mechanism}' is not supported (expected PLAIN, SCRAM-SHA-256, "
                      "SCRAM-SHA-512, GSSAPI, OAUTHBEARER or AWS_MSK_IAM)", "sasl.mechanism")


def _kerberos(java: Mapping[str, str], short: str, options: Mapping[str, str]) -> KerberosLogin:
    if short and short != "Krb5LoginModule":
        raise ConfigError(f"{JAAS}: GSSAPI needs Krb5LoginModule (found {short})", JAAS)
    configured, in_jaas = java.get("sasl.kerberos.service.name"), options.get("serviceName")
    if configured and in_jaas and configured != in_jaas:
        raise ConfigError("Conflicting serviceName values found in JAAS and Kafka configs "
                          f"(sasl.kerberos.service.name '{configured}', JAAS serviceName '{in_jaas}')",
                          "sasl.kerberos.service.name")
    return KerberosLogin(
        principal=options.get("principal"), key_tab=options.get("keyTab"), service_name=configured or in_jaas,
        ticket_cache_only=options.get("useTicketCache", "").lower() == "true" and "keyTab" not in options,
        kinit_cmd=(java.get("sasl.kerberos.kinit.cmd") or "").strip() or None)


def _tokens(java: Mapping[str, str], short: str, options: Mapping[str, str], login_handler: str) -> TokenSource:
    if short and short != "OAuthBearerLoginModule":
        raise ConfigError(f"{JAAS}: OAUTHBEARER needs OAuthBearerLoginModule (found {short})", JAAS)
    if login_handler and login_handler not in _JAVA_HANDLERS:
        return CallbackTokens(python_callable(login_handler, LOGIN_HANDLER), java.get("sasl.oauthbearer.config", ""))
    extensions = {k[len("extension_"):]: v for k, v in options.items() if k.startswith("extension_")}
    endpoint = java.get(ENDPOINT, "").strip()
    if endpoint:
        if not extensions:
            items = java.get("sasl.oauthbearer.extensions", "").split(",")
            extensions = dict(item.split("=", 1) for item in items if "=" in item)

        def option(name: str, *native: str) -> str | None:
            return options.get(name) or next((java[k] for k in native if java.get(k)), None)

        return OidcClientCredentials(
            endpoint, option("clientId", "sasl.oauthbearer.client.id", "sasl.oauthbearer.client.credentials.client.id"),
            option("clientSecret", "sasl.oauthbearer.client.secret",
                   "sasl.oauthbearer.client.credentials.client.secret"),
            option("scope", "sasl.oauthbearer.scope"), extensions,
            ca_location=java.get("https.ca.location") or None, ca_pem=java.get("https.ca.pem") or None)
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
    principal = options.get(f"unsecuredLoginStringClaim_{principal_claim}")
    if principal is None:
        raise ConfigError("OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url (OIDC client credentials), "
                          f"a token callback in {LOGIN_HANDLER}, or an unsecured login "
                          "(unsecuredLoginStringClaim_sub in sasl.jaas.config)", ENDPOINT)
    return UnsecuredTokens(principal, options.get("unsecuredLoginLifetimeSeconds"),
                           {k[len("unsecuredLoginExtension_"):]: v for k, v in options.items()
                            if k.startswith("unsecuredLoginExtension_")})


# --- rendering ----------------------------------------------------------------------------------------


def librdkafka_sasl(login: SaslLogin) -> dict[str, Any]:
    """librdkafka's keys for ``login``."""
    out: dict[str, Any] = {"sasl.mechanism": login.mechanism}
    if login.username is not None:
        out.update({"sasl.username": login.username, "sasl.password": login.password})
    if login.tokens is not None:
        out.update(login.tokens.librdkafka())
    kerberos = login.kerberos
    if kerberos is not None:
        for key, value in (("sasl.kerberos.principal", kerberos.principal), ("sasl.kerberos.keytab", kerberos.key_tab),
                           ("sasl.kerberos.service.name", kerberos.service_name)):
            if value:
                out[key] = value
        if kerberos.ticket_cache_only:
            out["sasl.kerberos.min.time.before.relogin"] = "0"  # use the existing ticket cache, no kinit
        elif kerberos.kinit_cmd:
            out["sasl.kerberos.kinit.cmd"] = _KINIT_TEMPLATE.format(kinit=kerberos.kinit_cmd)
    return out


def kafka_python_sasl(login: SaslLogin) -> dict[str, Any]:
    """kafka-python's keywords for ``login`` (checked first with :func:`group_client_refusal`); an
    OAUTHBEARER login's ``sasl_oauth_token_provider`` is its :class:`TokenSource`, which the group client
    adapts to kafka-python's provider class. A GSSAPI login is the process's ticket cache there."""
    out: dict[str, Any] = {"sasl_mechanism": login.mechanism}
    if login.username is not None:
        out.update({"sasl_plain_username": login.username, "sasl_plain_password": login.password})
    if login.tokens is not None:
        out["sasl_oauth_token_provider"] = login.tokens
    if login.kerberos is not None:
        out["sasl_kerberos_service_name"] = login.kerberos.service_name or "kafka"
    return out


def group_client_refusal(java: Mapping[str, str]) -> tuple[str, str] | None:
    """(key, why) when kafka-python cannot log in as ``java``'s SASL keys say, read without resolving or
    importing anything (a worker config is checked with it before any client is built); None when it can.

    Its GSSAPI takes no key tab and no principal: it uses the process's default Kerberos credentials."""
    if not uses_sasl(java) or java.get("sasl.mechanism", "GSSAPI").strip().upper() != "GSSAPI":
        return None
    try:
        module, options = parse_jaas(java[JAAS]) if java.get(JAAS) else ("", {})
    except ConfigError:
        return None  # the login's own error, raised where it is translated
    if module.endswith("IAMLoginModule") or java.get(LOGIN_HANDLER, "").strip() in _IAM_HANDLERS:
        return None
    if "keyTab" in options:
        return (JAAS, "cannot log in from a key tab (keyTab=): its GSSAPI uses the process's Kerberos ticket "
                      "cache; keep one fresh for the principal (kinit, k5start) and set useTicketCache=true "
                      "without keyTab")
    if importlib.util.find_spec("gssapi") is None:
        return ("sasl.mechanism", "needs the gssapi package for GSSAPI: pip install gssapi")
    return None


def _check_handler(key: str, value: str) -> None:
    if value and value not in _JAVA_HANDLERS:
        raise ConfigError(f"{key}: callback handler class '{value}' has no equivalent here (a Java class); "
                          f"a Python token callback goes in {LOGIN_HANDLER}", key)


def check_code_keys(java: Mapping[str, str]) -> dict[str, str]:
    """The callback handler keys of ``java`` this process may not resolve, with the one-line reason, checked
    without importing anything (validation runs it on a connector's ``*.override.*`` keys, so a REST
    caller gets a 400 rather than a task that fails, or a callable that runs, at client build)."""
    errors = {}
    login_handler = java.get(LOGIN_HANDLER, "").strip()
    if login_handler and login_handler not in _JAVA_HANDLERS and not plugin_allowlist.permits(login_handler):
        errors[LOGIN_HANDLER] = plugin_allowlist.refusal(login_handler, LOGIN_HANDLER)
    try:
        _check_handler(CLIENT_HANDLER, java.get(CLIENT_HANDLER, "").strip())
    except ConfigError as exc:
        errors[CLIENT_HANDLER] = str(exc)
    return errors


def python_callable(name: str, key: str) -> Callable[[str], Any]:
    """The Python callable ``name`` (``pkg.module.attr`` or ``pkg.module:attr``); a class is instantiated
    with no arguments. ConfigError naming ``key`` when the process's code policy does not permit the name
    (:mod:`connect_runtime.api.plugin_allowlist`, checked before any import), or it cannot be imported or
    is not callable."""
    plugin_allowlist.check(name, key)
    module_name, _, attr = name.replace(":", ".").rpartition(".")
    try:
        target: Any = getattr(importlib.import_module(module_name), attr) if module_name else None
    except (ImportError, AttributeError, ValueError):
        target = None
    if isinstance(target, type):
        target = target()
    if not callable(target):
        raise ConfigError(f"{key}: '{name}' is neither a known Java callback handler nor an importable Python "
                          "callable", key)
    return target  # type: ignore[no-any-return]


# --- AWS MSK IAM ------------------------------------------------------------------------------------


class MskIamTokenCallback:
    """librdkafka's OAUTHBEARER token callback for AWS MSK IAM (``oauth_cb``).

    Each call signs a fresh token with the ``aws-msk-iam-sasl-signer-python`` library from the default
    AWS credentials chain, a named profile or an assumed role, as the Java ``IAMLoginModule`` options say.
    """

    def __init__(self, region: str, *, profile: str | None = None, role_arn: str | None = None,
                 session_name: str | None = None, debug_creds: bool = False) -> None:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

        self._provider = MSKAuthTokenProvider
        self.region, self.profile, self.role_arn = region, profile, role_arn
        self.session_name, self.debug_creds = session_name, debug_creds

    def __call__(self, _config: str) -> tuple[str, float]:
        provider = self._provider
        if self.role_arn:
            token, expiry_ms = provider.generate_auth_token_from_role_arn(
                self.region, self.role_arn, self.session_name or "MSKSASLDefaultSession")
        elif self.profile:
            token, expiry_ms = provider.generate_auth_token_from_profile(self.region, self.profile)
        else:
            token, expiry_ms = provider.generate_auth_token(self.region, aws_debug_creds=self.debug_creds)
        return token, expiry_ms / 1000.0

    def __repr__(self) -> str:
        return f"MskIamTokenCallback(region={self.region!r})"


def msk_region(java: Mapping[str, str]) -> str | None:
    """The AWS region: ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else the one in an MSK broker host name."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(variable):
            return os.environ[variable]
    match = _MSK_REGION.search(java.get("bootstrap.servers", ""))
    return match.group(1).lower() if match else None


def msk_iam_token_callback(java: Mapping[str, str], options: Mapping[str, str]) -> MskIamTokenCallback:
    region = msk_region(java)
    if region is None:
        raise ConfigError("AWS MSK IAM: no AWS region (set AWS_REGION, or use the MSK broker host names in "
                          "bootstrap.servers)", "bootstrap.servers")
    try:
        return MskIamTokenCallback(region, profile=options.get("awsProfileName"), role_arn=options.get("awsRoleArn"),
                                   session_name=options.get("awsRoleSessionName"),
                                   debug_creds=options.get("awsDebugCreds", "").lower() == "true")
    except ImportError:
        raise ConfigError(f"{JAAS}: AWS MSK IAM needs the aws extra: pip install 'pymirrormaker[aws]'",
                          JAAS) from None
