"""Agreement: a true fact is changed only when the evidence says so twice.

A 1.5B verifier's single CONTRADICTED turned true facts into edits nobody asked for (false
alarms of 0.20 on the held-out split); a NOT_FOUND from a group's passages pruned facts the
passages did mention. These rules ask for a second, independent signal before a fact changes.
"""

from __future__ import annotations

from serc_dspy.core.text import split_sentences
from serc_dspy.core.trace import Witness
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.quotes import substituted_detail
from serc_dspy.rules.words import content_stems, is_number, key_terms, words_of

MIN_AGREEING = 2

register(
    Rule("agree.contradiction", "a contradicted fact is changed (corrected or pruned) only "
         "when two independent signals say CONTRADICTED: a cited verdict whose quote "
         "witnesses the conflict (or the group's verdict), a quote, found in the evidence, "
         "that gives exactly one of the claim's details another value (a witnessed swap, "
         "compared word by word, not judged by the LM), a second verdict by another prompt on "
         "the fact's own passages, the claim verifier; one signal alone leaves it `disputed`, "
         "in the draft's words", "each wrong CONTRADICTED on a true fact was an edit the user "
         "did not ask for; a witnessed swap is the case the LM misses most (the main job's "
         "\"Chemistry in 1903\", judged SUPPORTED twice against a quote saying Physics)",
         thresholds={"min_agreeing": MIN_AGREEING},
         acts_without_ruling=True),  # its agreeing second verdict is a call, no ruling
    Rule("evidence.empty_search", "a check node whose search returned no passages makes its "
         "facts NOT_FOUND, to be pruned unless another rule keeps them (off: they stay "
         "unverified, in the draft's words); a run whose every search came back empty fails "
         "instead", "the paper prunes what no evidence states; with no passages at all, the "
         "run-level check (`nothing_verified`) keeps an outage from pruning everything"),
    Rule("agree.not_found", "a NOT_FOUND fact is pruned only when no passage of its check "
         "mentions its key details (numbers and names, else its content words); otherwise it "
         "stays `unverified`", "grouped checks retrieve passages about the other facts; a "
         "fact their verdict calls NOT_FOUND was often stated in them",
         english_only=True),
    Rule("agree.found_swap", "a NOT_FOUND fact whose passages hold a sentence about the same "
         "event that gives exactly one of its details another value, while no passage states "
         "its own value, is judged again on that sentence alone; CONTRADICTED there makes it "
         "contradicted and witnessed (the swap and the second verdict agree), so correction "
         "swaps the detail back instead of pruning the fact", "on the tuning bios most caught "
         "planted errors were judged NOT_FOUND and pruned although a passage gave the true "
         "value (\"died on 30 April 1997\" beside \"died on 30 April 1993\")",
         english_only=True, found_on="noise bios 17-28 and 37-44 (tuning split)"),
)


def key_details(fact: str, subject: str) -> set[str]:
    """What a passage must name to be about the fact: its numbers and names beyond the
    subject's, else its content words (stems)."""
    skip = {w.lower() for w in words_of(subject)}
    numbers, names = key_terms(words_of(fact), skip)
    return ({n.lower() for n in numbers} | names) or content_stems(fact, subject)


def mentioned(fact: str, subject: str, passages: list[str]) -> bool:
    """Whether any passage names one of the fact's key details."""
    wanted = key_details(fact, subject)
    if not wanted:
        return False
    for text in passages:
        have = {w.lower() for w in words_of(text)} | content_stems(text, subject)
        if any(w in have for w in wanted if is_number(w) or len(w) > 2):
            return True
    return False


def swap_witnessed(witness) -> bool:
    """A quote that gives exactly one of the claim's details another value (`Witness.old`
    -> `Witness.new`): an independent, word-level signal."""
    return witness is not None and bool(witness.old) and bool(witness.new)


def contradicting(votes: dict[str, str]) -> int:
    return sum(1 for verdict in votes.values() if verdict == "CONTRADICTED")


def found_swap(fact: str, subject: str, passages: list[str]) -> tuple[Witness, str] | None:
    """The first passage sentence about the fact's event that gives exactly one of its details
    another value (`substituted_detail` with the strict same-event test), with that sentence;
    None when there is none, or when any passage states the detail the sentence replaces (the
    evidence may then support the fact)."""
    for text in passages:
        for sentence in split_sentences(text) or [text]:
            witness = substituted_detail(fact, sentence, subject, overrule=True)
            if not swap_witnessed(witness):
                continue
            old = witness.old.lower()
            if any(old in {w.lower() for w in words_of(p)} for p in passages):
                return None
            return witness, sentence
    return None
