"""Who may read and change what through the REST API, applied to the whole app before any route is
matched, so an endpoint added later cannot escape it.

* Without basic authentication, reads (``GET``, ``HEAD``, ``OPTIONS``: statuses, configs with secrets
  masked, ``/metrics``, ``/ui``, health) are open, and every other request changes state: it is refused
  (403) unless the operator sets ``rest.mutations.allow.unauthenticated=true`` (trusted networks only).
* With basic authentication (:mod:`connect_runtime.rest.basic_auth`), every request needs valid
  credentials, as with Kafka's ``BasicAuthSecurityRestExtension``, except ``GET /health`` (liveness probes
  carry none); ``rest.reads.allow.unauthenticated=true`` opens reads again.
* The internal endpoints between workers (``POST .../connectors/<c>/tasks``, ``PUT .../connectors/<c>/fence``)
  carry the session-key signature instead and are checked by their handlers (Kafka's ``JaasBasicAuthFilter``
  exempts them the same way). Followers forward the caller's ``Authorization`` header to the leader
  (:mod:`connect_runtime.rest.forwarding`), which checks it again.

Refusals use Connect's error body: 401 with ``WWW-Authenticate: Basic`` when credentials are missing
or wrong, 403 when state changes are disabled altogether (no credentials could help). Bodies are then
limited in size and type (:mod:`connect_runtime.rest.request_limits`).
"""

from __future__ import annotations

import logging
import re
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from connect_runtime.api import path_allowlist
from connect_runtime.api import rest_config as rc
from connect_runtime.api.errors import ConfigError
from connect_runtime.rest.basic_auth import BASIC_AUTH_EXTENSION, BasicAuthenticator, jaas_file_location
from connect_runtime.rest.handling import raw_path
from connect_runtime.rest.request_limits import BodyGuard
from connect_runtime.rest.response_headers import (
    RESPONSE_HTTP_HEADERS_CONFIG,
    HeaderAction,
    ResponseHeaders,
    parse_header_config,
)
from connect_runtime.rest.responses import error_response
from connect_runtime.rest.tls import client_ssl_context, server_ssl_context

logger = logging.getLogger(__name__)

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
REALM = "Kafka Connect"
UNAUTHORIZED_MESSAGE = "Authentication required: state-changing requests need HTTP basic credentials"
READ_UNAUTHORIZED_MESSAGE = ("Authentication required: with basic authentication configured every request "
                             f"but GET /health needs credentials (reads can be opened with "
                             f"{rc.REST_READS_ALLOW_UNAUTHENTICATED}=true)")
#: The one public path open without credentials under basic auth: liveness probes carry none.
HEALTH_PATH = "/health"
BAD_CREDENTIALS_MESSAGE = "User cannot access the resource."  # Kafka's JaasBasicAuthFilter's words
DISABLED_MESSAGE = (f"State-changing REST requests are disabled: configure basic authentication "
                    f"({rc.REST_EXTENSION_CLASSES}={BASIC_AUTH_EXTENSION}) or, on a trusted network only, "
                    f"set {rc.REST_MUTATIONS_ALLOW_UNAUTHENTICATED}=true")
#: Jetty's CrossOriginFilter defaults, which Connect inherits.
DEFAULT_CORS_METHODS = ("GET", "POST", "HEAD")
_CORS_HEADERS = ("X-Requested-With", "Content-Type", "Accept", "Origin", "Authorization")
#: The internal endpoints (KIP-507/KIP-710), at the root or under a flow's namespace.
_INTERNAL = (("POST", re.compile(r"(^|/)connectors/[^/]+/tasks/?$")),
             ("PUT", re.compile(r"(^|/)connectors/[^/]+/fence/?$")))


def is_internal_request(method: str, path: str) -> bool:
    """Whether ``method path`` is a signed worker-to-worker request (exempt from basic auth)."""
    return any(method == m and pattern.search(path) for m, pattern in _INTERNAL)


def _is_internal_scope(scope: Scope) -> bool:
    return is_internal_request(str(scope.get("method", "GET")).upper(), raw_path(scope))


@dataclass(frozen=True)
class RestSecurity:
    """How the REST app treats callers. The constructor's defaults are open (tests, embedding);
    :meth:`from_props` gives what the commands run: state changes refused unless configured."""

    authenticator: BasicAuthenticator | None = None
    allow_unauthenticated_mutations: bool = True
    #: Providers REST-submitted connector configs may use; None: any (no restriction).
    provider_allowlist: frozenset[str] | None = None
    #: Files REST-submitted connector configs may name (``rest.allowed.paths``); None: any (no restriction).
    path_policy: path_allowlist.PathPolicy | None = None
    cors_origins: tuple[str, ...] = ()
    cors_methods: tuple[str, ...] = DEFAULT_CORS_METHODS
    #: Server side of an ``https://`` listener; None for http.
    server_ssl: ssl.SSLContext | None = None
    #: What this worker trusts when it forwards to another worker's https listener.
    client_ssl: ssl.SSLContext | None = field(default=None, repr=False)
    #: ``response.http.headers.config``: headers added to every response.
    response_headers: tuple[HeaderAction, ...] = ()
    #: With basic auth: whether reads need no credentials (``rest.reads.allow.unauthenticated``).
    allow_unauthenticated_reads: bool = False
    #: Body limits (``rest.request.max.bytes``, ``rest.internal.request.max.bytes``).
    request_max_bytes: int = rc.DEFAULT_REQUEST_MAX_BYTES
    internal_request_max_bytes: int = rc.DEFAULT_INTERNAL_REQUEST_MAX_BYTES

    @classmethod
    def from_props(cls, props: Mapping[str, str], *, https: bool,
                   environ: Mapping[str, str] | None = None) -> RestSecurity:
        """The security of a worker or MM2 node from its properties; ConfigError naming the key."""
        values = rc.REST_SECURITY_CONFIG_DEF.parse(props)
        authenticator = None
        for extension in values[rc.REST_EXTENSION_CLASSES]:
            if extension != BASIC_AUTH_EXTENSION:
                raise ConfigError(f"Invalid value {extension!r} for configuration {rc.REST_EXTENSION_CLASSES}: "
                                  f"only {BASIC_AUTH_EXTENSION} is supported (REST extensions are Java classes)",
                                  rc.REST_EXTENSION_CLASSES)
            location = jaas_file_location(props, environ)
            if location is None:
                raise ConfigError(f"{rc.REST_EXTENSION_CLASSES} names the basic auth extension but no JAAS file "
                                  f"is given: set {rc.REST_BASIC_AUTH_JAAS_CONFIG}=/path/connect-jaas.conf (or "
                                  f"-Djava.security.auth.login.config in KAFKA_OPTS)", rc.REST_EXTENSION_CLASSES)
            authenticator = BasicAuthenticator.from_jaas(location)
        origins = tuple(o.strip() for o in values[rc.ACCESS_CONTROL_ALLOW_ORIGIN].split(",") if o.strip())
        methods = tuple(m.strip().upper() for m in values[rc.ACCESS_CONTROL_ALLOW_METHODS].split(",")
                        if m.strip()) or DEFAULT_CORS_METHODS
        server = client = None
        if https:
            server = server_ssl_context(props)
            client = client_ssl_context(props)
        return cls(authenticator=authenticator,
                   allow_unauthenticated_mutations=values[rc.REST_MUTATIONS_ALLOW_UNAUTHENTICATED],
                   provider_allowlist=frozenset(values[rc.REST_CONFIG_PROVIDERS_ALLOWLIST]),
                   path_policy=path_allowlist.operator_policy(props, values[path_allowlist.REST_ALLOWED_PATHS]),
                   cors_origins=origins, cors_methods=methods, server_ssl=server, client_ssl=client,
                   response_headers=parse_header_config(props.get(RESPONSE_HTTP_HEADERS_CONFIG)),
                   allow_unauthenticated_reads=values[rc.REST_READS_ALLOW_UNAUTHENTICATED],
                   request_max_bytes=values[rc.REST_REQUEST_MAX_BYTES],
                   internal_request_max_bytes=values[rc.REST_INTERNAL_REQUEST_MAX_BYTES])

    def describe(self) -> str:
        """One line for the start-up log: how state changes are guarded, and which files configs may name."""
        files = f"; {self.path_policy.describe()}" if self.path_policy is not None else ""
        if self.authenticator is not None:
            what = "state changes" if self.allow_unauthenticated_reads else "every request but GET /health"
            return f"{what} need basic auth ({self.authenticator.credentials_file}){files}"
        if self.allow_unauthenticated_mutations:
            return f"state changes open to any caller (rest.mutations.allow.unauthenticated=true){files}"
        return f"state changes disabled (no basic auth configured){files}"

    def middleware(self) -> list[Middleware]:
        """Response headers (outermost: every answer gets them), CORS (so preflights are answered), the
        guard, then the body limit (an unauthenticated caller is refused before any byte is read)."""
        out = []
        if self.response_headers:
            out.append(Middleware(ResponseHeaders, actions=self.response_headers))
        if self.cors_origins:
            out.append(Middleware(CORSMiddleware, allow_origins=list(self.cors_origins),
                                  allow_methods=list(self.cors_methods), allow_headers=list(_CORS_HEADERS)))
        out.append(Middleware(MutationGuard, security=self))
        out.append(Middleware(BodyGuard, public_max_bytes=self.request_max_bytes,
                              internal_max_bytes=self.internal_request_max_bytes, is_internal=_is_internal_scope))
        return out


class MutationGuard:
    """Refuses unauthenticated state changes before routing (see the module docstring)."""

    def __init__(self, app: ASGIApp, security: RestSecurity) -> None:
        self.app = app
        self.security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        response = self._refusal(scope)
        await response(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        method, path = str(scope.get("method", "GET")).upper(), raw_path(scope)
        if is_internal_request(method, path):
            return True
        security = self.security
        if method in SAFE_METHODS and (security.authenticator is None or security.allow_unauthenticated_reads
                                       or (method in ("GET", "HEAD") and path == HEALTH_PATH)):
            return True
        if security.authenticator is not None:
            return security.authenticator.authenticate(_header(scope, b"authorization")) is not None
        return security.allow_unauthenticated_mutations

    def _refusal(self, scope: Scope) -> Response:
        method, path = scope.get("method"), raw_path(scope)
        if self.security.authenticator is None:
            logger.info("Refused %s %s: state changes are disabled", method, path)
            return error_response(403, DISABLED_MESSAGE)
        given = _header(scope, b"authorization") is not None
        logger.info("Refused %s %s: %s", method, path, "bad credentials" if given else "no credentials")
        missing = READ_UNAUTHORIZED_MESSAGE if str(method).upper() in SAFE_METHODS else UNAUTHORIZED_MESSAGE
        response = error_response(401, BAD_CREDENTIALS_MESSAGE if given else missing)
        response.headers["WWW-Authenticate"] = f'Basic realm="{REALM}", charset="UTF-8"'
        return response


def _header(scope: Scope, name: bytes) -> str | None:
    headers: Sequence[tuple[bytes, bytes]] = scope.get("headers") or ()
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None
