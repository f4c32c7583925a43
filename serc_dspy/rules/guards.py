"""Guards: a rewrite or a polish may restate its input, never change it.

A 1.5B rewriter loops, recites its instructions, drops or adds a detail, swaps "studied at" for
"was expelled from", or adds "never"; and the rewrite never sees the draft's sentence, so a
detail the extractor left out is lost. Each guard that refuses an output is a rule, and so is
each fallback the refused output is replaced by.
"""

from __future__ import annotations

import difflib
import re

from serc_dspy.core.text import (
    SHORT_ANSWER_CHARS,
    SHORT_SENTENCE_CHARS,
    is_refusal,
    is_wide,
    normalise,
    text_size,
    words,
)
from serc_dspy.rules.base import Rule, RuleSet, register
from serc_dspy.rules.hygiene import ungrounded
from serc_dspy.rules.words import (
    STOP,
    content_stems,
    content_words,
    is_number,
    negations,
    stem,
    words_of,
)

RUNAWAY_RATIO = 2.0
RUNAWAY_SLACK = 120
DRIFT_MIN_OVERLAP = 0.4

register(
    Rule("rewrite.too_short", f"a rewrite under {SHORT_SENTENCE_CHARS} characters (by "
         "`text_size`) is refused", "an empty or one-word rewrite states nothing",
         thresholds={"min_chars": SHORT_SENTENCE_CHARS}),
    Rule("rewrite.runaway", "a rewrite far longer than its facts is refused",
         "a small model loops or recites its instructions",
         thresholds={"ratio": RUNAWAY_RATIO, "slack_chars": RUNAWAY_SLACK}),
    Rule("rewrite.unfaithful", "a rewrite that drops or adds a number or name of its facts is "
         "refused", "a rewrite that adds a date writes an unverified fact into the answer"),
    Rule("rewrite.lost_content", "a rewrite that drops a content word or changes a negation "
         "of its facts is refused", "a rewrite dropped a lowercase fact, or added \"never\"",
         english_only=True),
    Rule("rewrite.orphan", "a rewrite that drops a number or name of the draft's sentence that "
         "no fact carries is refused", "the extractor left \"1867\" out, and the rewrite, "
         "which never sees the sentence, lost it"),
    Rule("rewrite.in_place", "a refused rewrite is replaced by the draft's sentence with each "
         "correction made in place, when every change can be placed",
         "the draft's own words keep what the facts missed"),
    Rule("rewrite.state_facts", "otherwise, the corrected facts stated one by one, when that "
         "loses no detail of the sentence", "the corrected facts are complete sentences"),
    Rule("rewrite.keep_sentence", "otherwise the draft's sentence stays, its corrections not "
         "applied (its facts uncorrected / unverified)", "the trace must never claim a change "
         "the answer does not carry"),
    Rule("polish.too_short", f"a polish under {SHORT_ANSWER_CHARS} characters is refused",
         "an empty polish is a failure, not an answer",
         thresholds={"min_chars": SHORT_ANSWER_CHARS}),
    Rule("polish.refusal", "a polish that refuses to answer is refused", "a small model "
         "apologises instead of polishing", english_only=True),
    Rule("polish.drift", "a polish sharing under 40% of the draft's content words is refused",
         "a polish may reorder and merge, never change the topic",
         thresholds={"min_overlap": DRIFT_MIN_OVERLAP}),
    Rule("polish.unfaithful", "a polish that drops or adds a number or name is refused",
         "the polish must add no information (in any language: digits and capitals are not "
         "English)"),
    Rule("polish.lost_content", "a polish that drops a content word or changes a negation is "
         "refused", "a polish dropped a sentence, or swapped \"studied at\" for \"was "
         "expelled from\"", english_only=True),
    Rule("polish.runaway", "a polish far longer than its draft is refused",
         "a small model loops", thresholds={"ratio": RUNAWAY_RATIO,
                                            "slack_chars": RUNAWAY_SLACK}),
    Rule("polish.layout", "a draft with paragraphs, list lines or code is not polished",
         "a polish flattens the layout"),
    Rule("polish.in_place", "an answer whose every change was made in place in the draft's "
         "sentences (`rewrite.in_place`) is not polished",
         "the draft's own words need no smoothing, and a polish call could only move them "
         "(one call and about 500 tokens a run)"),
    Rule("decode.too_short", f"a decoding that leaves under {SHORT_ANSWER_CHARS} characters "
         "returns the received answer unchanged (status fallback)", "the paper's rule: most "
         "facts were pruned", thresholds={"min_chars": SHORT_ANSWER_CHARS}),
)


def is_runaway(output: str, source: str, *, ratio: float = RUNAWAY_RATIO,
               slack: int = RUNAWAY_SLACK) -> bool:
    """True when an output is far longer than what it was written from: rewriting and
    polishing may only restate their input, so a text over `ratio` times its source (plus some
    slack for connecting words) is a loop or recited instructions, not a restatement."""
    return len(output) > ratio * len(source) + slack


def drifted(output: str, source: str, *, min_overlap: float = DRIFT_MIN_OVERLAP) -> bool:
    """True when a rewrite shares too few content words with what it was written from: a polish
    may reorder and merge, never change the topic."""
    def content(text: str) -> set[str]:
        return {w for w in words(normalise(text)) if len(w) > 3 or is_wide(w)}

    wanted = content(source)
    return bool(wanted) and len(content(output) & wanted) < min_overlap * len(wanted)


def unstated_details(sentence: str, facts: list[str], subject: str) -> str | None:
    """Why a rewritten sentence is not a faithful statement of its facts, or None.

    It must keep every number and name of its facts, and add none the facts do not have.
    """
    source = " ".join(facts)
    added = ungrounded(sentence, source, subject, words=False)
    if added:
        return f"it adds {added.removesuffix(' not in the sentence')}"
    have = {w.lower() for w in words_of(sentence)}
    lost = sorted({w for w in words_of(source) if (is_number(w) or w[0].isupper())
                   and w.lower() not in have and w.lower() not in STOP})
    return f"it drops {', '.join(lost)}" if lost else None


def lost_content(output: str, sources: list[str], subject: str) -> str | None:
    """Why `output` does not say everything `sources` say, or None: every content word (by its
    first five letters) and every negation of the sources must survive, and the output may
    add no negation. A rewrite or a polish may reorder and join, never drop or negate."""
    source = " ".join(sources)
    lost = sorted(content_stems(source, subject) - content_stems(output, subject))
    if lost:
        return f"it drops {', '.join(lost)}"
    before, after = negations(source), negations(output)
    if before != after:
        changed = sorted((before - after) | (after - before))
        return f"it changes the negation ({', '.join(changed)})"
    return None


def orphan_details(sentence: str, facts: list[str], subject: str) -> list[str]:
    """Numbers and names of a sentence that none of its extracted facts carries (the
    extractor left them out): a rewrite from the facts would lose them."""
    have = {w.lower() for w in words_of(" ".join(facts) + " " + subject)}
    words = words_of(sentence)
    found = []
    for position, word in enumerate(words):
        capital = word[0].isupper() and (position > 0 or len(words) == 1)
        if (is_number(word) or capital) and word.lower() not in have \
                and word.lower() not in STOP:
            found.append(word)
    return list(dict.fromkeys(found))


def dropped_words(sentence: str, facts: list[str], rewrite: str, subject: str) -> list[str]:
    """Content words of a draft sentence that no extracted fact carried and its rewrite lost
    ("a teacher", left out by the extractor): what the answer no longer says, reported as
    dropped. Numbers and names are `orphan_details`, which refuse the rewrite instead."""
    carried = content_stems(" ".join(facts) + " " + rewrite, subject)
    return list(dict.fromkeys(w for w in content_words(sentence, subject)
                              if not is_number(w) and not w[0].isupper()
                              and stem(w) not in carried))


REMOVE_CLAUSE_SHARE = 0.6
"""A pruned fact is its clause when the clause holds this share of the fact's content words."""
_CLAUSE_EDGE = re.compile(r"(\s*(?:,\s*(?:and|but|while)\s+|;\s*|,\s+|\s+and\s+))")


def remove_clause(sentence: str, fact: str, subject: str) -> str | None:
    """The sentence without the clause that states `fact` (a pruned fact), or None when no
    single clause other than the first (the sentence's own subject and verb) states it."""
    end = sentence.rstrip()[-1:] if sentence.rstrip()[-1:] in ".!?" else ""
    parts = _CLAUSE_EDGE.split(sentence.rstrip().rstrip(".!?"))
    clauses, edges = parts[0::2], parts[1::2]
    wanted = content_stems(fact, subject)
    if len(clauses) < 2 or not wanted:
        return None
    shares = [len(content_stems(c, subject) & wanted) / len(wanted) for c in clauses]
    best = max(range(len(clauses)), key=lambda i: shares[i])
    if best == 0 or shares[best] < REMOVE_CLAUSE_SHARE or shares.count(shares[best]) > 1:
        return None
    kept = [clauses[0]]
    for i in range(1, len(clauses)):
        if i != best:
            kept += [edges[i - 1], clauses[i]]
    return "".join(kept) + end


def minimal_edit(sentence: str, changes: list[tuple[str, str | None]],
                 subject: str = "") -> str | None:
    """The sentence with each fact's change made in place, or None when one cannot be placed.

    A change `(fact, correction)` is placed when the words the correction replaces occur once
    in the sentence; a pruned fact (`correction` None) takes out its own clause
    (`remove_clause`), never more."""
    text = sentence
    for fact, fixed in changes:
        if not fixed:
            removed = remove_clause(text, fact, subject)
            if removed is None:
                return None
            text = removed
            continue
        old, new = fact.split(), fixed.split()
        matcher = difflib.SequenceMatcher(None, [w.lower() for w in old],
                                          [w.lower() for w in new], autojunk=False)
        edits = [(" ".join(old[a:b]).strip(".,;"), " ".join(new[c:d]).strip(".,;"))
                 for tag, a, b, c, d in matcher.get_opcodes() if tag != "equal"]
        if not edits:
            continue
        for before, after in edits:
            if not before or text.count(before) != 1:
                return None
            text = text.replace(before, after, 1)
    return text if text != sentence else None


def _loses(text: str, details: list[str]) -> str | None:
    gone = [d for d in details if d.lower() not in text.lower()]
    return f"it drops {', '.join(gone)}, which no fact carries" if gone else None


def rewrite_problem(text: str, facts: list[str], orphans: list[str], subject: str,
                    rules: RuleSet) -> tuple[str, str] | None:
    """(rule, why) when a rewrite of `facts` must be refused, or None."""
    checks = [
        ("rewrite.too_short", lambda: "was empty or too short"
         if text_size(text) < SHORT_SENTENCE_CHARS else None),
        ("rewrite.runaway", lambda: f"ran away ({len(text)} characters)"
         if is_runaway(text, " ".join(facts)) else None),
        ("rewrite.unfaithful", lambda: _unfaithful(unstated_details(text, facts, subject))),
        ("rewrite.lost_content", lambda: _unfaithful(lost_content(text, facts, subject))),
        ("rewrite.orphan", lambda: _unfaithful(_loses(text, orphans))),
    ]
    return _first(checks, rules)


def polish_problem(answer: str, draft: str, subject: str, rules: RuleSet
                   ) -> tuple[str, str] | None:
    """(rule, why) when a polish of `draft` must be refused, or None."""
    checks = [
        ("polish.too_short", lambda: "was empty or too short"
         if text_size(answer) < SHORT_ANSWER_CHARS else None),
        ("polish.refusal", lambda: "refused" if is_refusal(answer) else None),
        ("polish.drift", lambda: "left the draft's topic" if drifted(answer, draft) else None),
        ("polish.unfaithful", lambda: _unfaithful(unstated_details(answer, [draft], subject))),
        ("polish.lost_content", lambda: _unfaithful(lost_content(answer, [draft], subject))),
        ("polish.runaway", lambda: f"ran away ({len(answer)} characters for a "
         f"{len(draft)}-character draft)" if is_runaway(answer, draft) else None),
    ]
    return _first(checks, rules)


def _first(checks, rules: RuleSet) -> tuple[str, str] | None:
    for rule, check in checks:
        if rules.on(rule):
            reason = check()
            if reason:
                return rule, reason
    return None


def _unfaithful(reason: str | None) -> str | None:
    return f"is not faithful ({reason})" if reason else None
