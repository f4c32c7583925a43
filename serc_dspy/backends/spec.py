"""One string names an LM, so the CLI's `--lm` (and `--stage-lm`) can choose any backend.

    local                          the embedded SmolLM2-135M-Instruct (offline default)
    local=PATH.gguf                any GGUF file, in-process with llama.cpp
    hf=DIR_OR_HUB_ID[#GGUF_FILE]   in-process transformers (hub ids must be in the local cache)
    sglang=URL#MODEL               an SGLang server, e.g. sglang=http://127.0.0.1:30000/v1#meta-llama/Meta-Llama-3-8B-Instruct
    openai=URL#MODEL               any OpenAI-compatible server accepting json_schema (vLLM, ...)
    PROVIDER/MODEL                 anything DSPy routes itself, e.g. openai/gpt-4o-mini (key from
                                   the provider's usual environment variable)
"""

from __future__ import annotations

from typing import Any

import dspy

from serc_dspy.backends.embedded import BackendError, embedded_lm

LM_FORMS = ("accepted forms: 'local', 'local=PATH.gguf', 'hf=DIR_OR_HUB_ID[#GGUF_FILE]', "
            "'sglang=URL#MODEL', 'openai=URL#MODEL', 'PROVIDER/MODEL' (e.g. openai/gpt-4o-mini)")


def _url_and_model(kind: str, value: str) -> tuple[str, str]:
    url, _, model = value.partition("#")
    if not url or not model:
        raise BackendError(f"'{kind}=' needs URL#MODEL, got {value!r}; {LM_FORMS}")
    return url, model


def lm_from_spec(spec: str, *, max_tokens: int = 512, temperature: float = 0.0,
                 **options: Any) -> dspy.LM:
    """Build a DSPy LM from a spec string (see the module docstring for the forms)."""
    spec = (spec or "").strip()
    kind, sep, value = spec.partition("=")
    settings = {"max_tokens": max_tokens, "temperature": temperature, **options}
    if kind == "local":
        return embedded_lm(value or None, **settings)
    if sep and kind == "hf" and value:
        from serc_dspy.backends.hf import transformers_lm

        model, _, gguf_file = value.partition("#")
        return transformers_lm(model, **({"gguf_file": gguf_file} if gguf_file else {}),
                               **settings)
    if sep and kind in ("sglang", "openai"):
        from serc_dspy.backends.servers import server_lm

        return server_lm(kind, *_url_and_model(kind, value), **settings)
    if not sep and "/" in spec and " " not in spec and not spec.startswith("/"):
        return dspy.LM(spec, **settings)
    raise BackendError(f"unknown LM spec {spec!r}; {LM_FORMS}")


def parse_stage_lms(items: list[str], **settings: Any) -> dict[str, dspy.LM]:
    """`["verify=openai/gpt-4o", ...]` -> {"verify": LM}; stage names are checked by SERC."""
    lms: dict[str, dspy.LM] = {}
    for item in items or []:
        stage, sep, spec = item.partition("=")
        if not sep or not stage or not spec:
            raise BackendError(f"--stage-lm needs STAGE=SPEC, got {item!r}")
        lms[stage.strip()] = lm_from_spec(spec, **settings)
    return lms
