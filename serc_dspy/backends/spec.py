"""One string names an LM, so every command's `--lm` (and `--stage-lm`) can choose any backend.

    qwen1.5b                       embedded Qwen2.5-Coder-1.5B-Instruct (the offline default)
    smollm2                        embedded SmolLM2-135M-Instruct (the fast test model)
    local                          the default offline model (qwen1.5b)
    local=PATH.gguf                any GGUF file, in-process with llama.cpp
    hf=DIR_OR_HUB_ID[#GGUF_FILE]   in-process transformers (hub ids must be in the local cache)
    sglang=URL#MODEL               an SGLang server or router, e.g. sglang=http://127.0.0.1:30000/v1#meta-llama/Meta-Llama-3-8B-Instruct
    sglang=URL1,URL2#MODEL         several workers without a router: least requests in flight
    openai=URL#MODEL               any OpenAI-compatible server accepting json_schema (vLLM, ...)
    PROVIDER/MODEL                 anything DSPy routes itself, e.g. openai/gpt-4o-mini (key from
                                   the provider's usual environment variable)
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import dspy

from serc_dspy.backends.chat import BackendError
from serc_dspy.backends.embedded import embedded_lm
from serc_dspy.backends.hf import transformers_lm
from serc_dspy.backends.models import DEFAULT_MODEL, MODELS
from serc_dspy.backends.servers import API_KEY_ENV, server_lm
from serc_dspy.core.errors import redact

LM_FORMS = ("accepted forms: 'qwen1.5b', 'smollm2', 'local', 'local=PATH.gguf', "
            "'hf=DIR_OR_HUB_ID[#GGUF_FILE]', 'sglang=URL#MODEL', 'openai=URL#MODEL', "
            "'PROVIDER/MODEL' (e.g. openai/gpt-4o-mini)")
DEFAULT_LM = DEFAULT_MODEL


def offline_model_name(spec: str | None) -> str | None:
    """The named offline model a spec selects (for its CPU defaults), or None."""
    spec = (spec or DEFAULT_LM).strip()
    kind, _, value = spec.partition("=")
    if spec in MODELS:
        return spec
    if spec == "local":
        return DEFAULT_MODEL
    return value if kind == "local" and value in MODELS else None


def _url_and_model(kind: str, value: str) -> tuple[str, str]:
    url, _, model = value.partition("#")
    if not url or not model:
        raise BackendError(f"'{kind}=' needs URL#MODEL, got {redact(value)!r}; {LM_FORMS}")
    parts = urlsplit(url)
    if "@" in parts.netloc:
        # a password in a URL would be shown wherever the URL is (stderr, traces, meta): the
        # key goes in the environment, read at call time and redacted everywhere
        shown = parts._replace(netloc="[redacted]@" + parts.netloc.rpartition("@")[2])
        raise BackendError(f"credentials in the --lm URL are not supported ({urlunsplit(shown)}):"
                           f" put the key in ${API_KEY_ENV} and give the URL without them")
    return url, model


def lm_from_spec(spec: str | None, *, max_tokens: int | None = None, temperature: float = 0.0,
                 progress=None, timeout: float | None = None, max_in_flight: int | None = None,
                 rate: float | None = None, **options: Any) -> dspy.LM:
    """Build a DSPy LM from a spec string (see the module docstring for the forms).

    `max_tokens=None` takes a named offline model's CPU default (else 512). `timeout` bounds
    each HTTP call of a server LM (seconds; default 120); `max_in_flight` and `rate` throttle
    a server LM (concurrent requests; requests per second).
    """
    spec = (spec or DEFAULT_LM).strip()
    kind, sep, value = spec.partition("=")
    named = offline_model_name(spec)
    if named is not None or kind == "local":
        if named is None and not value:
            raise BackendError(f"'local=' needs a GGUF path or a model name; {LM_FORMS}")
        return embedded_lm(named or value, max_tokens=max_tokens, temperature=temperature,
                           progress=progress, **options)
    settings = {"max_tokens": max_tokens or 512, "temperature": temperature, **options}
    if sep and kind == "hf" and value:
        model, _, gguf_file = value.partition("#")
        return transformers_lm(model, **({"gguf_file": gguf_file} if gguf_file else {}),
                               **settings)
    if sep and kind in ("sglang", "openai"):
        if timeout is not None:
            settings["timeout"] = timeout
        return server_lm(kind, *_url_and_model(kind, value), max_in_flight=max_in_flight,
                         rate=rate, **settings)
    if not sep and "/" in spec and " " not in spec and not spec.startswith("/"):
        return dspy.LM(spec, **settings)
    raise BackendError(f"unknown LM spec {spec!r}; {LM_FORMS}")


# The paper's settings, used for any LM that is not a named offline model.
PAPER_DEFAULTS = {"max_tokens": 512, "top_k": 8, "context_chars": 20_000, "workers": 8,
                  "queries": "lm", "evidence": "summary", "verdicts": "check",
                  "serial_stages": ()}


def run_defaults(spec: str | None) -> dict[str, Any]:
    """Settings for a run with this LM: a named offline model's CPU defaults, else the paper's.

    On 2 CPU cores prompt processing dominates, so the offline models retrieve fewer and shorter
    passages; `workers` matches the embedded engine's slots.
    """
    named = offline_model_name(spec)
    if named is None:
        return dict(PAPER_DEFAULTS)
    model = MODELS[named]
    return {**PAPER_DEFAULTS, "workers": model.n_parallel, **model.cpu_defaults}
