"""DSPy LMs for inference servers that speak the OpenAI chat API: SGLang, vLLM, llama.cpp...

Each server kind is registered once as a DSPy provider with the matching compatibility preset
and a declaration that it supports JSON-schema outputs. That makes `dspy.JSONAdapter` send
`response_format={"type": "json_schema", ...}` with each signature's output schema (SGLang
enforces it with its grammar backend), and `max_tokens` rather than the `max_completion_tokens`
field some servers ignore. Usage comes back in the response and is recorded by DSPy.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import dspy

from serc_dspy.backends.embedded import BackendError

# kind -> DSPy compatibility preset. Both presets send max_tokens and json_schema.
SERVER_KINDS = {"sglang": "sglang", "openai": "vllm"}
API_KEY_ENV = "SERC_LM_API_KEY"
_registered: set[str] = set()
_lock = threading.Lock()


def _provider(kind: str) -> str:
    if kind not in SERVER_KINDS:
        raise BackendError(f"unknown server kind {kind!r}; known: {', '.join(SERVER_KINDS)}")
    name = f"serc_{kind}"
    with _lock:
        if name not in _registered:
            from dspy.lm15 import AccessPolicy, ModelSupport, OpenAIChatCompat, ProviderDefinition

            definition = ProviderDefinition.chat(
                AccessPolicy(provider=name, base_url="http://127.0.0.1:30000/v1"),
                compat=OpenAIChatCompat.preset(SERVER_KINDS[kind]),
            )
            dspy.lm15.register_provider(definition, supports=ModelSupport(response_schema=True),
                                        replace=True)
            _registered.add(name)
    return name


def server_lm(
    kind: str,
    url: str,
    model: str,
    *,
    max_tokens: int = 512,
    temperature: float = 0.0,
    cache: bool = False,
    **lm_options: Any,
) -> dspy.LM:
    """An LM for a running OpenAI-compatible server at `url` (ending in /v1) serving `model`.

    The API key is read from the environment (`SERC_LM_API_KEY`); local servers usually need
    none, so a placeholder is sent when it is unset. It is never written to a trace.
    """
    if not url.startswith(("http://", "https://")):
        raise BackendError(f"server URL must start with http:// or https://, got {url!r}")
    if not model:
        raise BackendError("a server LM needs a model name (the one the server serves)")
    provider = _provider(kind)
    return dspy.LM(
        f"{provider}/{model}",
        api_base=url.rstrip("/"),
        api_key=os.environ.get(API_KEY_ENV) or "EMPTY",
        max_tokens=max_tokens,
        temperature=temperature,
        cache=cache,
        **lm_options,
    )


def sglang_lm(url: str, model: str, **options: Any) -> dspy.LM:
    """An LM for an SGLang server (`python -m sglang.launch_server ...`), e.g.
    `sglang_lm("http://127.0.0.1:30000/v1", "meta-llama/Meta-Llama-3-8B-Instruct")`."""
    return server_lm("sglang", url, model, **options)


def openai_compatible_lm(url: str, model: str, **options: Any) -> dspy.LM:
    """An LM for any OpenAI-compatible server that accepts `json_schema` (vLLM, TGI, ...)."""
    return server_lm("openai", url, model, **options)
