"""Factories that return DSPy LMs. They know nothing of SERC."""

from serc_dspy.backends.chat import BackendError, OutputTruncated
from serc_dspy.backends.embedded import LlamaServerEngine, embedded_lm, find_smollm2_gguf
from serc_dspy.backends.hf import transformers_lm
from serc_dspy.backends.launcher import managed_server, sglang_server
from serc_dspy.backends.models import MODELS, ModelError, ensure_model, model_status
from serc_dspy.backends.servers import openai_compatible_lm, server_lm, sglang_lm
from serc_dspy.backends.spec import LM_FORMS, lm_from_spec

__all__ = [
    "LM_FORMS",
    "MODELS",
    "BackendError",
    "LlamaServerEngine",
    "ModelError",
    "OutputTruncated",
    "embedded_lm",
    "ensure_model",
    "find_smollm2_gguf",
    "lm_from_spec",
    "managed_server",
    "model_status",
    "openai_compatible_lm",
    "server_lm",
    "sglang_lm",
    "sglang_server",
    "transformers_lm",
]
