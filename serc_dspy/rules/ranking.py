"""A short answer's options ranked by the question: the evidence values whose surrounding words
are the question's own come first, so that the few options a 1.5B model reads hold the one the
question describes ("... a military theorist popularly known as what?": "Popularly known as the
Desert Fox"), not merely the first names of the sentences that share most words with it.

HotpotQA's bridge questions (HaluEval's) describe their answer through a second paragraph; the
first one's names, in the passages' order, used to fill the option cap before it was reached."""

from __future__ import annotations

import re

from serc_dspy.core.trace import Candidate
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.rivals import RIVAL_FRAME_WORDS, frame_stems
from serc_dspy.rules.slots import EvidenceSentence
from serc_dspy.rules.words import content_stems, words_of

ASKED_WINDOW = RIVAL_FRAME_WORDS
"""Words on each side of an option, in each evidence sentence naming it, that are read for the
question's words."""

register(
    Rule("choose.asked_rank", "a short answer's options are the evidence's values of the asked "
         "kind ranked by how many of the question's content words stand within "
         "`asked_window` words of them, in any evidence sentence that names them (the "
         "passages' order breaks ties), before the option cap is applied",
         "on HaluEval questions outside the tuning items, the answer of a two-paragraph "
         "question stood in its second paragraph, and the first paragraph's names filled the "
         "cap: the right value was no option (\"Carol Lawrence\" after four other performers, "
         "\"the Desert Fox\" after four names of the general's paragraph); off by default: "
         "on HaluEval's report items it fired on 6 hallucinated answers, fixed none and lost "
         "2 that the passages' order had let the chooser fix (counted, not read), as a "
         "multi-hop question describes its bridge entity in the evidence's words too",
         english_only=True, thresholds={"asked_window": ASKED_WINDOW}, default=False,
         found_on="HaluEval extra tuning items 20, 93"),
)


def asked_score(question: str, own: str, value: str, evidence: list[EvidenceSentence]) -> int:
    """The most content words of the question (the draft's and the value's own words aside)
    that stand within `ASKED_WINDOW` words of the value, over the evidence sentences naming
    it."""
    skip = {w.lower() for w in words_of(f"{own} {value}")}
    asked = content_stems(question) - content_stems(f"{own} {value}")
    if not asked:
        return 0
    best = 0
    for sentence in evidence:
        for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", sentence.text):
            best = max(best, len(asked & frame_stems(sentence.text, m.start(), m.end(), skip,
                                                     ASKED_WINDOW)))
    return best


def rank_by_question(question: str, options: list[Candidate], evidence: list[EvidenceSentence],
                     keep: int) -> list[Candidate]:
    """The options with the evidence's values ranked by `asked_score` (stable: the given order
    breaks ties) and cut to `keep` of them; the draft's own value stays first and "not stated"
    (any option not from the evidence) last."""
    own = options[0].value if options and options[0].origin == "fact" else ""
    found = [c for c in options if c.origin == "evidence"]
    scores = {id(c): asked_score(question, own, c.value, evidence) for c in found}
    ranked = sorted(found, key=lambda c: -scores[id(c)])[:keep]
    head = [c for c in options if c.origin == "fact"]
    tail = [c for c in options if c.origin not in ("fact", "evidence")]
    return head + ranked + tail

