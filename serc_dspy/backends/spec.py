"""One string names an LM, so the CLI's `--lm` and config files can choose any backend.

Accepted forms (see `LM_FORMS`); a bad value gets a message listing them.
"""

from __future__ import annotations

from typing import Any

import dspy

from serc_dspy.backends.embedded import BackendError, embedded_lm

LM_FORMS = "accepted forms: 'local' (embedded SmolLM2), 'local=PATH.gguf'"


def lm_from_spec(spec: str, *, max_tokens: int = 512, temperature: float = 0.0,
                 **options: Any) -> dspy.LM:
    """Build a DSPy LM from a spec string such as `local` or `local=/models/x.gguf`."""
    spec = (spec or "").strip()
    kind, _, value = spec.partition("=")
    if kind == "local":
        return embedded_lm(value or None, max_tokens=max_tokens, temperature=temperature,
                           **options)
    raise BackendError(f"unknown LM spec {spec!r}; {LM_FORMS}")
