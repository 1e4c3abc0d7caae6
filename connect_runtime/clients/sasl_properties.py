"""Java SASL settings (``sasl.mechanism``, ``sasl.jaas.config``, callback handler classes) for librdkafka.

A Java client describes its login with a JAAS line and, for token logins, callback handler classes;
librdkafka has flat keys instead. The mapping, by JAAS login module:

* ``PlainLoginModule`` / ``ScramLoginModule``: ``username`` / ``password`` -> ``sasl.username`` /
  ``sasl.password`` (``sasl.mechanism`` PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 passes through).
* ``Krb5LoginModule`` (GSSAPI): ``principal`` / ``keyTab`` -> ``sasl.kerberos.principal`` / ``.keytab``;
  ``serviceName`` (or ``sasl.kerberos.service.name``; both set and different is Kafka's error too) ->
  ``sasl.kerberos.service.name``; a ticket cache without a key tab turns librdkafka's own kinit off;
  Java's ``sasl.kerberos.kinit.cmd`` (a path) becomes librdkafka's kinit command line.
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

SASL keys are read only when ``security.protocol`` is SASL_PLAINTEXT or SASL_SSL, as Java does. Anything
that cannot be honoured is a ConfigError naming the key; values (secrets) are never in a message.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.errors import ConfigError

JAAS = "sasl.jaas.config"
LOGIN_HANDLER = "sasl.login.callback.handler.class"
CLIENT_HANDLER = "sasl.client.callback.handler.class"

#: Java SASL keys this module consumes; they are never passed to librdkafka by name.
HANDLED = frozenset({JAAS, LOGIN_HANDLER, CLIENT_HANDLER, "sasl.login.class", "sasl.mechanism",
                     "sasl.kerberos.kinit.cmd", "sasl.kerberos.service.name"})

_OAUTH_LOGIN = "OAuthBearerLoginCallbackHandler"
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


def uses_sasl(java: Mapping[str, str]) -> bool:
    return java.get("security.protocol", "PLAINTEXT").strip().upper().startswith("SASL_")


def translate_sasl(java: Mapping[str, str], out: dict[str, Any]) -> None:
    """Add to ``out`` the librdkafka keys for the SASL login ``java`` describes (nothing unless SASL)."""
    if not uses_sasl(java):
        return
    mechanism = java.get("sasl.mechanism", "GSSAPI").strip().upper()
    module, options = parse_jaas(java[JAAS]) if java.get(JAAS) else ("", {})
    short = module.rsplit(".", 1)[-1]
    login_handler = java.get(LOGIN_HANDLER, "").strip()
    _check_handler(CLIENT_HANDLER, java.get(CLIENT_HANDLER, "").strip())
    if mechanism == "AWS_MSK_IAM" or short == "IAMLoginModule" or login_handler in _IAM_HANDLERS:
        out.update({"sasl.mechanism": "OAUTHBEARER", "oauth_cb": msk_iam_token_callback(java, options)})
        return
    out["sasl.mechanism"] = mechanism
    if mechanism == "PLAIN" or mechanism.startswith("SCRAM-"):
        _credentials(short, options, out)
    elif mechanism == "GSSAPI":
        _kerberos(java, short, options, out)
    elif mechanism == "OAUTHBEARER":
        _oauthbearer(java, short, options, login_handler, out)
    else:
        raise ConfigError(f"sasl.mechanism '{mechanism}' is not supported (expected PLAIN, SCRAM-SHA-256, "
                          "SCRAM-SHA-512, GSSAPI, OAUTHBEARER or AWS_MSK_IAM)", "sasl.mechanism")


def _credentials(short: str, options: Mapping[str, str], out: dict[str, Any]) -> None:
    if short not in ("PlainLoginModule", "ScramLoginModule"):
        raise ConfigError(f"{JAAS}: {out['sasl.mechanism']} needs PlainLoginModule or ScramLoginModule "
                          f"with username and password (found {short or 'none'})", JAAS)
    for option in ("username", "password"):
        if option not in options:
            raise ConfigError(f"{JAAS}: the {short} line has no {option}", JAAS)
        out[f"sasl.{option}"] = options[option]


def _kerberos(java: Mapping[str, str], short: str, options: Mapping[str, str], out: dict[str, Any]) -> None:
    if short and short != "Krb5LoginModule":
        raise ConfigError(f"{JAAS}: GSSAPI needs Krb5LoginModule (found {short})", JAAS)
    if "principal" in options:
        out["sasl.kerberos.principal"] = options["principal"]
    if "keyTab" in options:
        out["sasl.kerberos.keytab"] = options["keyTab"]
    configured, in_jaas = java.get("sasl.kerberos.service.name"), options.get("serviceName")
    if configured and in_jaas and configured != in_jaas:
        raise ConfigError("Conflicting serviceName values found in JAAS and Kafka configs "
                          f"(sasl.kerberos.service.name '{configured}', JAAS serviceName '{in_jaas}')",
                          "sasl.kerberos.service.name")
    service = configured or in_jaas
    if service:
        out["sasl.kerberos.service.name"] = service
    if options.get("useTicketCache", "").lower() == "true" and "keyTab" not in options:
        out["sasl.kerberos.min.time.before.relogin"] = "0"  # use the existing ticket cache, no kinit
    elif java.get("sasl.kerberos.kinit.cmd"):
        out["sasl.kerberos.kinit.cmd"] = _KINIT_TEMPLATE.format(kinit=java["sasl.kerberos.kinit.cmd"].strip())


def _oauthbearer(java: Mapping[str, str], short: str, options: Mapping[str, str], login_handler: str,
                 out: dict[str, Any]) -> None:
    if short and short != "OAuthBearerLoginModule":
        raise ConfigError(f"{JAAS}: OAUTHBEARER needs OAuthBearerLoginModule (found {short})", JAAS)
    if login_handler and login_handler not in _JAVA_HANDLERS:
        out["oauth_cb"] = python_callable(login_handler, LOGIN_HANDLER)
        return
    extensions = {k[len("extension_"):]: v for k, v in options.items() if k.startswith("extension_")}
    endpoint = java.get("sasl.oauthbearer.token.endpoint.url", "").strip()
    if endpoint:
        out.update({"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": endpoint})
        for option, key in (("clientId", "sasl.oauthbearer.client.id"),
                            ("clientSecret", "sasl.oauthbearer.client.secret"), ("scope", "sasl.oauthbearer.scope")):
            if option in options:
                out[key] = options[option]
        if extensions:
            out["sasl.oauthbearer.extensions"] = ",".join(f"{k}={v}" for k, v in extensions.items())
        return
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
    principal = options.get(f"unsecuredLoginStringClaim_{principal_claim}")
    if principal is None:
        raise ConfigError("OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url (OIDC client credentials), "
                          f"a token callback in {LOGIN_HANDLER}, or an unsecured login "
                          "(unsecuredLoginStringClaim_sub in sasl.jaas.config)", "sasl.oauthbearer.token.endpoint.url")
    parts = [f"principal={principal}"]
    if "unsecuredLoginLifetimeSeconds" in options:
        parts.append(f"lifeSeconds={options['unsecuredLoginLifetimeSeconds']}")
    parts += [f"extension_{k[len('unsecuredLoginExtension_'):]}={v}" for k, v in options.items()
              if k.startswith("unsecuredLoginExtension_")]
    out.update({"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": " ".join(parts)})


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


# --- token callbacks for clients other than librdkafka (the group membership client) ----------------


class OidcClientCredentials:
    """An OAuth client-credentials token callback, what librdkafka's ``sasl.oauthbearer.method=oidc`` does,
    for the group membership client (kafka-python has no OIDC of its own)."""

    def __init__(self, endpoint: str, client_id: str | None, client_secret: str | None, scope: str | None) -> None:
        self.endpoint, self.client_id, self._secret, self.scope = endpoint, client_id, client_secret, scope

    def __call__(self, _config: str) -> tuple[str, float]:
        import time

        import httpx

        form = {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {})}
        auth = (self.client_id or "", self._secret or "")
        response = httpx.post(self.endpoint, data=form, auth=auth, headers={"Accept": "application/json"},
                              timeout=30)
        if response.status_code != 200:
            raise ConfigError(f"OIDC token endpoint {self.endpoint} answered HTTP {response.status_code}",
                              "sasl.oauthbearer.token.endpoint.url")
        body = response.json()
        return str(body["access_token"]), time.time() + float(body.get("expires_in", 3600))

    def __repr__(self) -> str:
        return f"OidcClientCredentials(endpoint={self.endpoint!r}, client_id={self.client_id!r})"


def unsecured_token(config: str) -> tuple[str, float]:
    """An unsigned JWT from librdkafka's ``sasl.oauthbearer.config`` (``principal=... lifeSeconds=...``),
    as librdkafka builds one with ``enable.sasl.oauthbearer.unsecure.jwt`` (development only)."""
    import base64
    import json
    import time

    fields = dict(part.split("=", 1) for part in config.split() if "=" in part)
    now = time.time()
    expiry = now + float(fields.get("lifeSeconds", 3600))

    def encode(claims: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()

    claims = {"sub": fields.get("principal", ""), "iat": int(now), "exp": int(expiry)}
    return f"{encode({'alg': 'none'})}.{encode(claims)}.", expiry


def token_source(librdkafka: Mapping[str, Any]) -> tuple[Callable[[], tuple[str, float]], dict[str, str]] | None:
    """For an OAUTHBEARER librdkafka config: a function giving the same (token, expiry) librdkafka would
    use, and the SASL extensions; None for other mechanisms."""
    if str(librdkafka.get("sasl.mechanism", librdkafka.get("sasl.mechanisms", ""))).upper() != "OAUTHBEARER":
        return None
    items = str(librdkafka.get("sasl.oauthbearer.extensions", "")).split(",")
    extensions = dict(item.split("=", 1) for item in items if "=" in item)
    config = str(librdkafka.get("sasl.oauthbearer.config", ""))
    callback: Callable[[str], tuple[str, float]]
    if callable(librdkafka.get("oauth_cb")):
        callback = librdkafka["oauth_cb"]
    elif str(librdkafka.get("sasl.oauthbearer.method", "")).lower() == "oidc":
        get = librdkafka.get
        callback = OidcClientCredentials(
            str(get("sasl.oauthbearer.token.endpoint.url")),
            get("sasl.oauthbearer.client.id") or get("sasl.oauthbearer.client.credentials.client.id"),
            get("sasl.oauthbearer.client.secret") or get("sasl.oauthbearer.client.credentials.client.secret"),
            get("sasl.oauthbearer.scope"))
    else:
        extensions.update(part[len("extension_"):].split("=", 1) for part in config.split()  # type: ignore[misc]
                          if part.startswith("extension_") and "=" in part)
        callback = unsecured_token

    def source() -> tuple[str, float]:
        token, expiry = callback(config)[:2]
        return str(token), float(expiry)

    return source, extensions
