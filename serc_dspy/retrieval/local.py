"""BM25 retrieval over a local corpus, so SERC can run offline against the user's own documents.

Documents are cut into passages of at most `chunk_chars` characters along paragraph, then
sentence, then word boundaries (a hard cut only for a single "word" longer than the limit).
Chunks do not overlap: top-k passages are concatenated into a context capped at 20,000
characters, and overlapping chunks would spend that budget on repeated text and let one
sentence occupy several of the k slots.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from serc_dspy.retrieval.base import DEFAULT_TOP_K, CorpusError
from serc_dspy.text import clean_text, parse_json
from serc_dspy.trace import Passage

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
        raise ValueError(f"chunk_chars must be positive, got {chunk_chars}")
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
    docs: list[Document] = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if line.strip():
            docs.append(_jsonl_document(line, number, path))
    return docs


def _jsonl_document(line: str, number: int, path: Path) -> Document:
    def bad(reason: str) -> CorpusError:
        return CorpusError(f"bad jsonl line {number} in {path}: {reason}")

    try:
        record = parse_json(line)
    except json.JSONDecodeError as exc:
        raise bad(f"invalid JSON ({exc.msg})") from exc
    if not isinstance(record, dict):
        raise bad(f"expected an object, got {type(record).__name__}")
    text = record.get("text")
    if not isinstance(text, str):
        raise bad("missing 'text' string")
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
    """A BM25 retriever over local documents, satisfying the `Retriever` protocol.

    The index is built once at construction and only read afterwards; retrieval still runs
    under a lock because bm25s makes no thread-safety promise and check nodes query it from
    a thread pool, while a BM25 lookup is cheap enough that serialising costs little.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, chunk_chars: int = DEFAULT_CHUNK_CHARS
    ) -> None:
        self._build(load_documents(path), chunk_chars, f"local:{path}", str(path))

    @classmethod
    def from_texts(
        cls, docs: dict[str, str], chunk_chars: int = DEFAULT_CHUNK_CHARS
    ) -> LocalCorpus:
        """Build from `{source: text}` in memory, for tests and callers without files."""
        corpus = cls.__new__(cls)
        corpus._build(list(docs.items()), chunk_chars, "local:<memory>", "<memory>")
        return corpus

    @classmethod
    def from_documents(
        cls, docs: Iterable[Document], *, name: str = "<memory>",
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
    ) -> LocalCorpus:
        """Build from `(source, text)` pairs; several passages may share one source (the
        pages of one URL, say), which a `{source: text}` mapping cannot hold."""
        corpus = cls.__new__(cls)
        corpus._build(list(docs), chunk_chars, f"local:{name}", name)
        return corpus

    def _build(self, docs: list[Document], chunk_chars: int, name: str, origin: str) -> None:
        if chunk_chars < 1:
            raise ValueError(f"chunk_chars must be positive, got {chunk_chars}")
        self._name = name
        self.chunk_chars = chunk_chars
        self._passages = list(_passages(docs, chunk_chars))
        if not self._passages:
            raise CorpusError(f"corpus has no text: {origin}")
        tokens = [tokenize(p.text) for p in self._passages]
        self._vocab = frozenset(tok for doc in tokens for tok in doc)
        if not self._vocab:
            raise CorpusError(f"corpus has no searchable words (only stopwords): {origin}")
        self._index = bm25s.BM25()
        self._index.index(tokens, show_progress=False)
        self._lock = threading.Lock()

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

    def __len__(self) -> int:
        return len(self._passages)

    def __repr__(self) -> str:
        return f"LocalCorpus({self._name!r}, passages={len(self)})"

    def __call__(self, query: str, k: int = DEFAULT_TOP_K) -> list[Passage]:
        """Top-k passages by BM25 score, best first; passages scoring 0 are never returned.

        Zero-score passages share no term with the query, so returning them would only feed
        the LM unrelated text. Ties keep corpus order so results are deterministic.
        """
        terms = [tok for tok in tokenize(query) if tok in self._vocab]
        k = min(k, len(self._passages))  # bm25s rejects k larger than the corpus
        if not terms or k <= 0:
            return []
        with self._lock:
            scores = np.asarray(self._index.get_scores(terms), dtype=float)
        hits = np.flatnonzero(scores > 0)
        ranked = hits[np.argsort(-scores[hits], kind="stable")][:k]
        return [self._passages[i].model_copy(update={"score": float(scores[i])}) for i in ranked]
