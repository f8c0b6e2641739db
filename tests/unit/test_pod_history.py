"""PodHistory stops its watch when the check is over, not when the API server next ends it (issue 22): against a
fake API server that keeps the watch open, events() returns the events seen and the watch thread has ended."""

from __future__ import annotations

import json
import select
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client

from wincon.checks.pods import PodHistory

HOLD = 10.0
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "ns", "resourceVersion": "6", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "main", "image": "agnhost"}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
}


class FakeApiServer(BaseHTTPRequestHandler):
    """A pod list, and a pod watch that sends one event and then holds the stream open for up to HOLD seconds, as
    an API server holds a watch until its timeoutSeconds; it records who ended each watch."""

    protocol_version = "HTTP/1.1"  # chunked, as the API server streams a watch
    ended: list[str] = []
    recorded = threading.Event()  # set once a watch's end is recorded (the handler runs in a thread of its own)

    def do_GET(self) -> None:  # noqa: N802  # the name http.server calls
        if "watch=" not in self.path:
            body = json.dumps(
                {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}, "items": []}
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        line = (json.dumps({"type": "ADDED", "object": POD}) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.flush()
        readable, _, _ = select.select([self.connection], [], [], HOLD)  # the client's end of the stream, or none
        self.ended.append("client" if readable else "server")
        self.recorded.set()
        self.close_connection = True
        if not readable:
            self.wfile.write(b"0\r\n\r\n")  # the server ends the watch, as at its timeoutSeconds

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  # http.server's signature
        pass


@pytest.fixture
def api_client() -> Iterator[client.ApiClient]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApiServer)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield client.ApiClient(configuration)
    finally:
        server.shutdown()
        server.server_close()


def test_events_ends_the_watch_itself(api_client: client.ApiClient) -> None:
    FakeApiServer.ended.clear()
    FakeApiServer.recorded.clear()
    history = PodHistory(api_client, "ns", {"app": "web"}, window=30)
    with history:
        events = history.events(until=lambda seen: any(ready for _, _, ready in seen))
        assert not history._thread.is_alive(), "the watch still runs after events() returned"
    assert events == [("ADDED", "web-0", True)]
    # Before the fix, closing the response did not end the read blocked in the socket: events() waited until the
    # server ended the watch (here after 10 s; on the local cluster at the 20 s window, 17.7 s of a check). The
    # server's thread records the client's close as it sees it: awaited for less than HOLD, so a watch the client
    # left open (recorded as "server" only after HOLD) still fails here.
    FakeApiServer.recorded.wait(HOLD / 2)
    assert FakeApiServer.ended == ["client"], f"watches ended by: {FakeApiServer.ended}"
