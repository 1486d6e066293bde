"""A recording HTTP proxy in front of an OpenAI-compatible server, for bench/robot_to_real.py.

Every request is forwarded as it came and answered with the server's whole reply (a streamed
reply is passed on in one piece); each exchange is appended to a JSONL file: the request
body, the reply body, the status and the seconds it took. Both agents of the benchmark talk to
the model through one of these, so their tokens are counted the same way, from the server's
own ``usage``, and the exact texts the model wrote are kept for the parsing tests.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class InFlight:
    """How many requests the proxy is forwarding; ``drain`` waits until none is."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        with self.changed:
            self.count += 1
        try:
            yield
        finally:
            with self.changed:
                self.count -= 1
                self.changed.notify_all()

    def drain(self, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count == 0, timeout)


def _handler(upstream: str, record: Path, lock: threading.Lock,
             flight: InFlight) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with flight.one():
                self._forward(None)

        def do_POST(self) -> None:
            with flight.one():
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def _forward(self, body: bytes | None) -> None:
            started = time.monotonic()
            request = urllib.request.Request(upstream + self.path.removeprefix("/v1"), data=body,
                                             method=self.command,
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=900) as reply:
                    status, kind, data = reply.status, reply.headers.get(
                        "Content-Type", ""), reply.read()
            except urllib.error.HTTPError as exc:
                status, kind, data = exc.code, exc.headers.get("Content-Type", ""), exc.read()
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            # the client gave up (killed at the wall limit): the server still worked
            except OSError:
                pass
            entry = {"path": self.path, "status": status,
                     "seconds": round(time.monotonic() - started, 2), "request": _json(body),
                     "reply": _json(data)}
            with lock, record.open("a") as out:
                out.write(json.dumps(entry) + "\n")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the JSONL file is the log."""

    return Forward


def _json(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


@contextlib.contextmanager
def recording(upstream: str, record: Path, drain: float = 900.0) -> Iterator[str]:
    """Serve a proxy to ``upstream`` (``http://host:port/v1``) on a free loopback port; yields its
    ``/v1`` base URL and appends every exchange to ``record``.

    On exit it first waits (up to ``drain`` seconds) for requests still in flight: the server
    finishes a reply whose client was killed, and the next run must not queue behind it.
    """
    flight = InFlight()
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 _handler(upstream.rstrip("/"), record, threading.Lock(), flight))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        flight.drain(drain)
        server.shutdown()
        server.server_close()


def usage(record: Path) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens) over the chat completions in ``record``."""
    calls = prompt = completion = 0
    if not record.exists():
        return 0, 0, 0
    for line in record.read_text().splitlines():
        entry = json.loads(line)
        if not entry["path"].endswith("/chat/completions"):
            continue
        calls += 1
        reply = entry["reply"] if isinstance(entry["reply"], dict) else {}
        counted = reply.get("usage") or {}
        prompt += counted.get("prompt_tokens") or 0
        completion += counted.get("completion_tokens") or 0
    return calls, prompt, completion
