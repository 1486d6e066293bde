"""An OpenAI-compatible HTTP server that replays a script, so litellm's real HTTP path is tested.

Run it as ``python -m robotlab.testing.llm_server --script FILE [--host H] [--port P]``; it
prints ``LISTENING http://HOST:PORT/v1`` once ready. In tests, ``serve_script(turns)`` runs it
in a thread. Endpoints: ``POST /v1/chat/completions`` (plain and streamed, with
``stream_options.include_usage``), ``POST /v1/embeddings`` (a deterministic vector of letter
counts per input, taking no turn), ``GET /v1/models``, ``GET /_requests`` (every request
body received so far, as a JSON list) and ``GET /_headers`` (their HTTP headers, likewise).
One server holds one script: every request, from any process, takes the next turn.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from robotlab.errors import InferenceError
from robotlab.testing.script import Script, Turn, load_script

__all__ = ["ScriptServer", "embedding_body", "main", "requests_seen", "serve_script"]


def _message(turn: Turn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if turn.reasoning_content is not None:
        message["reasoning_content"] = turn.reasoning_content
    if turn.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in turn.tool_calls
        ]
    return message


def _usage(turn: Turn) -> dict[str, int]:
    return {
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
    }


def completion_body(turn: Turn, model: str, number: int) -> dict[str, Any]:
    """The JSON body of a non-streamed completion."""
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": _message(turn), "finish_reason": turn.stop_reason}],
        **({"usage": _usage(turn)} if turn.reports_usage else {}),
    }


def stream_events(turn: Turn, model: str, number: int,
                  include_usage: bool) -> Iterator[dict[str, Any]]:
    """The chunks of a streamed completion, in order."""
    base = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    if turn.reasoning_content:
        yield chunk({"reasoning_content": turn.reasoning_content})
    for piece in turn.content_chunks():
        yield chunk({"content": piece})
    for i, call in enumerate(_message(turn).get("tool_calls") or []):
        pieces = turn.argument_pieces(call["function"]["arguments"])
        # As providers do: the first delta names the call, the next ones carry the arguments.
        first = {"index": i, **call, "function": {**call["function"], "arguments": pieces[0]}}
        yield chunk({"tool_calls": [first]})
        for piece in pieces[1:]:
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, turn.stop_reason)
    if include_usage and turn.reports_usage:
        yield {**base, "choices": [], "usage": _usage(turn)}


def embedding_body(body: dict[str, Any]) -> dict[str, Any]:
    """An embeddings reply: for each input, how often each letter a-z occurs in it."""
    inputs = body.get("input") or []
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    data = [{"object": "embedding", "index": i,
             "embedding": [float(str(text).lower().count(chr(97 + k))) for k in range(26)]}
            for i, text in enumerate(inputs)]
    tokens = sum(len(str(text).split()) for text in inputs)
    return {"object": "list", "data": data, "model": body.get("model", "scripted"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


class ScriptServer(ThreadingHTTPServer):
    """The HTTP server plus the script it replays and the requests it has seen."""

    daemon_threads = True

    def __init__(self, script: Script, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self._connections: set[socket.socket] = set()

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        with self.lock:
            self._connections.add(connection)
        return connection, address

    def shutdown_request(self, request: Any) -> None:
        with self.lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End every open connection: a client's pool keeps its connections open, and each
        one's thread would wait on it for the next request for as long as the client lives."""
        with self.lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    @property
    def url(self) -> str:
        """The base URL to give as ``api_base``."""
        host, port = self.socket.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def record(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> int:
        with self.lock:
            self.requests.append(body)
            self.headers.append(dict(headers or {}))
            return len(self.requests)


class _Handler(BaseHTTPRequestHandler):
    server: ScriptServer
    protocol_version = "HTTP/1.1"
    # Replies are written in pieces; without TCP_NODELAY the client's delayed ACK adds ~40 ms.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read requests from ``/_requests`` instead."""

    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list",
                                  "data": [{"id": "scripted", "object": "model"}]})
        elif self.path == "/_requests":
            with self.server.lock:
                self._send_json(200, list(self.server.requests))
        elif self.path == "/_headers":
            with self.server.lock:
                self._send_json(200, list(self.server.headers))
        else:
            self._send_json(404, {"error": {"message": f"no such path {self.path}"}})

    def do_POST(self) -> None:
        path = self.path.rstrip("/")
        if not path.endswith(("/chat/completions", "/embeddings")):
            self._send_json(404, {"error": {"message": f"no such path {self.path}"}})
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        number = self.server.record(body, {k.lower(): v for k, v in self.headers.items()})
        if path.endswith("/embeddings"):
            self._send_json(200, embedding_body(body))
            return
        try:
            turn = self.server.script.next_turn()
        except InferenceError as exc:
            # 410 Gone, not a 5xx: a used-up script never comes back, so clients must not retry it.
            self._send_json(410, {"error": {"message": str(exc), "type": "script_exhausted"}})
            return
        if turn.delay:
            time.sleep(turn.delay)
        if turn.is_error:
            self._send_json(turn.error_status or 500,
                            {"error": {"message": turn.error_message, "type": "scripted"}})
        elif body.get("stream") and turn.empty_stream:
            self._stream(iter(()))
        elif body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = stream_events(turn, body.get("model", "scripted"), number, include_usage)
            self._stream(events, turn.chunk_delay)
        else:
            self._send_json(200, completion_body(turn, body.get("model", "scripted"), number))

    def _stream(self, events: Iterator[dict[str, Any]], pause: float = 0.0) -> None:
        """Write the events as server-sent events.

        ``pause`` seconds pass after each content or tool-call chunk.
        """
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            delta = (event.get("choices") or [{}])[0].get("delta", {})
            if pause and (delta.get("content") or delta.get("tool_calls")):
                self.wfile.flush()
                time.sleep(pause)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


@contextmanager
def serve_script(turns: Any) -> Iterator[str]:
    """Run a script server in a thread for the ``with`` block; yields its base URL."""
    server = ScriptServer(Script.of(turns))
    thread = threading.Thread(target=server.serve_forever, name="llm-script-server", daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.close_connections()
        server.server_close()
        thread.join(timeout=5)


def requests_seen(url: str, what: str = "requests") -> list[dict[str, Any]]:
    """The request bodies (or, with ``what="headers"``, the HTTP headers, lowercased) a script
    server has received (``url`` as given to ``api_base``)."""
    root = url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/_{what}", timeout=10) as response:
        return json.loads(response.read())


def main(argv: list[str] | None = None) -> int:
    """Command line entry point: serve a script file until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m robotlab.testing.llm_server")
    parser.add_argument("--script", required=True, help="YAML or JSON file with the turns")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ScriptServer(Script(load_script(args.script)), args.host, args.port)
    print(f"LISTENING {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
