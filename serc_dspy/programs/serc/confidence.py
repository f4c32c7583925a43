"""How sure the chooser was: each option's probability, read from the log-probabilities of the
letter the model wrote, where the backend returns them (llama.cpp's server, SGLang, OpenAI).

A choice decoded under grammar gives one letter; the log-probabilities of the alternatives the
model weighed at that token say how close the others came. Asked in two option orders, a value's
probability in each order (the letter it stood at) is averaged: position bias, which lifts the
first letters, then weighs on every value alike. `choose.pooled` reads that average where the
two orders chose different values.
"""

from __future__ import annotations

import math
from typing import Any

from serc_dspy.core.trace import Candidate
from serc_dspy.rules.answers import POOLED_MARGIN

TOP_LOGPROBS = 10
"""Alternatives asked for at each token: more than the six letters an option list can hold."""
LOGPROBS_CONFIG = {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
"""The call configuration that asks a backend for them."""

Asked = tuple[list[str | None], list[dict[str, float]]]
"""One slot's asking: the value chosen in each option order, and each order's probabilities."""


def letter_probabilities(reply: Any, letters: str, field: str = "choice") -> dict[str, float]:
    """Each option letter's probability at the token where the reply wrote its letter (the
    first letter token after the output `field`'s name), over the letters alone (the grammar
    allowed no other token there); {} when the reply carries no log-probabilities, or no letter
    among them."""
    logprobs = getattr(reply, "logprobs", None)
    content = logprobs.get("content") or [] if isinstance(logprobs, dict) else []
    options = set(letters)

    def letter(token: dict[str, Any]) -> str:
        return str(token.get("token", "")).strip(' "\'')

    seen = ""
    for token in content:
        if field in seen and letter(token) in options:
            best: dict[str, float] = {}
            for alt in [token, *(token.get("top_logprobs") or [])]:
                if letter(alt) in options:
                    best[letter(alt)] = max(best.get(letter(alt), -math.inf),
                                            float(alt["logprob"]))
            total = sum(math.exp(v) for v in best.values())
            return {k: math.exp(v) / total for k, v in best.items()}
        seen += str(token.get("token", ""))
    return {}


def value_probabilities(order: list[Candidate], letters: dict[str, float],
                        all_letters: str) -> dict[str, float]:
    """The letters' probabilities as the values they stood for in one option order ({} for
    no letters)."""
    if not letters:
        return {}
    return {c.value: letters.get(letter, 0.0)
            for letter, c in zip(all_letters[:len(order)], order, strict=True)}


def pooled(distributions: list[dict[str, float]]) -> dict[str, float]:
    """Each value's probability averaged over the orders asked; {} unless every order has
    one (a backend without log-probabilities, or a reply without a letter)."""
    if not distributions or not all(distributions):
        return {}
    values = {v for d in distributions for v in d}
    return {v: round(sum(d.get(v, 0.0) for d in distributions) / len(distributions), 4)
            for v in sorted(values)}


def pooled_leader(confidence: dict[str, float], margin: float = POOLED_MARGIN) -> str | None:
    """The value whose pooled probability leads every other's by at least `margin`."""
    ranked = sorted(confidence.items(), key=lambda kv: kv[1], reverse=True)
    if not ranked:
        return None
    if len(ranked) == 1 or ranked[0][1] - ranked[1][1] >= margin:
        return ranked[0][0]
    return None
