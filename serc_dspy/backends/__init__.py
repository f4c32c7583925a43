"""Factories that return DSPy LMs. They know nothing of SERC."""

from serc_dspy.backends.embedded import (
    BackendError,
    LlamaCppEngine,
    embedded_lm,
    find_smollm2_gguf,
)
from serc_dspy.backends.hf import transformers_lm
from serc_dspy.backends.launcher import managed_server, sglang_server
from serc_dspy.backends.servers import openai_compatible_lm, server_lm, sglang_lm
from serc_dspy.backends.spec import LM_FORMS, lm_from_spec

__all__ = [
    "LM_FORMS",
    "BackendError",
    "LlamaCppEngine",
    "embedded_lm",
    "find_smollm2_gguf",
    "lm_from_spec",
    "managed_server",
    "openai_compatible_lm",
    "server_lm",
    "sglang_lm",
    "sglang_server",
    "transformers_lm",
]
