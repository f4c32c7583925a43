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
from serc_dspy.retrieval.local import LocalCorpus

__all__ = [
    "DEFAULT_CONTEXT_CHARS",
    "DEFAULT_TOP_K",
    "CorpusError",
    "LocalCorpus",
    "RetrievalError",
    "Retriever",
    "as_retriever",
    "cap_context",
]
