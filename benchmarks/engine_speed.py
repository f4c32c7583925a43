"""Print the embedded engine's speed on this machine: load time, prompt and generation tokens/s,
and how much concurrent requests overlap in its slots (continuous batching).

    python benchmarks/engine_speed.py [--model qwen1.5b|smollm2|PATH.gguf] [--parallel 4]

Figures come from llama.cpp's own per-request timings. Not part of the test run.
"""

from __future__ import annotations

import argparse
import threading
import time

from serc_dspy.backends.embedded import LlamaServerEngine, ensure_model
from serc_dspy.backends.models import MODELS

PROMPT = ("Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891 and studied at the "
          "Sorbonne. In 1903 she shared the Nobel Prize in Physics. ") * 6


def body(n: int, max_tokens: int) -> dict:
    return {"messages": [{"role": "system", "content": "You answer briefly."},
                         {"role": "user", "content": f"Request {n}. {PROMPT} Summarise."}],
            "max_tokens": max_tokens, "temperature": 0.0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="qwen1.5b")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=48)
    args = parser.parse_args()
    path = ensure_model(args.model) if args.model in MODELS else args.model
    engine = LlamaServerEngine(path, n_ctx=8192, n_parallel=args.parallel)
    started = time.monotonic()
    server = engine.server
    print(f"model {args.model}: load {time.monotonic() - started:.1f}s")
    one = server.handle_chat_completions(body(0, args.max_tokens))["timings"]
    print(f"prompt {one['prompt_per_second']:.1f} tok/s ({one['prompt_n']} tokens), "
          f"generation {one['predicted_per_second']:.1f} tok/s ({one['predicted_n']} tokens)")

    def timed(bodies, concurrent: bool) -> float:
        started = time.monotonic()
        if concurrent:
            threads = [threading.Thread(target=server.handle_chat_completions, args=(b,))
                       for b in bodies]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            for b in bodies:
                server.handle_chat_completions(b)
        return time.monotonic() - started

    n = args.parallel
    sequential = timed([body(100 + i, args.max_tokens) for i in range(n)], concurrent=False)
    concurrent = timed([body(200 + i, args.max_tokens) for i in range(n)], concurrent=True)
    print(f"{n} requests: one after another {sequential:.1f}s, concurrent {concurrent:.1f}s "
          f"({sequential / concurrent:.2f}x)")
    print(f"engine_speed prompt_tps={one['prompt_per_second']:.1f} "
          f"gen_tps={one['predicted_per_second']:.1f} overlap={sequential / concurrent:.2f}")


if __name__ == "__main__":
    main()
