"""KIP-507 request signing: both sides of the one module, and Java's bytes for a known key and body."""

from __future__ import annotations

import base64
import binascii

import pytest

from connect_runtime.api.errors import BadRequestError, ForbiddenError, ServiceUnavailableError
from connect_runtime.runtime.request_signing import (
    DEFAULT_SIGNATURE_ALGORITHM,
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    signature_headers,
    verify_request,
)

KEY = b"session-key-0123456789abcdef0123"
BODY = b'[{"task.class":"T","topic":"a"}]'
ALLOWED = (DEFAULT_SIGNATURE_ALGORITHM,)


def test_signed_body_verifies() -> None:
    headers = signature_headers(KEY, "HmacSHA256", BODY)
    assert set(headers) == {SIGNATURE_HEADER, SIGNATURE_ALGORITHM_HEADER}
    assert headers[SIGNATURE_ALGORITHM_HEADER] == "HmacSHA256"
    verify_request(headers, BODY, KEY, ALLOWED)  # does not raise


@pytest.mark.parametrize("algorithm", ["HmacSHA1", "HmacSHA224", "HmacSHA384", "HmacSHA512", "HmacMD5"])
def test_every_java_algorithm_round_trips_when_allowed(algorithm: str) -> None:
    verify_request(signature_headers(KEY, algorithm, BODY), BODY, KEY, (algorithm,))


def test_tampered_body_is_forbidden() -> None:
    headers = signature_headers(KEY, "HmacSHA256", BODY)
    with pytest.raises(ForbiddenError, match=r"^Internal request contained invalid signature\.$"):
        verify_request(headers, BODY + b" ", KEY, ALLOWED)


def test_wrong_key_is_forbidden() -> None:
    headers = signature_headers(b"another key", "HmacSHA256", BODY)
    with pytest.raises(ForbiddenError, match="invalid signature"):
        verify_request(headers, BODY, KEY, ALLOWED)


def test_unknown_algorithm_is_a_bad_request_on_both_sides() -> None:
    with pytest.raises(BadRequestError, match=r"^Algorithm HmacSHA999 not available$"):
        signature_headers(KEY, "HmacSHA999", BODY)
    headers = {**signature_headers(KEY, "HmacSHA256", BODY), SIGNATURE_ALGORITHM_HEADER: "HmacSHA999"}
    with pytest.raises(BadRequestError, match=r"^Algorithm HmacSHA999 not available$"):
        verify_request(headers, BODY, KEY, ALLOWED)


def test_known_but_not_accepted_algorithm_is_a_bad_request() -> None:
    headers = signature_headers(KEY, "HmacSHA512", BODY)
    with pytest.raises(BadRequestError, match=r"does not support the 'HmacSHA512' key signing algorithm .*"
                                              r"configured to use: \['HmacSHA256'\]\.$"):
        verify_request(headers, BODY, KEY, ALLOWED)


@pytest.mark.parametrize("headers", [{}, {SIGNATURE_ALGORITHM_HEADER: "HmacSHA256"}, {SIGNATURE_HEADER: "AAAA"}])
def test_missing_headers_are_a_bad_request(headers: dict[str, str]) -> None:
    with pytest.raises(BadRequestError, match=r"^Internal request missing required signature$"):
        verify_request(headers, BODY, KEY, ALLOWED)


def test_signature_that_is_not_base64_is_a_bad_request() -> None:
    headers = {**signature_headers(KEY, "HmacSHA256", BODY), SIGNATURE_HEADER: "%%%not-base64"}
    with pytest.raises(BadRequestError, match="not valid base64"):
        verify_request(headers, BODY, KEY, ALLOWED)


def test_no_session_key_yet_is_unavailable_after_the_header_checks() -> None:
    with pytest.raises(ServiceUnavailableError, match="has not been able to read a session key"):
        verify_request(signature_headers(KEY, "HmacSHA256", BODY), BODY, None, ALLOWED)
    with pytest.raises(BadRequestError):  # a malformed request is refused before the key is needed
        verify_request({}, BODY, None, ALLOWED)


@pytest.mark.parametrize(("algorithm", "hex_mac"), [
    # RFC 4231 test case 2 and RFC 2202 test case 2: what Java's Mac.doFinal returns for this key and body;
    # InternalRequestSignature sends Base64.getEncoder() of it.
    ("HmacSHA256", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    ("HmacSHA1", "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
])
def test_signature_is_what_java_computes(algorithm: str, hex_mac: str) -> None:
    headers = signature_headers(b"Jefe", algorithm, b"what do ya want for nothing?")
    assert headers[SIGNATURE_HEADER] == base64.b64encode(binascii.unhexlify(hex_mac)).decode("ascii")

