"""DSPy LMs for inference servers that speak the OpenAI chat API: SGLang, its router, vLLM,
llama.cpp's server...

Every request is the body `backends/chat_format.py` builds for all backends: `max_tokens` (not the
`max_completion_tokens` some servers ignore), temperature, and `response_format` of type
`json_schema` with the signature's output schema, which SGLang enforces with its grammar
backend. Usage comes back in the response and is recorded by DSPy. An SGLang router
(`sglang-router`) speaks the same API, so `sglang_lm(ROUTER_URL, model)` works unchanged.
"""

from __future__ import annotations

from typing import Any

import dspy

from serc_dspy.backends.chat import (
    DEFAULT_TIMEOUT_S,
    AsyncHttpChatEngine,
    BackendError,
    HttpChatEngine,
)
from serc_dspy.backends.chat_format import API_KEY_ENV, DEFAULT_MAX_TOKENS

SERVER_KINDS = ("sglang", "openai")

__all__ = ["API_KEY_ENV", "openai_compatible_lm", "server_lm", "sglang_lm"]


def server_lm(
    kind: str,
    url: str,
    model: str,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 0.0,
    timeout: float = DEFAULT_TIMEOUT_S,
    cache: bool = False,
    max_in_flight: int | None = None,
    rate: float | None = None,
    **lm_options: Any,
) -> dspy.LM:
    """An LM for a running OpenAI-compatible server at `url` (ending in /v1) serving `model`.

    The API key, if the server needs one, is read from `SERC_LM_API_KEY` at call time and is
    never written to a trace or saved state. `max_in_flight` caps concurrent requests and
    `rate` the requests per second (a token bucket); HTTP 429 and 503 are retried with backoff.
    """
    if kind not in SERVER_KINDS:
        raise BackendError(f"unknown server kind {kind!r}; known: {', '.join(SERVER_KINDS)}")
    engine = HttpChatEngine(kind, url, model, timeout=timeout, max_in_flight=max_in_flight,
                            rate=rate)
    lm_options.setdefault("num_retries", 0)  # the engine retries 429/503 itself, once each
    return dspy.LM(
        f"{kind}/{model}",
        engine=engine,
        async_engine=AsyncHttpChatEngine(engine),
        max_tokens=max_tokens,
        temperature=temperature,
        cache=cache,
        **lm_options,
    )


def sglang_lm(url: str, model: str, **options: Any) -> dspy.LM:
    """An LM for an SGLang server or router, e.g.
    `sglang_lm("http://127.0.0.1:30000/v1", "meta-llama/Meta-Llama-3-8B-Instruct")`."""
    return server_lm("sglang", url, model, **options)


def openai_compatible_lm(url: str, model: str, **options: Any) -> dspy.LM:
    """An LM for any OpenAI-compatible server that accepts `json_schema` (vLLM, llama.cpp, ...)."""
    return server_lm("openai", url, model, **options)
