"""Finding and reading a local transformers model for a verifier, never downloading one.

A verifier model is a local directory or a hub id already in the local Hugging Face cache;
anything else is a `UserError` that says what to do. The helpers here read what the config and
tokenizer say (architecture, maximum length, decoder start) so that `classifier` can stay about
scoring.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from serc_dspy.backends.hf import hf_cache_dir, in_local_cache, is_hub_id
from serc_dspy.core.errors import UserError

DEFAULT_MAX_LENGTH = 512
INSTALL_HINT = (
    "install torch first (`pip install torch`, the build for your CPU/GPU), "
    "then `pip install 'serc-dspy[hf]'`"
)


def require_packages() -> None:
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if missing:
        raise UserError(f"the classifier verifier needs {', '.join(missing)}, which "
                        f"{'is' if len(missing) == 1 else 'are'} not installed: {INSTALL_HINT}.")


def resolve_model(model: str | Path) -> str:
    """A local model directory or a hub id whose config is in the local Hugging Face cache;
    anything else is a `UserError` that says what to do. Never touches the network."""

    name = str(model)
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"verifier model directory {path} has no config.json: pass the "
                            "folder a transformers model was saved to (save_pretrained)")
        return str(path)
    if path.exists():
        raise UserError(f"verifier model {name} is a file; pass a model directory or a hub id "
                        "in the local Hugging Face cache")
    if not is_hub_id(name) or not in_local_cache(name, "config.json"):
        raise UserError(
            f"verifier model {name!r} is neither a local directory nor in the local Hugging "
            f"Face cache ({hf_cache_dir()}); models are never downloaded here: fetch it first "
            f"(e.g. `hf download {name}`) or pass the directory it was saved to")
    return name


def is_seq2seq(config) -> bool:
    architectures = list(getattr(config, "architectures", None) or [])
    if any(a.endswith("ForSequenceClassification") for a in architectures):
        return False
    if any(a.endswith("ForConditionalGeneration") for a in architectures):
        return True
    return bool(getattr(config, "is_encoder_decoder", False))


def architecture(config) -> str:
    return ", ".join(getattr(config, "architectures", None) or [config.model_type])


def max_length_of(tokenizer, config) -> int:
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 100_000:
        return limit
    for attribute in ("max_position_embeddings", "n_positions"):
        value = getattr(config, attribute, None)
        if isinstance(value, int) and value > 0:
            return value
    return DEFAULT_MAX_LENGTH


def decoder_start(model) -> int:
    config = model.config
    for value in (getattr(model.generation_config, "decoder_start_token_id", None),
                  getattr(config, "decoder_start_token_id", None),
                  getattr(config, "pad_token_id", None)):
        if isinstance(value, int):
            return value
    raise UserError(f"the seq2seq verifier model {config.name_or_path} defines no decoder "
                    "start token")
