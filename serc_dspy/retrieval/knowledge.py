"""A topic-keyed knowledge source (title -> article passages), the reference for FActScore scoring.

Storage is FActScore's Wikipedia SQLite layout, so a database built by FActScore's own tools
(e.g. its `enwiki-20230401.db`) can be used directly, and databases built here can be read by it:

- one table `documents(title PRIMARY KEY, text)`, one row per article;
- `text` holds the article's passages joined by the literal separator
  `"####SPECIAL####SEPARATOR####"` (FActScore's `SPECIAL_SEPARATOR`, checked against
  `factscore/retrieval.py` in shmsw25/FActScore);
- FActScore cut its passages at 256 RoBERTa tokens and stored the tokenizer's decoded text, which
  still carries `<s>` / `</s>` markers; they are removed when reading, as FActScore does before
  scoring. We build passages without a tokenizer, from paragraph and sentence boundaries, at
  most `DEFAULT_PASSAGE_CHARS` characters (about 150-200 words, close to 256 tokens).

Retrieval for scoring mirrors FActScore's: BM25 restricted to the topic's own article, with the
query `"<topic> <fact>"`, returning the top `k` (default 5) passages. Like FActScore it always
returns `min(k, passages)` passages: when fewer than `k` share a word with the query, the rest
are filled in article order (the lead first). A topic that is not in the database raises
`UnknownTopicError` (a `UserError`); use `topic in source` to test first.

The same object is also a general `Retriever` (`source(query, k)`) over every article at once,
so an experiment can retrieve from the very articles it is scored against. That index is built
in memory on the first call from every passage, which suits a knowledge source of the size of
a benchmark's articles, not a whole Wikipedia dump.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import read_json
from serc_dspy.core.trace import Passage
from serc_dspy.retrieval.base import DEFAULT_TOP_K
from serc_dspy.retrieval.local import LocalCorpus, chunk_text, tokenize

SEPARATOR = "####SPECIAL####SEPARATOR####"
DEFAULT_PASSAGE_CHARS = 1000
SCORING_TOP_K = 5
"""FActScore retrieves 5 passages of the topic's article per atomic fact."""

_HEADING = re.compile(r"^\s*(=+)\s*(.*?)\s*\1\s*$", re.M)
_MARKERS = re.compile(r"</?s>")
_SKIPPED_SECTIONS = frozenset({"references", "external links", "see also", "further reading",
                               "notes", "citations", "sources", "bibliography", "footnotes"})


class KnowledgeError(UserError):
    """A knowledge source file is missing or not in a format we read."""


class UnknownTopicError(UserError):
    """The topic has no article in the knowledge source."""


def article_passages(text: str, passage_chars: int = DEFAULT_PASSAGE_CHARS) -> list[str]:
    """Cut an article into passages along paragraph, then sentence, then word boundaries.

    MediaWiki section headings (`== Early life ==`) become a short line of their own ("Early
    life.") so the passage that follows keeps its context; link and citation sections
    (`_SKIPPED_SECTIONS`: references, external links...) are dropped, since they hold titles
    rather than facts and would match every query that names the topic.
    """
    kept, skipping, level = [], False, 0
    position = 0
    for match in _HEADING.finditer(text or ""):
        if not skipping:
            kept.append(text[position:match.start()].lstrip() if kept else
                        text[position:match.start()])
        depth, title = len(match.group(1)), match.group(2)
        if skipping and depth > level:
            position = match.end()
            continue
        skipping = title.strip().casefold() in _SKIPPED_SECTIONS
        level = depth
        if not skipping and title:
            kept.append(f"\n\n{title}.\n")
        position = match.end()
    if not skipping:
        kept.append((text or "")[position:].lstrip() if kept else (text or "")[position:])
    return chunk_text("".join(kept), passage_chars)


def article_text(topic: str, value: Any) -> str | list[str]:
    """One topic's entry of a knowledge JSON: `text`, `[passage, ...]`, or an object with an
    `"extract"` or `"text"` string (our Wikipedia extracts); anything else is a
    `KnowledgeError`."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, str) for p in value):
        return value
    if isinstance(value, Mapping):
        for key in ("extract", "text"):
            if isinstance(value.get(key), str):
                return value[key]
    raise KnowledgeError(
        f"article for topic {topic!r} must be a string, a list of strings or an object with an "
        f"'extract' or 'text' string; got {type(value).__name__}"
    )


def read_knowledge_json(source: str | os.PathLike[str] | Mapping[str, Any], *,
                        what: str = "knowledge file") -> Mapping[str, Any]:
    """The `{title: article}` object of a knowledge JSON file (a mapping is taken as it is);
    a missing, unreadable or malformed file is a `KnowledgeError` calling it `what`. Each
    article is read with `article_text`."""
    if isinstance(source, Mapping):
        return source
    data = read_json(source, what=what, error=KnowledgeError)
    if not isinstance(data, dict):
        raise KnowledgeError(f"{what} {source} must hold a JSON object {{title: article}}, "
                             f"got {type(data).__name__}")
    return data


def _rows(data: Mapping[str, Any], passage_chars: int) -> list[tuple[str, str]]:
    rows = []
    for title, value in data.items():
        article = article_text(title, value)
        passages = (article_passages(article, passage_chars) if isinstance(article, str)
                    else [p.strip() for p in article if p.strip()])
        if passages:
            rows.append((str(title), SEPARATOR.join(passages)))
    if not rows:
        raise KnowledgeError("the knowledge JSON holds no article text")
    return rows


class _TopicIndex:
    """BM25 over one article's passages (built on first use of the topic)."""

    def __init__(self, passages: list[Passage]):
        self.passages = passages
        tokens = [tokenize(p.text) for p in passages]
        self.vocab = frozenset(t for doc in tokens for t in doc)
        self.index = None
        if self.vocab:
            self.index = bm25s.BM25()
            self.index.index(tokens, show_progress=False)

    def top(self, query: str, k: int) -> list[Passage]:
        k = min(k, len(self.passages))
        terms = [t for t in tokenize(query) if t in self.vocab]
        if not terms or self.index is None:
            scores = np.zeros(len(self.passages))
        else:
            scores = np.asarray(self.index.get_scores(terms), dtype=float)
        # Stable sort: ties (including zero scores) keep article order.
        ranked = np.argsort(-scores, kind="stable")[:k]
        return [self.passages[i].model_copy(update={"score": float(scores[i])}) for i in ranked]


class KnowledgeSource:
    """Articles keyed by topic (a Wikipedia title) in FActScore's SQLite layout.

    Open a database with `KnowledgeSource(db_path)`, build one with `build_sqlite(json, db)`,
    or load a JSON into memory with `from_json(json)`; `open(path)` picks by file suffix.
    Thread-safe: scoring queries it from worker threads.
    """

    def __init__(self, db_path: str | os.PathLike[str], *, _connection=None, _name=None):
        if _connection is None:
            path = Path(db_path)
            if not path.is_file():
                raise KnowledgeError(f"knowledge database not found: {path}")
            _connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                          check_same_thread=False)
        self._db = _connection
        self._path = None if _connection is not None and db_path == "<memory>" else (
            Path(db_path) if _connection is None else None)
        self.name = _name or f"knowledge:{db_path}"
        self._lock = threading.Lock()
        self._indexes: dict[str, _TopicIndex] = {}
        self._global: LocalCorpus | None = None
        try:
            with self._lock:
                found = self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name='documents'"
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise KnowledgeError(f"{db_path} is not an SQLite database: {exc}") from exc
        if not found:
            raise KnowledgeError(
                f"{db_path} has no 'documents' table: expected FActScore's layout "
                "documents(title PRIMARY KEY, text)")
        self._titles = self._load_titles()

    # -- copying: optimizers deep-copy programs, and saving a program pickles it -------------
    def __deepcopy__(self, memo) -> KnowledgeSource:
        """The source is read-only: every copy of a program shares it (and its indexes)."""
        return self

    def __getstate__(self) -> dict[str, Any]:
        """A file-backed source pickles as its path (reopened read-only); an in-memory one
        as its serialised database. The lock and the BM25 indexes are rebuilt lazily."""
        state = {"name": self.name, "path": str(self._path) if self._path else None}
        if self._path is None:
            with self._lock:
                state["data"] = self._db.serialize()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state.get("path"):
            self.__init__(state["path"], _name=state["name"])
            return
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.deserialize(state["data"])
        self.__init__("<memory>", _connection=conn, _name=state["name"])

    # -- construction ---------------------------------------------------------------------
    @staticmethod
    def _write(conn: sqlite3.Connection, rows: list[tuple[str, str]]) -> None:
        conn.execute("CREATE TABLE documents (title PRIMARY KEY, text)")
        conn.executemany("INSERT OR REPLACE INTO documents VALUES (?, ?)", rows)
        conn.commit()

    @classmethod
    def build_sqlite(
        cls,
        source: str | os.PathLike[str] | Mapping[str, Any],
        db_path: str | os.PathLike[str],
        *,
        passage_chars: int = DEFAULT_PASSAGE_CHARS,
        overwrite: bool = False,
    ) -> KnowledgeSource:
        """Write FActScore's SQLite layout from a JSON file or dict, and open it.

        Accepted shapes: `{title: text}`, `{title: [passage, ...]}` (kept as given) and the
        `{topic: {"resolved_title": ..., "extract": text}}` shape of our Wikipedia extracts
        (keyed by the topic, which is the title the datasets use).
        """
        rows = _rows(read_knowledge_json(source), passage_chars)
        path = Path(db_path)
        if path.exists():
            if not overwrite:
                raise KnowledgeError(f"{path} already exists; remove it or pass overwrite=True")
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path)
        try:
            cls._write(conn, rows)
        finally:
            conn.close()
        return cls(path)

    @classmethod
    def from_json(
        cls,
        source: str | os.PathLike[str] | Mapping[str, Any],
        *,
        passage_chars: int = DEFAULT_PASSAGE_CHARS,
    ) -> KnowledgeSource:
        """Load a JSON (same shapes as `build_sqlite`) into an in-memory database."""
        rows = _rows(read_knowledge_json(source), passage_chars)
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        cls._write(conn, rows)
        name = "<memory>" if isinstance(source, Mapping) else str(source)
        return cls(name, _connection=conn, _name=f"knowledge:{name}")

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> KnowledgeSource:
        """A `.json` file is loaded into memory; anything else is opened as an SQLite file."""
        if str(path).lower().endswith(".json"):
            return cls.from_json(path)
        return cls(path)

    # -- lookup ---------------------------------------------------------------------------
    def _load_titles(self) -> dict[str, str]:
        with self._lock:
            titles = [row[0] for row in self._db.execute("SELECT title FROM documents")]
        folded: dict[str, str] = {}
        for title in titles:
            folded.setdefault(str(title).casefold(), str(title))
        return folded

    def topics(self) -> list[str]:
        return sorted(self._titles.values())

    def __len__(self) -> int:
        return len(self._titles)

    def __contains__(self, topic: object) -> bool:
        return isinstance(topic, str) and self.resolve(topic) is not None

    def __repr__(self) -> str:
        return f"KnowledgeSource({self.name!r}, topics={len(self)})"

    def resolve(self, topic: str) -> str | None:
        """The stored title for `topic`: exact, else case-insensitive; None if absent."""
        return self._titles.get((topic or "").strip().casefold())

    def passages(self, topic: str) -> list[Passage]:
        """Every passage of the topic's article, in article order."""
        return list(self._index(topic).passages)

    def _index(self, topic: str) -> _TopicIndex:
        title = self.resolve(topic)
        if title is None:
            raise UnknownTopicError(f"topic {topic!r} is not in the knowledge source "
                                    f"{self.name} ({len(self)} topics)")
        with self._lock:
            index = self._indexes.get(title)
            if index is None:
                row = self._db.execute("SELECT text FROM documents WHERE title = ?",
                                       (title,)).fetchone()
                texts = [" ".join(_MARKERS.sub(" ", part).split())
                         for part in str(row[0] or "").split(SEPARATOR)]
                passages = [Passage(text=t, source=title) for t in texts if t]
                index = self._indexes[title] = _TopicIndex(passages)
        return index

    def get_passages(self, topic: str, query: str, k: int = SCORING_TOP_K) -> list[Passage]:
        """Top-k passages of the topic's own article for `"<topic> <query>"` (FActScore's query).

        Raises `UnknownTopicError` for a topic without an article.
        """
        if k <= 0:
            return []
        index = self._index(topic)
        return index.top(f"{topic} {query}", k)

    # -- as a general retriever -----------------------------------------------------------
    def __call__(self, query: str, k: int = DEFAULT_TOP_K) -> list[Passage]:
        """BM25 over all articles' passages (built on first call); sources are the titles."""
        with self._lock:
            if self._global is None:
                rows = self._db.execute("SELECT title, text FROM documents").fetchall()
                docs = {}
                for title, text in rows:
                    for number, part in enumerate(str(text or "").split(SEPARATOR)):
                        part = " ".join(_MARKERS.sub(" ", part).split())
                        if part:
                            docs[f"{title}\x00{number}"] = part
                longest = max((len(t) for t in docs.values()), default=1)
                self._global = LocalCorpus.from_texts(docs, chunk_chars=longest)
            corpus = self._global
        hits = corpus(query, k)
        return [p.model_copy(update={"source": p.source.split("\x00")[0]}) for p in hits]

    def close(self) -> None:
        with self._lock:
            self._db.close()
