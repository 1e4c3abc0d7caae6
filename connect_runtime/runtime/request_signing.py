"""KIP-507 request signing: how workers prove that an internal request comes from the cluster.

A follower sends task configs (and fencing requests) to the leader over REST; whoever can read the
config topic holds the cluster's session key, so ``base64(HMAC(session key, raw body))`` in
``X-Connect-Authorization`` (algorithm named in ``X-Connect-Request-Signature-Algorithm``, with
Java's ``Mac`` names) shows the request was not forged by a REST client. Java's
``InternalRequestSignature`` computes the same bytes, so Python and Java workers accept each other's
requests.

Both sides live here, once: the runtime signs what it forwards, the REST layer verifies what it
receives (REST may import the runtime, not the other way round). A rejected request raises the
error whose REST status Connect's ``DistributedHerder`` answers with: 400 for a missing, unknown,
malformed or unaccepted signature, 503 while no session key is known, 403 for a signature that does
not match.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from collections.abc import Mapping, Sequence

from connect_runtime.api.errors import BadRequestError, ForbiddenError, ServiceUnavailableError
from connect_runtime.storage.config_records import SessionKey

SIGNATURE_HEADER = "X-Connect-Authorization"
SIGNATURE_ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
#: Connect's default ``inter.worker.signature.algorithm`` (and the only one a worker accepts by default).
DEFAULT_SIGNATURE_ALGORITHM = "HmacSHA256"

#: Java ``Mac`` algorithm names -> hashlib digests: the algorithms a signature may name.
MAC_DIGESTS: Mapping[str, str] = {
    "HmacSHA256": "sha256", "HmacSHA1": "sha1", "HmacSHA224": "sha224", "HmacSHA384": "sha384",
    "HmacSHA512": "sha512", "HmacMD5": "md5",
}

MISSING_SIGNATURE_MESSAGE = "Internal request missing required signature"
INVALID_SIGNATURE_MESSAGE = "Internal request contained invalid signature."
NO_SESSION_KEY_MESSAGE = ("This worker is still starting up and has not been able to read a session key from "
                          "the config topic yet")


def new_session_key(now_ms: int, algorithm: str = DEFAULT_SIGNATURE_ALGORITHM) -> SessionKey:
    """A fresh 256-bit key for the leader to publish (Java's KeyGenerator default for HmacSHA256)."""
    return SessionKey(secrets.token_bytes(32), algorithm, now_ms)


def _digest(algorithm: str) -> str:
    digest = MAC_DIGESTS.get(algorithm)
    if digest is None:
        raise BadRequestError(f"Algorithm {algorithm} not available")
    return digest


def signature(key: bytes, algorithm: str, body: bytes) -> bytes:
    """The raw MAC of ``body`` (BadRequestError for an algorithm Java's ``Mac`` would not know)."""
    return hmac.new(key, body, _digest(algorithm)).digest()


def signature_headers(key: bytes, algorithm: str, body: bytes) -> dict[str, str]:
    """The two headers that sign ``body``: what a follower adds to its request to the leader."""
    encoded = base64.b64encode(signature(key, algorithm, body)).decode("ascii")
    return {SIGNATURE_HEADER: encoded, SIGNATURE_ALGORITHM_HEADER: algorithm}


def verify_request(headers: Mapping[str, str], body: bytes, key: bytes | None, allowed: Sequence[str]) -> None:
    """Return if ``body`` is signed with ``key`` by an algorithm in ``allowed``; raise otherwise.

    ``headers`` are looked up by the names above, so pass a case-insensitive mapping (HTTP headers).
    The checks run in Connect's order, so a request wrong in several ways gets Connect's answer:
    BadRequestError (missing headers, unknown algorithm, not base64, algorithm not accepted here),
    ServiceUnavailableError (no session key read yet), ForbiddenError (signature does not match).
    """
    algorithm = headers.get(SIGNATURE_ALGORITHM_HEADER)
    encoded = headers.get(SIGNATURE_HEADER)
    if algorithm is None or encoded is None:
        raise BadRequestError(MISSING_SIGNATURE_MESSAGE)
    _digest(algorithm)
    try:
        received = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequestError("Internal request signature is not valid base64") from exc
    if algorithm not in allowed:
        raise BadRequestError(f"This worker does not support the '{algorithm}' key signing algorithm used by "
                              f"other workers. This worker is currently configured to use: {list(allowed)}.")
    if key is None:
        raise ServiceUnavailableError(NO_SESSION_KEY_MESSAGE)
    if not hmac.compare_digest(signature(key, algorithm, body), received):
        raise ForbiddenError(INVALID_SIGNATURE_MESSAGE)
