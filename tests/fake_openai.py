"""A minimal OpenAI-compatible chat server on loopback for tests that need HTTP but no model.

It answers each chat completion with the smallest JSON instance of the requested
`json_schema` (first enum value, empty strings become "x", empty lists), which every DSPy
signature parses. Requests are kept for assertions.
"""

import http.server
import json
import threading
import time


def minimal_instance(schema: dict, defs: dict | None = None):
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return minimal_instance(defs[schema["$ref"].split("/")[-1]], defs)
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return minimal_instance(schema[key][0], defs)
    kind = schema.get("type")
    if kind == "object":
        return {name: minimal_instance(sub, defs)
                for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return []
    if kind == "integer":
        return 0
    if kind == "number":
        return 0.0
    if kind == "boolean":
        return False
    return "x"


class FakeOpenAIServer:
    """`busy` answers the first N requests with HTTP 429 (Retry-After: 0); `delay` holds each
    request that long, and `peak` records the most requests ever in flight at once."""

    def __init__(self, busy: int = 0, delay: float = 0.0):
        self.requests: list[dict] = []
        self.busy, self.delay = busy, delay
        self.now = self.peak = 0
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self._send({"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    if server.busy > 0:
                        server.busy -= 1
                        self.send_response(429)
                        self.send_header("Retry-After", "0")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    server.now += 1
                    server.peak = max(server.peak, server.now)
                # A request stops counting as in flight before its reply is written: once the
                # client has the reply it may send the next request, possibly before this
                # thread runs again (a busy machine), which would count one request twice.
                try:
                    time.sleep(server.delay)
                    reply = self._answer(body)
                finally:
                    with server.lock:
                        server.now -= 1
                self._send(reply)

            def _answer(self, body):
                schema = body["response_format"]["json_schema"]["schema"]
                content = json.dumps(minimal_instance(schema))
                return {"id": "c", "object": "chat.completion", "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}],
                        "usage": {"prompt_tokens": 7, "completion_tokens": 3,
                                  "total_tokens": 10}}

            def _send(self, payload):
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
