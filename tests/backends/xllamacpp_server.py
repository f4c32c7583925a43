"""llama.cpp's own OpenAI-compatible server (xllamacpp) on a loopback port, standing in for
SGLang in tests: it accepts `response_format={"type": "json_schema", ...}` natively.

Usage: python xllamacpp_server.py --model PATH.gguf --alias NAME --port N
"""

import argparse
import threading


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", default="smollm2")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.n_ctx = 8192
    params.n_parallel = args.parallel
    params.kv_unified = True
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.verbosity = -1
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    threading.Event().wait()  # serve until the launcher stops the process group


if __name__ == "__main__":
    main()
