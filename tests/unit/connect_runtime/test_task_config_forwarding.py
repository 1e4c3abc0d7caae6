"""TaskConfigForwarder: signed sends on one thread through one reused HTTP client; failures reported."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading

import httpx

from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.storage.config_records import SessionKey

KEY = SessionKey(b"k" * 32, "HmacSHA256", 1)


def test_sends_are_signed_and_share_one_client_and_one_thread() -> None:
    requests: list[httpx.Request] = []
    threads: set[str] = set()
    answered = threading.Semaphore(0)

    def handle(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        threads.add(threading.current_thread().name)
        answered.release()
        return httpx.Response(204)

    client = httpx.Client(transport=httpx.MockTransport(handle))
    forwarder = TaskConfigForwarder(5.0, name="fwd", client=client)
    failures: list[str] = []
    for i in range(3):
        forwarder.forward("http://leader:8083/A/B", "mm2 source", [{"task": str(i)}], KEY,
                          lambda: failures.append("failed"))
    assert all(answered.acquire(timeout=5.0) for _ in range(3))
    forwarder.close()
    assert forwarder._thread is not None
    forwarder._thread.join(5.0)
    assert len(requests) == 3 and failures == [] and threads == {"fwd"}
    assert [r.content for r in requests] == [b'[{"task":"0"}]', b'[{"task":"1"}]', b'[{"task":"2"}]']
    first = requests[0]
    assert str(first.url) == "http://leader:8083/A/B/connectors/mm2%20source/tasks?forward=true"
    expected = base64.b64encode(hmac.new(KEY.key, first.content, hashlib.sha256).digest()).decode()
    assert first.headers["X-Connect-Authorization"] == expected
    assert first.headers["X-Connect-Request-Signature-Algorithm"] == "HmacSHA256"
    assert client.is_closed, "the forwarding thread closes its client when the forwarder closes"


def test_a_refused_or_unreachable_leader_is_reported_for_a_retry() -> None:
    answers = iter([httpx.Response(403), httpx.ConnectError("refused")])

    def handle(request: httpx.Request) -> httpx.Response:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    forwarder = TaskConfigForwarder(5.0, client=httpx.Client(transport=httpx.MockTransport(handle)))
    failed = threading.Semaphore(0)
    forwarder.forward("http://leader:8083", "c", [], KEY, failed.release)
    forwarder.forward("http://leader:8083", "c", [], KEY, failed.release)
    assert failed.acquire(timeout=5.0) and failed.acquire(timeout=5.0)
    forwarder.close()


def test_nothing_is_sent_after_close() -> None:
    forwarder = TaskConfigForwarder(5.0)
    forwarder.close()
    forwarder.forward("http://leader:8083", "c", [], KEY, lambda: None)
    assert forwarder._thread is None


def test_a_fencing_request_is_a_signed_put_with_an_empty_body_and_a_404_names_the_missing_setting() -> None:
    requests: list[httpx.Request] = []
    answers = iter([httpx.Response(204), httpx.Response(404)])

    def handle(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return next(answers)

    forwarder = TaskConfigForwarder(5.0, client=httpx.Client(transport=httpx.MockTransport(handle)))
    done: list[Exception | None] = []
    answered = threading.Semaphore(0)

    def on_done(error: Exception | None) -> None:
        done.append(error)
        answered.release()

    forwarder.fence("http://leader:8083/A/B", "mm2 source", KEY, on_done)
    forwarder.fence("http://leader:8083/A/B", "mm2 source", KEY, on_done)
    assert answered.acquire(timeout=5.0) and answered.acquire(timeout=5.0)
    forwarder.close()
    first = requests[0]
    assert first.method == "PUT" and first.content == b""
    assert str(first.url) == "http://leader:8083/A/B/connectors/mm2%20source/fence?forward=true"
    expected = base64.b64encode(hmac.new(KEY.key, b"", hashlib.sha256).digest()).decode()
    assert first.headers["X-Connect-Authorization"] == expected
    assert done[0] is None
    assert "dedicated.mode.enable.internal.rest" in str(done[1])
