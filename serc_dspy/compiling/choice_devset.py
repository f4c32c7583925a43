"""The `choose` stage's examples: details of Wikipedia bios, masked, with the options the
article offers for them, labelled with the letter of the value the article states.

Each sentence of an article's opening that has a slot with a rival value in the article gives
two examples with the same blanked claim, built as SERC builds them at run time (`find_slots`,
`focus`, `collect_candidates`, the options in the order asked first): one whose first option,
the draft's own, is the article's value ("own"), and one whose first option is a rival planted
in its place, as the planted-error bench does ("planted"), the article's value then offered
among the evidence's. Either way the label is the article's value: the evidence decides, never
an option's position, the bias the 1.5B model showed on every split."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import dspy

from serc_dspy.compiling.devsets import Split, _id, _Item, _split
from serc_dspy.core.text import split_sentences
from serc_dspy.core.trace import Candidate, Passage, Slot
from serc_dspy.programs.serc.orders import LETTERS, option_orders, shown
from serc_dspy.retrieval.knowledge import article_text, read_knowledge_json
from serc_dspy.rules.frames import preceding_word
from serc_dspy.rules.slots import (
    about_subject,
    blank_in,
    collect_candidates,
    find_slots,
    focus,
)

OPENING_SENTENCES = 8
"""Sentences of each article's opening read for slots (the bios' densest details)."""


def _example(claim: str, evidence: str, options: list[Candidate], answer: str) -> dspy.Example:
    order = option_orders(options)[0]
    letter = LETTERS[[c.value for c in order].index(answer)]
    listed = "\n".join(f"{k}) {shown(c)}" for k, c in zip(LETTERS, order, strict=False))
    return dspy.Example(evidence=evidence, claim=claim, options=listed, choice=letter
                        ).with_inputs("evidence", "claim", "options")


def choice_items(articles: str | os.PathLike[str] | Mapping[str, Any]
                 ) -> tuple[list[_Item], dict[str, Any]]:
    """Two examples ("own", "planted") per slot with a rival, grouped by article."""
    items: list[_Item] = []
    counts = {"articles": 0, "slots": 0, "no_rival": 0}
    for topic, value in read_knowledge_json(articles, what="articles file").items():
        text = article_text(topic, value)
        text = "\n\n".join(text) if isinstance(text, list) else text
        counts["articles"] += 1
        evidence = about_subject([Passage(text=text, title=topic)], topic)
        for sentence in split_sentences(text)[:OPENING_SENTENCES]:
            if "==" in sentence:  # a section heading glued to its first sentence
                continue
            about = focus(evidence, sentence, topic)
            shown_evidence = "\n".join(s.text for s in about)
            for slot in find_slots(sentence, sentence, topic):
                if slot.start == 0:  # a sentence's capitalised first word is seldom a name
                    continue
                frame = preceding_word(sentence, slot.start)
                options = collect_candidates(slot, sentence, about, topic, frame)
                rivals = [c for c in options if c.origin == "evidence"]
                counts["slots"] += 1
                if not rivals:
                    counts["no_rival"] += 1
                    continue
                claim = blank_in(sentence, slot.text)
                if not claim:
                    continue
                items.append(_Item(_id(topic, sentence, slot.text, "own"), topic,
                                   _example(claim, shown_evidence, options, slot.text), "own"))
                planted = _planted(sentence, slot, rivals[0], about, topic, frame)
                if planted is not None:
                    items.append(_Item(_id(topic, sentence, slot.text, "planted"), topic,
                                       _example(claim, shown_evidence, planted, slot.text),
                                       "planted"))
    counts.update(examples=len(items), skipped=counts["no_rival"],
                  source=str(articles) if not isinstance(articles, Mapping) else "a mapping")
    return items, counts


def _planted(sentence: str, slot: Slot, rival: Candidate, about, topic: str, frame
             ) -> list[Candidate] | None:
    """The options SERC builds for the sentence with `rival` planted in the slot's place;
    None when the article's own value is not among them."""
    wrong = sentence[:slot.start] + rival.value + sentence[slot.start + len(slot.text):]
    planted = Slot(kind=slot.kind, text=rival.value, start=slot.start)
    options = collect_candidates(planted, wrong, about, topic, frame)
    return options if any(c.value == slot.text for c in options) else None


def load_choice_examples(articles: str | os.PathLike[str] | Mapping[str, Any], *,
                         train: int | None = None, dev: int | None = None, seed: int = 0,
                         dev_share: float = 0.5) -> Split:
    """The `choose` stage's split: by article, "own" and "planted" examples interleaved."""
    items, counts = choice_items(articles)
    split = _split(items, counts, train=train, dev=dev, seed=seed, dev_share=dev_share,
                   balanced=True)
    split.train = shortest_first(split.train)
    return split


def shortest_first(examples: list[dspy.Example]) -> list[dspy.Example]:
    """The train examples, shortest first, still alternating between those whose answer is
    the first option and those whose answer is not: a demo is read on every choice call, so
    `LabeledFewShot`'s first k cost the fewest prompt tokens, and they never teach a
    position."""
    def size(example: dspy.Example) -> int:
        return len(example.evidence) + len(example.claim) + len(example.options)

    first = sorted((e for e in examples if e.choice == LETTERS[0]), key=size)
    other = sorted((e for e in examples if e.choice != LETTERS[0]), key=size)
    ordered = [e for pair in zip(first, other, strict=False) for e in pair]
    rest = first[len(other):] + other[len(first):]
    return ordered + rest
