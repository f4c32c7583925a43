"""Evidence retrieval for check nodes: the `Retriever` contract and a local BM25 corpus."""

from serc_dspy.retrieval.base import (
    DEFAULT_CONTEXT_CHARS,
    DEFAULT_TOP_K,
    CorpusError,
    RetrievalError,
    Retriever,
    as_retriever,
    cap_context,
)
from serc_dspy.retrieval.cache import CachedRetriever, CacheError
from serc_dspy.retrieval.local import LocalCorpus

# TavilyRetriever lives in serc_dspy.retrieval.tavily and needs the [tavily] extra, so it is
# imported from there rather than here.
__all__ = [
    "CacheError",
    "CachedRetriever",
    "DEFAULT_CONTEXT_CHARS",
    "DEFAULT_TOP_K",
    "CorpusError",
    "LocalCorpus",
    "RetrievalError",
    "Retriever",
    "as_retriever",
    "cap_context",
]
