"""Shared fixtures for the evaluation tests: a tiny knowledge source and scripted handlers."""

from __future__ import annotations

import json
from pathlib import Path

WIKI = {
    "Ada Lovelace": {
        "resolved_title": "Ada Lovelace",
        "extract": "Augusta Ada King, Countess of Lovelace, was an English mathematician. "
                   "She was born in London in 1815.\n\n\n== Work ==\n"
                   "She worked with Charles Babbage on the Analytical Engine. She wrote the "
                   "first published algorithm for that machine.\n\n== References ==\n"
                   "Ada Lovelace biography at some site.",
    },
    "Alan Turing": {
        "resolved_title": "Alan Turing",
        "extract": "Alan Turing was a British computer scientist. He was born in 1912 in Maida "
                   "Vale, London. He worked at Bletchley Park during the Second World War.",
    },
}

ANSWERS = {
    "Tell me a bio of Ada Lovelace.":
        "Ada Lovelace was born in London. She was born in 1816. She worked with Babbage.",
    "Tell me a bio of Alan Turing.":
        "Alan Turing was born in 1912. He worked at Bletchley Park.",
}


def split_facts(inputs):
    """AtomicFacts: one fact per sentence, pronouns replaced by the subject."""
    sentence = inputs["sentence"].strip()
    for pronoun in ("She ", "He "):
        if sentence.startswith(pronoun):
            sentence = inputs["subject"] + " " + sentence[len(pronoun):]
    return {"facts": [sentence]}


def supported_if_last_word_in_passages(inputs):
    """ClaimSupported: SUPPORTED iff the fact's last word occurs in the given passages."""
    last = inputs["fact"].rstrip(".").split()[-1]
    return {"label": "SUPPORTED" if last in inputs["passages"] else "NOT_SUPPORTED"}


def write_entities(path: Path, entities) -> Path:
    path.write_text("\n".join(entities) + "\n", encoding="utf-8")
    return path


def write_wiki(path: Path) -> Path:
    path.write_text(json.dumps(WIKI), encoding="utf-8")
    return path
