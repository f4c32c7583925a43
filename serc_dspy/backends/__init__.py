"""Factories that return DSPy LMs. They know nothing of SERC."""

from serc_dspy.backends.embedded import (
    BackendError,
    LlamaCppEngine,
    embedded_lm,
    find_smollm2_gguf,
)

__all__ = ["BackendError", "LlamaCppEngine", "embedded_lm", "find_smollm2_gguf"]
