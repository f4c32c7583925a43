"""A Hugging Face causal LM run in-process by transformers/torch, behind DSPy's engine API.

The model is a local directory, a hub id already in the local Hugging Face cache, or a GGUF file
(transformers dequantizes it). Nothing is ever downloaded. Every typed call is decoded under an
xgrammar grammar compiled from the signature's JSON schema, so whatever the model says, the output
parses. Install with `pip install torch` (pick the build for your hardware first) and then
`pip install 'serc-dspy[hf]'`.
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

from serc_dspy.backends.chat import BackendError, ThreadedAsyncEngine
from serc_dspy.backends.chat_format import (
    DEFAULT_MAX_LIST_ITEMS,
    DEFAULT_MAX_TOKENS,
    bound_lists,
    chat_messages,
    requested_schema,
    stream_events,
)

# import name -> pip name, in the order to install them.
_REQUIRED = {"torch": "torch", "transformers": "transformers", "xgrammar": "xgrammar"}
_INSTALL_HINT = (
    "install torch first (`pip install torch`, the build for your CPU/GPU), "
    "then `pip install 'serc-dspy[hf]'`"
)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_DTYPES = ("float32", "bfloat16", "float16")


def _missing_packages() -> list[str]:
    return [pip for name, pip in _REQUIRED.items() if importlib.util.find_spec(name) is None]


def _require_packages() -> None:
    missing = _missing_packages()
    if missing:
        raise BackendError(
            f"the transformers backend needs {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed: {_INSTALL_HINT}."
        )


def is_hub_id(name: str) -> bool:
    """Whether `name` is shaped like a Hugging Face hub id (`org/name` or `name`)."""
    return bool(_HUB_ID.match(name)) and not name.startswith(".")


def hf_cache_dir() -> str:
    """The local Hugging Face hub cache, for messages about a model not in it."""
    try:
        from huggingface_hub import constants

        return str(constants.HF_HUB_CACHE)
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return "~/.cache/huggingface/hub"


def in_local_cache(repo_id: str, filename: str) -> bool:
    """Whether the hub repo's `filename` is in the local cache (nothing is downloaded)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, filename), str)
    except ValueError:  # huggingface_hub rejects the string as a repo id
        return False


class TransformersEngine:
    """A DSPy engine that runs a transformers causal LM under an xgrammar JSON-schema grammar.

    Generation is serialised with a lock (one model, one forward pass at a time); the model is
    loaded on the first call.
    """

    supports_response_schema = True
    supported_params = frozenset({"response_format", "temperature", "max_tokens"})

    def __init__(
        self,
        model: str | Path,
        *,
        gguf_file: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_list_items: int = DEFAULT_MAX_LIST_ITEMS,
        local_files_only: bool = True,
    ):
        _require_packages()
        if dtype is not None:
            dtype = str(dtype).removeprefix("torch.")
            if dtype not in _DTYPES:
                raise BackendError(f"dtype must be one of {', '.join(_DTYPES)}, not {dtype!r}")
        self.model = str(model)
        self.gguf_file = gguf_file
        self.device = device
        self.dtype = dtype
        self.max_list_items = max_list_items
        self.local_files_only = local_files_only
        self._source, self._gguf = self._resolve(self.model, gguf_file)
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None
        self._compiler = None
        self._stop_ids: list[int] = []
        self._device = "cpu"
        self._context: int | None = None
        self._grammars: dict[str, Any] = {}
        self.load_seconds: float | None = None

    def _resolve(self, model: str, gguf_file: str | None) -> tuple[str, str | None]:
        """Return (directory or hub id, GGUF file name or None) for `from_pretrained`."""
        path = Path(model).expanduser()
        if path.is_file():
            if path.suffix.lower() != ".gguf":
                raise BackendError(
                    f"{model} is a file but not a GGUF model; pass a model directory, "
                    "a GGUF file or a hub id in the local Hugging Face cache"
                )
            return str(path.parent), path.name
        if path.is_dir():
            if gguf_file is not None:
                if not (path / gguf_file).is_file():
                    raise BackendError(f"GGUF model file not found: {path / gguf_file}")
                return str(path), gguf_file
            if (path / "config.json").is_file():
                return str(path), None
            ggufs = sorted(p.name for p in path.glob("*.gguf"))
            if len(ggufs) == 1:
                return str(path), ggufs[0]
            what = f"several GGUF files ({', '.join(ggufs)}): pass gguf_file" if ggufs else (
                "no config.json and no GGUF file")
            raise BackendError(f"model directory {path} has {what}")
        if model.lower().endswith(".gguf") or not is_hub_id(model):
            raise BackendError(f"model not found: {model} is not a directory or a GGUF file")
        if self.local_files_only and not in_local_cache(model, gguf_file or "config.json"):
            raise BackendError(
                f"model {model!r} is neither a local directory nor in the local Hugging Face "
                f"cache ({hf_cache_dir()}); models are never downloaded here: fetch it first "
                f"(e.g. `hf download {model}`) or pass a model directory or GGUF file"
            )
        return model, gguf_file

    @property
    def name(self) -> str:
        if self._gguf:
            return Path(self._gguf).stem
        return Path(self._source).name or self._source

    def _load(self) -> tuple[Any, Any]:
        """Load tokenizer and model once (the caller holds the lock)."""
        if self._loaded is not None:
            return self._loaded
        _require_packages()
        try:
            import torch
            import transformers
            import xgrammar as xgr
        except ImportError as exc:
            raise BackendError(
                f"the transformers backend could not import {exc.name or exc}: {_INSTALL_HINT}."
            ) from exc
        started = time.perf_counter()
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise BackendError(f"device {device!r} requested but torch sees no CUDA device")
        dtype_name = self.dtype or ("bfloat16" if device.startswith("cuda") else "float32")
        options: dict[str, Any] = {"local_files_only": self.local_files_only}
        if self._gguf:
            options["gguf_file"] = self._gguf
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(self._source, **options)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                self._source, dtype=getattr(torch, dtype_name), **options)
        except ImportError as exc:  # e.g. gguf or accelerate missing for a GGUF file
            raise BackendError(f"cannot load {self.model}: {exc} ({_INSTALL_HINT})") from exc
        except OSError as exc:
            raise BackendError(f"cannot load {self.model}: {str(exc).splitlines()[0]}") from exc
        model.to(device)
        model.eval()
        stop_ids = _as_list(model.generation_config.eos_token_id) + _as_list(
            tokenizer.eos_token_id)
        self._stop_ids = sorted(set(stop_ids))
        if not self._stop_ids:
            raise BackendError(f"{self.model} defines no end-of-sequence token")
        vocab_size = _logits_size(model) or len(tokenizer)
        info = xgr.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=self._stop_ids)
        self._compiler = xgr.GrammarCompiler(info, max_threads=1)
        self._device = device
        self._context = getattr(model.config.get_text_config(), "max_position_embeddings", None)
        self._loaded = (tokenizer, model)
        self.load_seconds = time.perf_counter() - started
        return self._loaded

    def _grammar(self, response_format: dict[str, Any] | None):
        """Compile (and cache) an xgrammar grammar for the requested JSON schema, if any."""
        schema = requested_schema(response_format)
        if schema is None:
            return None
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            bounded = bound_lists(schema, self.max_list_items)
            try:
                # Compact JSON: a small model cannot waste its token budget on whitespace.
                self._grammars[key] = self._compiler.compile_json_schema(
                    json.dumps(bounded), any_whitespace=False)
            except Exception as exc:  # xgrammar raises RuntimeError/ValueError on bad schemas
                raise BackendError(f"cannot compile the response schema: {exc}") from exc
        return self._grammars[key]

    def _prompt_ids(self, tokenizer, messages: list[dict[str, str]]):
        if getattr(tokenizer, "chat_template", None):
            encoded = tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=True, return_dict=True,
                return_tensors="pt")
        else:  # a base model: a plain transcript
            text = "".join(f"{m['role']}: {m['content']}\n\n" for m in messages) + "assistant: "
            encoded = tokenizer(text, return_tensors="pt")
        return encoded["input_ids"].to(self._device), encoded["attention_mask"].to(self._device)

    def complete(self, request) -> Response:
        messages = chat_messages(request)
        config = request.config
        max_tokens = config.max_tokens or DEFAULT_MAX_TOKENS
        temperature = 0.0 if config.temperature is None else float(config.temperature)
        stop = [s for s in (config.stop or ()) if s]
        with self._lock:
            tokenizer, model = self._load()
            import torch
            import xgrammar as xgr

            grammar = self._grammar(config.response_format)
            input_ids, attention_mask = self._prompt_ids(tokenizer, messages)
            if self._context and input_ids.shape[1] + max_tokens > self._context:
                max_tokens = self._context - input_ids.shape[1]
                if max_tokens < 16:
                    raise BackendError(
                        f"prompt of {input_ids.shape[1]} tokens does not fit the model's context "
                        f"of {self._context} tokens; lower the retrieval context cap"
                    )
            options: dict[str, Any] = {
                "max_new_tokens": max_tokens,
                "eos_token_id": self._stop_ids,
                "pad_token_id": self._stop_ids[0],
            }
            # The grammar mask must come before the sampling warpers (generate() appends custom
            # processors after its own, and a top-k/top-p cut could leave only masked tokens).
            processors = [xgr.contrib.hf.LogitsProcessor(grammar)] if grammar is not None else []
            if temperature > 0:
                from transformers import TemperatureLogitsWarper, TopPLogitsWarper

                options.update(do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
                processors.append(TemperatureLogitsWarper(temperature))
                if config.top_p is not None and config.top_p < 1.0:
                    processors.append(TopPLogitsWarper(float(config.top_p)))
            else:
                options.update(do_sample=False, temperature=None, top_k=None, top_p=None)
            if processors:
                options["logits_processor"] = processors
            if stop:
                options.update(stop_strings=stop, tokenizer=tokenizer)
            with torch.inference_mode():
                output = model.generate(
                    input_ids=input_ids, attention_mask=attention_mask, **options)
        generated = output[0, input_ids.shape[1]:].tolist()
        ended = bool(generated) and generated[-1] in self._stop_ids
        if ended:
            generated = generated[:-1]
        text = tokenizer.decode(generated, skip_special_tokens=True)
        for s in stop:
            if s in text:
                text, ended = text[: text.index(s)], True
        prompt_tokens, completion_tokens = input_ids.shape[1], len(generated)
        return Response(
            id=None,
            model=self.name,
            message=Message.assistant([TextPart(text)]),
            finish_reason="length" if not ended and len(generated) >= max_tokens else "stop",
            usage=Usage(
                input_tokens=prompt_tokens,
                output_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            ),
        )

    def stream(self, request):
        """DSPy's streaming interface: the finished response as stream events."""
        return stream_events(self.complete(request))

    def close(self) -> None:
        with self._lock:
            self._loaded = None
            self._compiler = None
            self._grammars.clear()

    def dump_state(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "gguf_file": self.gguf_file,
            "device": self.device,
            "dtype": self.dtype,
            "max_list_items": self.max_list_items,
            "local_files_only": self.local_files_only,
        }

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> TransformersEngine:
        return cls(
            state["model"],
            gguf_file=state.get("gguf_file"),
            device=state.get("device"),
            dtype=state.get("dtype"),
            max_list_items=state.get("max_list_items", DEFAULT_MAX_LIST_ITEMS),
            local_files_only=state.get("local_files_only", True),
        )


class AsyncTransformersEngine(ThreadedAsyncEngine):
    sync_class = TransformersEngine


def _as_list(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


def _logits_size(model) -> int | None:
    head = model.get_output_embeddings()
    weight = getattr(head, "weight", None)
    return int(weight.shape[0]) if weight is not None else None


def transformers_lm(
    model: str | Path,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 0.0,
    cache: bool = False,
    **engine_options: Any,
) -> dspy.LM:
    """Build a DSPy LM for a transformers causal LM (directory, cached hub id or GGUF file).

    Use it with `dspy.JSONAdapter()` so DSPy hands the engine each signature's output schema.
    `engine_options` go to `TransformersEngine` (gguf_file, device, dtype, max_list_items,
    local_files_only).
    """
    engine = TransformersEngine(model, **engine_options)
    return dspy.LM(
        f"local/{engine.name}",
        engine=engine,
        async_engine=AsyncTransformersEngine(engine),
        temperature=temperature,
        max_tokens=max_tokens,
        cache=cache,
    )
