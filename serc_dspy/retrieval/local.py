"""BM25 (optionally hybrid BM25 + MiniLM) retrieval over a local corpus, so SERC can run offline
against the user's own documents.

Documents are cut into passages of at most `chunk_chars` characters along paragraph, then
sentence, then word boundaries (a hard cut only for a single "word" longer than the limit).
Chunks do not overlap: top-k passages are concatenated into a context capped at 20,000
characters, and overlapping chunks would spend that budget on repeated text and let one
sentence occupy several of the k slots.

With `dense=True` passages are ranked by BM25 plus MiniLM cosine similarity, each z-scored over
the corpus for the query (see `LocalCorpus.__call__`); the embeddings come from `embed.py` and
are cached on disk per corpus.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from serc_dspy.core.errors import ArgumentError
from serc_dspy.core.io import read_jsonl_rows
from serc_dspy.core.text import clean_text
from serc_dspy.core.trace import Passage
from serc_dspy.retrieval.base import DEFAULT_TOP_K, CorpusError
from serc_dspy.retrieval.embed import (
    EmbeddingCache,
    Encoder,
    MiniLMEncoder,
    embed_passages,
    normalize,
)

logger = logging.getLogger("serc_dspy")

DEFAULT_CHUNK_CHARS = 800
TEXT_SUFFIXES = (".txt", ".md")

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(STOPWORDS_EN)
# Coarse-to-fine split points and the separator used when re-joining pieces at that level.
_SPLITS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\n\s*\n"), "\n\n"),
    (re.compile(r"(?<=[.!?])\s+"), " "),
    (re.compile(r"\s+"), " "),
)

Document = tuple[str, str]
"""(source, text) of one document before chunking."""


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without English stopwords.

    Done here rather than with `bm25s.tokenize` so indexing and querying share one
    vocabulary-free function, and nothing (e.g. a stemmer model) is fetched at run time.
    """
    return [tok for tok in _TOKEN.findall(text.lower()) if tok not in _STOPWORDS]


def chunk_text(text: str, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> list[str]:
    """Split `text` into non-empty chunks of at most `chunk_chars` characters.

    Splitting at the coarsest boundary that fits keeps a passage self-contained, which
    matters because the LM judges a fact from the passage alone.
    """
    if chunk_chars < 1:
        raise ArgumentError(f"chunk_chars must be positive, got {chunk_chars}")
    return _chunk(text.strip(), chunk_chars, 0)


def _chunk(text: str, limit: int, level: int) -> list[str]:
    if not text:
        return []
    if len(text) <= limit:
        return [text]
    if level == len(_SPLITS):
        return [text[i : i + limit] for i in range(0, len(text), limit)]
    pattern, joiner = _SPLITS[level]
    pieces: list[str] = []
    for part in pattern.split(text):
        pieces.extend(_chunk(part.strip(), limit, level + 1))
    return _pack(pieces, joiner, limit)


def _pack(pieces: list[str], joiner: str, limit: int) -> list[str]:
    """Greedily join consecutive pieces (each already <= limit) while the result fits."""
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current}{joiner}{piece}" if current else piece
        if len(candidate) <= limit:
            current = candidate
        else:
            chunks.append(current)
            current = piece
    if current:
        chunks.append(current)
    return chunks


def _read_text(path: Path) -> str:
    try:
        return clean_text(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"cannot read {path}: {exc}") from exc


def _folder_documents(folder: Path) -> list[Document]:
    """All .txt/.md files below `folder`, skipping hidden paths such as `.git`."""
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.suffix.lower() in TEXT_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        raise CorpusError(f"no .txt or .md files under {folder}")
    docs, skipped = [], []
    for path in files:
        try:
            docs.append((path.relative_to(folder).as_posix(), _read_text(path)))
        except CorpusError:  # one binary or undecodable file must not sink the whole folder
            skipped.append(path.relative_to(folder).as_posix())
    if skipped:
        logger.warning("corpus %s: skipped %d file(s) that are not UTF-8 text: %s", folder,
                       len(skipped), ", ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else ""))
    if not docs:
        raise CorpusError(f"no readable .txt or .md files under {folder}")
    return docs


def _jsonl_documents(path: Path) -> list[Document]:
    """Documents from `{"id", "title", "text"}` lines; the title (else id) is the source."""
    return [_jsonl_document(record, number, path)
            for number, record in read_jsonl_rows(path, what="corpus file", error=CorpusError)]


def _jsonl_document(record: dict, number: int, path: Path) -> Document:
    text = record.get("text")
    if not isinstance(text, str):
        raise CorpusError(f"{path}, line {number}: missing 'text' string")
    source = record.get("title") or record.get("id")
    return (clean_text(str(source)) if source not in (None, "") else f"{path.name}:{number}",
            clean_text(text))


def load_documents(path: str | os.PathLike[str]) -> list[Document]:
    """Read a folder, a .jsonl file or a single .txt/.md file into (source, text) pairs."""
    root = Path(path)
    if not root.exists():
        raise CorpusError(f"corpus path does not exist: {root}")
    if root.is_dir():
        return _folder_documents(root)
    suffix = root.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl_documents(root)
    if suffix in TEXT_SUFFIXES:
        return [(root.name, _read_text(root))]
    raise CorpusError(f"unsupported corpus file {root}: expected a folder, .txt, .md or .jsonl")


def _passages(docs: Iterable[Document], chunk_chars: int) -> Iterator[Passage]:
    for source, text in docs:
        for chunk in chunk_text(text, chunk_chars):
            yield Passage(text=chunk, source=source)


class LocalCorpus:
    """A BM25 retriever over local documents, satisfying the `Retriever` protocol; with
    `dense=True`, a hybrid of BM25 and MiniLM sentence embeddings (see `__call__`).

    The index is built once at construction and only read afterwards; retrieval still runs
    under a lock because bm25s makes no thread-safety promise and check nodes query it from
    a thread pool, while a BM25 lookup is cheap enough that serialising costs little.

    Dense options: `encoder` replaces the default `MiniLMEncoder` (anything with
    `encode(texts) -> array`, see `embed.Encoder`); passage embeddings are computed at
    construction and cached in `cache_dir` (default: `embeddings/` under $SERC_CACHE_DIR, else
    ~/.cache/serc-dspy), or not cached with `cache_dir=False`.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, chunk_chars: int = DEFAULT_CHUNK_CHARS,
        dense: bool = False, encoder: Encoder | None = None,
        cache_dir: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        self._build(load_documents(path), chunk_chars, f"local:{path}", str(path),
                    dense=dense, encoder=encoder, cache_dir=cache_dir)

    @classmethod
    def from_texts(
        cls, docs: dict[str, str], chunk_chars: int = DEFAULT_CHUNK_CHARS, *,
        dense: bool = False, encoder: Encoder | None = None,
        cache_dir: str | os.PathLike[str] | bool | None = None,
    ) -> LocalCorpus:
        """Build from `{source: text}` in memory, for tests and callers without files."""
        corpus = cls.__new__(cls)
        corpus._build(list(docs.items()), chunk_chars, "local:<memory>", "<memory>",
                      dense=dense, encoder=encoder, cache_dir=cache_dir)
        return corpus

    @classmethod
    def from_documents(
        cls, docs: Iterable[Document], *, name: str = "<memory>",
        chunk_chars: int = DEFAULT_CHUNK_CHARS, dense: bool = False,
        encoder: Encoder | None = None, cache_dir: str | os.PathLike[str] | bool | None = None,
    ) -> LocalCorpus:
        """Build from `(source, text)` pairs; several passages may share one source (the
        pages of one URL, say), which a `{source: text}` mapping cannot hold."""
        corpus = cls.__new__(cls)
        corpus._build(list(docs), chunk_chars, f"local:{name}", name,
                      dense=dense, encoder=encoder, cache_dir=cache_dir)
        return corpus

    def _build(self, docs: list[Document], chunk_chars: int, name: str, origin: str, *,
               dense: bool = False, encoder: Encoder | None = None,
               cache_dir: str | os.PathLike[str] | bool | None = None) -> None:
        if chunk_chars < 1:
            raise ArgumentError(f"chunk_chars must be positive, got {chunk_chars}")
        if encoder is not None and not dense:
            raise ArgumentError("encoder= is only used with dense=True")
        # A hybrid ranks differently: its own name keeps a retrieval cache from mixing the two.
        self._name = name.replace("local:", "local-hybrid:", 1) if dense else name
        self.chunk_chars = chunk_chars
        self._passages = list(_passages(docs, chunk_chars))
        digest = hashlib.sha256()
        for passage in self._passages:
            digest.update(f"{passage.source}\0{passage.text}\0".encode())
        self.content_sha256 = digest.hexdigest()
        """What the corpus holds, so a resumed run refuses an edited corpus under one path."""
        if not self._passages:
            raise CorpusError(f"corpus has no text: {origin}")
        tokens = [tokenize(p.text) for p in self._passages]
        self._vocab = frozenset(tok for doc in tokens for tok in doc)
        if not self._vocab:
            raise CorpusError(f"corpus has no searchable words (only stopwords): {origin}")
        self._index = bm25s.BM25()
        self._index.index(tokens, show_progress=False)
        self._lock = threading.Lock()
        self._encoder: Encoder | None = None
        self._embeddings: np.ndarray | None = None
        if dense:
            self._build_dense(encoder, cache_dir)

    def _build_dense(self, encoder: Encoder | None,
                     cache_dir: str | os.PathLike[str] | bool | None) -> None:
        """Passage embeddings now (from the cache, else encoded), and the encoder loaded, so a
        missing model fails at construction rather than on the first query."""

        self._encoder = encoder if encoder is not None else MiniLMEncoder()
        load = getattr(self._encoder, "load", None)
        if callable(load):
            load()
        cache = None if cache_dir is False else EmbeddingCache(
            None if cache_dir in (None, True) else cache_dir)
        self._embeddings = embed_passages([(p.source, p.text) for p in self._passages],
                                          self._encoder, cache)

    # Copies share the read-only index (DSPy optimizers deep-copy whole programs); a pickle
    # leaves the lock behind and makes a new one.
    def __deepcopy__(self, memo) -> LocalCorpus:
        return self

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dense(self) -> bool:
        """Whether passages are ranked by the BM25 + embedding hybrid."""
        return self._embeddings is not None

    def __len__(self) -> int:
        return len(self._passages)

    def __repr__(self) -> str:
        hybrid = ", dense=True" if self.dense else ""
        return f"LocalCorpus({self._name!r}, passages={len(self)}{hybrid})"

    def __call__(self, query: str, k: int = DEFAULT_TOP_K) -> list[Passage]:
        """Top-k passages, best first; ties keep corpus order so results are deterministic.

        BM25 only (the default): passages scoring 0 are never returned. They share no term with
        the query, so returning them would only feed the LM unrelated text; `score` is the
        BM25 score.

        Hybrid (`dense=True`): over all N passages, with b the BM25 scores and c the cosine
        similarities between the query's and each passage's MiniLM embedding,

            score = z(b) + z(c),   z(x) = (x - mean(x)) / std(x)   (0 where std(x) = 0)

        so each signal counts by how far a passage stands out from the corpus for this query,
        whatever the signal's own scale. Returned: every passage that shares a term with the
        query (b > 0, as without dense), and a passage that shares none only when its combined
        score is positive, i.e. its similarity lifts it above the corpus average despite its
        below-average BM25: a paraphrase is found, while a passage that is merely no worse
        than average in meaning is not. Dense retrieval thus adds candidates and reorders them;
        every passage BM25 alone could return stays a candidate. A query with no searchable
        word (empty, only stopwords) returns nothing; one whose words are all unknown to the
        corpus is ranked by similarity alone. `score` is the combined z-score.
        """
        terms = tokenize(query)
        known = [tok for tok in terms if tok in self._vocab]
        k = min(k, len(self._passages))  # bm25s rejects k larger than the corpus
        if k <= 0 or not terms or (not known and not self.dense):
            return []
        scores = self.bm25_scores(query)
        if self.dense:
            combined = zscore(scores) + zscore(self.dense_scores(query))
            hits = np.flatnonzero((scores > 0) | (combined > 0))
            scores = combined
        else:
            hits = np.flatnonzero(scores > 0)
        ranked = hits[np.argsort(-scores[hits], kind="stable")][:k]
        return [self._passages[i].model_copy(update={"score": float(scores[i])}) for i in ranked]

    def bm25_scores(self, query: str) -> np.ndarray:
        """The BM25 score of every passage for `query`, in corpus order (all 0 when the query
        has no word of the corpus's vocabulary)."""
        terms = [tok for tok in tokenize(query) if tok in self._vocab]
        if not terms:
            return np.zeros(len(self._passages))
        with self._lock:
            return np.asarray(self._index.get_scores(terms), dtype=float)

    def dense_scores(self, query: str) -> np.ndarray:
        """The cosine similarity of every passage to `query`, in corpus order (dense only)."""
        if self._embeddings is None or self._encoder is None:
            raise CorpusError("dense_scores needs a corpus built with dense=True")
        vector = normalize(np.asarray(self._encoder.encode([query]), dtype=np.float32))[0]
        return (self._embeddings @ vector).astype(float)


def zscore(values: np.ndarray) -> np.ndarray:
    """`(values - mean) / std` over the array; all zeros when the values are all equal."""
    values = np.asarray(values, dtype=float)
    std = float(values.std())
    if not np.isfinite(std) or std < 1e-12:
        return np.zeros_like(values)
    return (values - values.mean()) / std
