"""Fault injection for the chaos suite: LMs and retrievers that fail the way real ones do."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path

from scripted import CountingRetriever, scripted_lm

sys.path.insert(0, str(Path(__file__).parents[1] / "programs"))
from test_serc import handlers  # noqa: E402

QUESTION = "Tell me a bio of Marie Curie."


def dead_lm():
    """Every call fails as an unreachable server does."""
    def refuse(inputs):
        raise ConnectionRefusedError("[Errno 111] Connection refused")

    return scripted_lm({name: refuse for name in handlers()})


class EmptyRetriever(CountingRetriever):
    """A search backend that answers, but with nothing (an 'empty' outage)."""

    def __init__(self):
        super().__init__()
        self.empty = True

    def __call__(self, query, k):
        self.queries.append(query)
        return [] if self.empty else self.inner(query, k)


class EchoingAuthServer:
    """An OpenAI-compatible server on loopback that fails every call with a 500 whose body
    echoes the request's Authorization header (some proxies do)."""

    def __init__(self):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.dumps({"error": {"message": "upstream failed for "
                                             f"Authorization: {self.headers.get('Authorization')}"
                                             }}).encode()
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        server.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
