"""llama.cpp's OpenAI-compatible server standing in for SGLang in tests (no GPU here).

llama.cpp's server constrains output to a JSON schema when asked with
`{"type": "json_object", "schema": S}` but rejects SGLang's `{"type": "json_schema", ...}`.
This thin ASGI adapter translates the latter into the former and appends every request body
to a JSONL file, so tests can assert what SERC actually sent over HTTP.

Usage: python llamacpp_server.py --model PATH.gguf --alias NAME --port N --record FILE
"""

import argparse
import json
from pathlib import Path


class TranslateJsonSchema:
    def __init__(self, app, record: Path):
        self.app = app
        self.record = record

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/v1/chat/completions":
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        data = json.loads(body)
        with self.record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(data) + "\n")
        response_format = data.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            schema = response_format["json_schema"]["schema"]
            data["response_format"] = {"type": "json_object", "schema": schema}
        new_body = json.dumps(data).encode()
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(new_body)).encode()))
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": new_body, "more_body": False}
            return await receive()

        await self.app(dict(scope, headers=headers), replay, send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", default="smollm2")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record", required=True)
    args = parser.parse_args()

    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    app = create_app(
        server_settings=ServerSettings(host=args.host, port=args.port),
        model_settings=[ModelSettings(model=args.model, model_alias=args.alias, n_ctx=8192,
                                      verbose=False)],
    )
    uvicorn.run(TranslateJsonSchema(app, Path(args.record)), host=args.host, port=args.port,
                log_level="warning")


if __name__ == "__main__":
    main()
