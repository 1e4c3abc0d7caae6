"""HTTP clients for requests from one worker to another: a new connection per request, closed after it.

Requests between workers are task configs and fencing requests to the leader (KIP-507/KIP-710) and REST calls
forwarded to the leader or to a connector's owner: rare, so a connection each costs nothing that matters.
Why not keep one open: a worker's REST server waits, when it stops, for the connections open to it. Java's
(Jetty, with Connect's 60 s graceful stop timeout) waited for a connection a node of ours had kept alive, and
a Java MirrorMaker leader that had received task configs from ours hung 60 s on SIGTERM instead of stopping.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Imported when the first request is sent: httpx drags click, rich and pygments in (~100 ms at start-up)
    # and most workers never send one.
    import httpx


def worker_http_client(verify: ssl.SSLContext | None = None, timeout_s: float | None = None) -> httpx.Client:
    """A client that closes each connection once its response is read. ``verify``: the trust (and client
    certificate) for other workers' https listeners, None for the system's; ``timeout_s``: per request, None
    for httpx's default."""
    import httpx

    return httpx.Client(verify=verify if verify is not None else True, follow_redirects=False, trust_env=False,
                        limits=httpx.Limits(max_keepalive_connections=0),
                        timeout=httpx.Timeout(timeout_s) if timeout_s is not None else httpx.Timeout(5.0))
