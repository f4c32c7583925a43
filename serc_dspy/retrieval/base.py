"""The retrieval contract shared by every corpus backend and by the check nodes.

Check nodes only ever see `Retriever`s: anything callable as `(query, k) -> list[Passage]`.
Backends written by users (web search, vector stores, plain functions) are wrapped with
`as_retriever` so a malformed result fails loudly at the boundary instead of deep inside a
DSPy program, and the context sent to the LM is bounded by `cap_context`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from serc_dspy.core.errors import StepFailed, UserError, WrongArgumentType
from serc_dspy.core.text import clean_text, split_sentences, words
from serc_dspy.core.trace import Passage

DEFAULT_TOP_K = 8
"""Passages per query: the paper retrieves the top 8 results for each verification query."""

DEFAULT_CONTEXT_CHARS = 20_000
"""The paper truncates the concatenated search context at 20,000 characters."""


class RetrievalError(StepFailed):
    """A retriever failed or returned something that is not a list of passages."""


class CorpusError(UserError):
    """A corpus could not be loaded; the message is one line a CLI user can act on."""


@runtime_checkable
class Retriever(Protocol):
    """Anything callable as `(query, k) -> list[Passage]`.

    A Protocol rather than a base class so that plain functions and third-party objects
    qualify without inheriting from us.
    """

    def __call__(self, query: str, k: int) -> list[Passage]: ...


def _content_words(text: str) -> set[str]:
    """Lower-cased words that carry content: numbers, and words longer than three letters
    (which drops most function words without a stopword list)."""
    return {word.lower() for word in words(text) if len(word) > 3 or word[0].isdigit()}


def passage_window(passage: Passage, claims: str | Sequence[str], sentences: int) -> Passage:
    """The passage cut to the sentences about `claims` (its source kept): for each claim, the
    `sentences` consecutive sentences around the one that shares the most words with it, in
    the passage's own order. A check node's facts share one cut, so every verdict of the node
    reads the same evidence (which the engine serves from its cache after the first) and the
    engine processes a fraction of the tokens. At most `sentences` per claim are kept; a claim
    that shares no word with any sentence adds none, and if no claim does, the passage keeps
    its first `sentences`."""
    parts = split_sentences(passage.text)
    claims = [claims] if isinstance(claims, str) else list(claims)
    if len(parts) <= sentences:
        return passage
    kept: set[int] = set()
    for claim in claims:
        wanted = _content_words(claim)
        scores = [len(wanted & _content_words(part)) for part in parts]
        if not any(scores):
            continue
        best = max(range(len(parts)), key=lambda i: scores[i])
        start = max(0, min(best - (sentences - 1) // 2, len(parts) - sentences))
        kept.update(range(start, start + sentences))
    if not kept:
        kept = set(range(sentences))
    if len(kept) == len(parts):
        return passage
    return passage.model_copy(update={"text": " ".join(parts[i] for i in sorted(kept))})


def cap_context(passages: list[Passage], max_chars: int = DEFAULT_CONTEXT_CHARS) -> list[Passage]:
    """Keep passages in rank order until their texts total `max_chars` characters.

    The paper truncates the search context at 20,000 characters; applying the same budget
    keeps prompts within the LM's window and makes runs comparable with the paper. The
    passage that crosses the limit is cut to fit (lower-ranked ones are dropped) so the
    budget is used fully without ever being exceeded. Inputs are not mutated.
    """
    kept: list[Passage] = []
    remaining = max_chars
    for passage in passages:
        if remaining <= 0:
            break
        if len(passage.text) <= remaining:
            kept.append(passage)
        else:
            kept.append(passage.model_copy(update={"text": passage.text[:remaining]}))
        remaining -= len(kept[-1].text)
    return kept


class _CheckedRetriever:
    """A retriever wrapper that turns loose outputs into `Passage`s or a `RetrievalError`.

    Any exception from the wrapped callable is re-raised as `RetrievalError` (chained), so
    callers need to handle exactly one exception type per query.
    """

    def __init__(self, fn: Callable[[str, int], Any]) -> None:
        self.wrapped = fn
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.name: str = str(getattr(fn, "name", None) or self.__name__)
        self.takes_k = _arity(fn, self.name)

    def __call__(self, query: str, k: int = DEFAULT_TOP_K) -> list[Passage]:
        if k <= 0:
            return []
        try:
            result = self.wrapped(query, k) if self.takes_k else self.wrapped(query)
            # Read inside the failure policy: a generator (or any lazy iterable) fails only
            # while it is being read, and a dropped connection then is an outage too.
            passages = [self._to_passage(item) for item in self._items(result)][:k]
        except (RetrievalError, UserError):
            raise  # configuration errors (a rejected key, a bad corpus) are not outages
        except Exception as exc:
            raise RetrievalError(f"retriever {self.name} failed: {exc}") from exc
        for passage in passages:
            if looks_like_error(passage.text):
                raise RetrievalError(f"retriever {self.name} returned an error message as a "
                                     f"passage: {passage.text[:120]!r}")
        return passages

    def __repr__(self) -> str:
        return f"as_retriever({self.wrapped!r})"

    def _items(self, result: Any) -> Iterable[Any]:
        """Accept any non-text iterable: a lone string or dict is a bug, not one passage.

        A DSPy retriever's `Prediction(passages=[...])` (what `dspy.Retrieve` returns) is
        unwrapped to its passages.
        """
        passages = getattr(result, "passages", None)
        if passages is not None and not isinstance(result, str | bytes | Mapping):
            result = passages
        if result is None:
            raise RetrievalError(f"retriever {self.name} returned None; expected a list")
        if isinstance(result, str | bytes | Mapping | BaseModel) or not isinstance(
            result, Iterable
        ):
            raise RetrievalError(
                f"retriever {self.name} returned {type(result).__name__}; expected a list"
            )
        return result

    def _to_passage(self, item: Any) -> Passage:
        if isinstance(item, Passage):
            return item.model_copy(update={"text": clean_text(item.text),
                                           "source": clean_text(item.source)})
        if isinstance(item, str):
            return Passage(text=clean_text(item))
        if isinstance(item, Mapping) and "error" in item and not isinstance(item.get("text"), str):
            raise RetrievalError(f"retriever {self.name} returned an error: "
                                 f"{str(item['error'])[:200]}")
        if isinstance(item, Mapping) and isinstance(item.get("text"), str):
            return self._from_mapping(item)
        if isinstance(item, Mapping) and isinstance(item.get("long_text"), str):
            return self._from_mapping({**item, "text": item["long_text"]})
        raise RetrievalError(
            f"retriever {self.name} returned an item of type {type(item).__name__}; "
            "expected Passage, str or dict with a 'text' (or 'long_text') string"
        )

    def _from_mapping(self, item: Mapping[str, Any]) -> Passage:
        try:
            return Passage(
                text=clean_text(item["text"]),
                source=clean_text(str(item.get("source") or "")),
                score=float(item.get("score") or 0.0),
            )
        except (TypeError, ValueError, ValidationError) as exc:
            raise RetrievalError(f"retriever {self.name} returned a bad dict: {exc}") from exc


def _arity(fn: Callable[..., Any], name: str) -> bool:
    """Whether `fn` takes `(query, k)` (True) or just `(query)` (False); anything else is a
    configuration error, raised now rather than as a failed check node on every query."""
    import inspect

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True  # builtins and C callables: assume the documented (query, k)
    for args in (("q", 1), ("q",)):
        try:
            signature.bind(*args)
            return len(args) == 2
        except TypeError:
            continue
    raise UserError(f"retriever {name} must be callable as f(query, k) or f(query); its "
                    f"signature is {signature}")


# Error text that backends (and the reference implementation) hand back in place of passages.
_ERROR_TEXT = re.compile(
    r"^\s*(\[\s*(retrieval|search)\s+error\s*\]|\{\s*[\"']error[\"']\s*:|"
    r"(error|exception|traceback \(most recent call last\))\s*:|"
    r"(search|retrieval) (failed|error)\b)",
    re.IGNORECASE)
# An HTTP error page or status line returned as text ("Error 503: ...", "503 Service
# Unavailable", "HTTP/1.1 502 Bad Gateway", "Internal Server Error"), possibly inside HTML tags.
_HTTP_REASONS = (r"bad request|unauthori[sz]ed|forbidden|not found|request time-?out|"
                 r"too many requests|internal server error|not implemented|bad gateway|"
                 r"service (temporarily )?unavailable|gateway time-?out")
_HTTP_ERROR_TEXT = re.compile(
    r"^\s*(<[^>]{0,200}>\s*)*("
    r"(http(/\d(\.\d)?)?\s+|status(\s+code)?\s*:?\s*)?(error\s*)?[45]\d\d\s*[:\-]?\s*"
    rf"({_HTTP_REASONS})\b|"
    r"(http\s+)?error\s*[45]\d\d\b|"
    r"http(/\d(\.\d)?)?\s+[45]\d\d\b|"
    r"status(\s+code)?\s*:?\s*[45]\d\d\b|"
    r"(internal server error|service (temporarily )?unavailable|gateway time-?out|"
    r"too many requests)\b)",
    re.IGNORECASE)


def looks_like_error(text: str) -> bool:
    """True for the obvious forms of an error message returned as passage text, HTTP error
    statuses and pages included."""
    return bool(_ERROR_TEXT.match(text or "") or _HTTP_ERROR_TEXT.match(text or ""))


def as_retriever(fn: Callable[[str, int], Any]) -> Retriever:
    """Wrap any `(query, k)` callable so its output is always a validated `list[Passage]`.

    Items may be `Passage`, `str` or a dict with `text` (and optional `source`, `score`);
    results are trimmed to `k`. Wrapping is idempotent, and the wrapper exposes the
    original's `name`/`__name__` so traces and logs can say which backend answered.
    """
    if isinstance(fn, _CheckedRetriever):
        return fn
    if not callable(fn):
        raise WrongArgumentType(f"as_retriever needs a callable, got {type(fn).__name__}")
    return _CheckedRetriever(fn)
