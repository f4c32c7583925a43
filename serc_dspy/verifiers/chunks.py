"""Evidence cut into chunks a 512-token encoder can read with the claim.

MiniCheck's way: chunks of about `chunk_words` words at sentence boundaries, never across two
evidence items, each distinct chunk once. A claim's score is then its best over the chunks
(`classifier`), so one chunk that states the claim is enough.
"""

from __future__ import annotations

from collections.abc import Sequence

from serc_dspy.core.errors import UserError
from serc_dspy.core.text import split_sentences

DEFAULT_CHUNK_WORDS = 200
"""About 270 tokens of English: with the claim, a chunk fits a 512-token encoder."""


def _word_windows(sentence: str, size: int) -> list[str]:
    words = sentence.split()
    return [" ".join(words[i:i + size]) for i in range(0, len(words), size)]


def chunk_passage(text: str, chunk_words: int = DEFAULT_CHUNK_WORDS) -> list[str]:
    """`text` cut into chunks of at most `chunk_words` words, at sentence boundaries (a longer
    sentence is cut into windows of `chunk_words` words)."""
    if chunk_words < 1:
        raise UserError(f"chunk_words must be at least 1, not {chunk_words}")
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        for piece in _word_windows(sentence, chunk_words):
            words = len(piece.split())
            if current and count + words > chunk_words:
                chunks.append(" ".join(current))
                current, count = [], 0
            current.append(piece)
            count += words
    if current:
        chunks.append(" ".join(current))
    return chunks


def chunk_evidence(evidence: str | Sequence[str],
                   chunk_words: int = DEFAULT_CHUNK_WORDS) -> list[tuple[int, str]]:
    """(passage index, chunk) for every chunk of every evidence item, each distinct chunk once,
    in order. A chunk never spans two items."""
    items = [evidence] if isinstance(evidence, str) else list(evidence)
    seen: set[str] = set()
    out: list[tuple[int, str]] = []
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise UserError(f"evidence must be a string or a list of strings, not "
                            f"{type(item).__name__}")
        for chunk in chunk_passage(item, chunk_words):
            if chunk not in seen:
                seen.add(chunk)
                out.append((index, chunk))
    return out
