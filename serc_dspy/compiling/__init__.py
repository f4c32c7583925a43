"""Compiling SERC: labelled dev sets, DSPy optimizers per stage, and guarded state files.

- `devsets`: Factcheck-GPT / FActScore -> dspy.Examples with deterministic splits and metrics.
- `compile`: optimise one stage (a SERC predictor) and evaluate it before and after.
- `state`: save / load compiled state as JSON with per-stage signature hashes.
- `commands`: the `serc compile` subcommand.
"""

from serc_dspy.runtime.states import (
    FORMAT_VERSION,
    CompiledStateError,
    compiled_names,
    load_compiled,
    read_compiled,
    resolve_compiled,
    save_compiled,
    signature_fields,
    signature_hash,
)

__all__ = [
    "FORMAT_VERSION",
    "CompiledStateError",
    "compiled_names",
    "load_compiled",
    "read_compiled",
    "resolve_compiled",
    "save_compiled",
    "signature_fields",
    "signature_hash",
]
