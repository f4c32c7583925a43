"""Quotes: a cited verdict held to the evidence sentence it cites.

With `verdicts="fact"` the verifier quotes the evidence sentence its verdict rests on. Small
verifiers quote the right sentence and still answer SUPPORTED ("born in Kraków" against
"born ... in Warsaw"), contradict true facts citing a paragraph about something else, or
"quote" the claim itself. These rules read the quote: they find the detail it gives another
value for (a `Witness`), overrule a verdict the quote contradicts, and refuse a contradiction
that cites nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from serc_dspy.core.text import normalise, similarity, split_sentences
from serc_dspy.core.trace import Witness
from serc_dspy.rules.base import Rule, RuleSet, register
from serc_dspy.rules.words import (
    event_stems,
    key_terms,
    original_case,
    stem,
    words_of,
)

MIN_SWAP_CONTEXT = 3
"""Content words a claim needs before one swapped word can witness a contradiction."""
ECHO_SIMILARITY = 0.9
"""A "quote" this close to its claim, yet absent from the evidence, is the claim echoed back."""

register(
    Rule("quote.absent", "a cited quote that is not in the evidence is set aside: the verdict "
         "stands on the verifier's word", "a verifier \"quotes\" what it made up or the claim"),
    Rule("quote.echo", "a CONTRADICTED verdict whose quote is the claim itself, absent from "
         "the evidence, becomes NOT_FOUND", "a contradiction citing nothing was \"corrected\" "
         "from thin air on bios 1-8", thresholds={"echo_similarity": ECHO_SIMILARITY},
         found_on="noise bios 1-8 (tuning split)"),
    Rule("quote.overrule", "a verdict whose quote, from the evidence, gives another number, "
         "name or date for the same event becomes CONTRADICTED",
         "small verifiers quote \"born ... in Warsaw\" and answer SUPPORTED for \"born in "
         "Kraków\" (the main job's Nobel Prize error)", english_only=True,
         thresholds={"same_event_share": 0.5, "max_extra_names": 2}),
    Rule("quote.witness", "a CONTRADICTED verdict keeps the detail its quote swaps (the "
         "witness), which correction may swap back", "the minimal correction of a swapped year "
         "is the year", english_only=True, thresholds={"min_swap_context": MIN_SWAP_CONTEXT}),
    Rule("quote.second_vote", "a CONTRADICTED verdict without a witness gets a second, uncited "
         "verdict: SUPPORTED keeps the fact, any other vote prunes it; it is never rewritten",
         "on the held-out split every such contradiction of a true fact was \"corrected\" into "
         "a false one (\"born on April 8, 1944\" -> \"April 7\"); off by default since its "
         "ablation on the Factcheck-Bench report split: switching it off did not measurably "
         "hurt (false claims fixed or removed -0.136 [-0.294, 0.000]) and kept more true "
         "claims (+0.030 [0.000, 0.093]), and agree.contradiction now leaves such a fact "
         "disputed in the draft's words instead of pruning it on one more vote",
         english_only=True, default=False, found_on="noise bios 17-28 (tuning split)"),
)

# A quote "is about the same event" as a claim when this share of one side's content words
# occurs in the other.
SAME_EVENT_SHARE = 0.5
MAX_EXTRA_NAMES = 2
"""Names a swap's quote may carry beyond those it swaps in (a country after a city)."""


def _same_event(claim: str, quote: str, subject: str, *, overrule: bool = False) -> bool:
    """Half the event words of the claim, or of the quote, are shared. To overrule a verdict
    the claim's side must be: half its event words, and two of them when it has two ("radium"
    alone does not make "isolated radium in 1910" the event of "discovered radium in 1898")."""
    c_words, q_words = event_stems(claim, subject), event_stems(quote, subject)
    if overrule:  # the names being swapped are the detail, not the event: set them aside
        skip = {w.lower() for w in words_of(subject)}
        c_names = {stem(n) for n in key_terms(words_of(claim), skip)[1]}
        q_names = {stem(n) for n in key_terms(words_of(quote), skip)[1]}
        c_words, q_words = c_words - (c_names - q_names), q_words - (q_names - c_names)
    if not c_words or not q_words:
        return False
    shared = len(c_words & q_words)
    if overrule:
        return shared / len(c_words) >= SAME_EVENT_SHARE and shared >= min(2, len(c_words))
    return max(shared / len(c_words), shared / len(q_words)) >= SAME_EVENT_SHARE


def _quoted_sentences(quote: str) -> list[str]:
    """A verifier asked for one sentence often copies a whole passage; each of its sentences
    is read on its own, or the names and dates of the others would blur the one that counts."""
    return split_sentences(quote) or [quote]


def _first_witness(found: list[Witness | None]) -> Witness | None:
    """A swap of one detail for one (which can be undone) before a looser one."""
    found_ = [w for w in found if w is not None]
    return next((w for w in found_ if w.old and w.new), found_[0] if found_ else None)


def substituted_detail(claim: str, quote: str, subject: str, *, same_event: bool = True,
                       overrule: bool = False) -> Witness | None:
    """The detail a cited evidence sentence gives another value for, or None.

    Each sentence of the quote is read on its own (see `_in_sentence`); `overrule=True`, for
    a claim the verifier did not contradict, asks for more shared event words.
    """
    return _first_witness([_in_sentence(claim, sentence, subject, same_event=same_event,
                                        overrule=overrule)
                           for sentence in _quoted_sentences(quote)])


def _in_sentence(claim: str, quote: str, subject: str, *, same_event: bool = True,
                 overrule: bool = False) -> Witness | None:
    """The detail a cited evidence sentence gives another value for, or None.

    Small verifiers quote the right sentence and still answer SUPPORTED ("born in Kraków"
    against "born ... in Warsaw"). When the quote is about the same event (half its content
    words shared, and the same date if the claim has one) and both sides carry a number, or a
    name, that the other lacks, the quote substitutes that detail: the claim is contradicted.
    `same_event=False` skips the same-event test, for a claim already judged CONTRADICTED
    whose swapped detail is wanted. Numbers pair with numbers of as many digits (a year with
    a year, not with the day of the month).
    """
    claim_words, quote_words = words_of(claim), words_of(quote)
    skip = {w.lower() for w in words_of(subject)}
    if same_event and not _same_event(claim, quote, subject, overrule=overrule):
        return None
    c_numbers, c_names = key_terms(claim_words, skip)
    q_numbers, q_names = key_terms(quote_words, skip)
    q_name_stems = {stem(n) for n in q_names}
    c_name_stems = {stem(n) for n in c_names}
    pairs = []
    claim_numbers = c_numbers - q_numbers
    shapes = {len(n) for n in claim_numbers}
    quote_numbers = {n for n in q_numbers - c_numbers if len(n) in shapes}
    if claim_numbers and quote_numbers:
        pairs = [(claim_numbers, quote_numbers)]
    else:
        claim_only = {n for n in c_names if stem(n) not in q_name_stems}
        quote_only = {n for n in q_names if stem(n) not in c_name_stems}
        anchored = (not same_event or not c_numbers  # a dated claim needs a dated quote
                    or bool(c_numbers & q_numbers))
        # A swap replaces a name or two; a quote with many names the claim lacks is about
        # something else ("appeared in Masti (2004)" against a 2004 music video's credits).
        if claim_only and quote_only and anchored and \
                len(quote_only) <= len(claim_only) + MAX_EXTRA_NAMES:
            pairs = [(claim_only, quote_only)]
    if not pairs:
        return None
    olds, news = pairs[0]
    reason = (f"the evidence says {', '.join(sorted(news))} where the claim says "
              f"{', '.join(sorted(olds))}")
    contradicted = tuple(sorted(original_case(term, claim_words) for term in olds))
    if len(olds) == 1 and len(news) == 1:
        return Witness(reason=reason, old=original_case(next(iter(olds)), claim_words),
                       new=original_case(next(iter(news)), quote_words),
                       contradicted=contradicted)
    return Witness(reason=reason, contradicted=contradicted)


def swapped_word(claim: str, quote: str, subject: str) -> Witness | None:
    """The one content word of a claim that a quote about the same event says differently.

    Role and field swaps are lower-case ("a child painter" against "a child actor"), so
    `substituted_detail`, which pairs numbers and names, cannot see them. A quote that repeats
    every content word of the claim but one (the claim having at least three) is about the
    same event and replaces that word. The replacement is not located, so the substitution
    only witnesses the contradiction; the corrector finds the new word in the quote.
    """
    claim_stems = event_stems(claim, subject)
    if len(claim_stems) < MIN_SWAP_CONTEXT:
        return None
    for sentence in _quoted_sentences(quote):
        missing = claim_stems - event_stems(sentence, subject)
        old = next((w for w in words_of(claim) if stem(w) in missing), None)
        if len(missing) == 1 and old:
            return Witness(reason=f"the evidence repeats the claim except {old!r}",
                           contradicted=(old,))
    return None


def contradiction_witness(claim: str, quote: str, subject: str) -> Witness | None:
    """What in a quote, taken from the evidence, shows that a claim is wrong: a number or name
    it gives another value for in the same event, or the one content word it replaces. None
    means the quote shows no conflict, and a CONTRADICTED verdict citing it rests on the
    verifier's word alone."""
    witness = substituted_detail(claim, quote, subject)
    if witness is None:
        # A quote that shares only some of the event's words ("died in 1944 of anaemia" and
        # "died on 4 July 1934 at a sanatorium") still witnesses one detail swapped for one.
        for sentence in _quoted_sentences(quote):
            if not event_stems(claim, subject) & event_stems(sentence, subject):
                continue
            loose = _in_sentence(claim, sentence, subject, same_event=False)
            if loose is not None and loose.old and loose.new:
                witness = loose
                break
    return witness or swapped_word(claim, quote, subject)


def opening_name(claim: str) -> str:
    """The capitalised words a claim opens with ("Marie Curie was born..." -> "Marie Curie"):
    a stand-in subject for claims that come without one, as in the labelled stage data."""
    words = []
    for word in words_of(claim):
        if not word[0].isupper():
            break
        words.append(word)
    return " ".join(words)


@dataclass(frozen=True)
class HeldVerdict:
    """A cited verdict after it has been held to its own quote (`hold_to_quote`)."""

    verdict: str
    witness: Witness | None = None  # the detail the quote gives another value for
    rule: str | None = None  # the rule that changed the verdict, or ruled on the quote
    note: str | None = None  # why

    @property
    def unwitnessed(self) -> bool:
        """A contradiction that rests on the verifier's word alone: it needs a second vote."""
        return self.verdict == "CONTRADICTED" and self.witness is None


def hold_to_quote(verdict: str, claim: str, quote: str | None, evidence: str,
                  subject: str, rules: RuleSet | None = None) -> HeldVerdict:
    """Hold a cited verdict to its quote, the rule `SERC.cross_check` runs and the
    `verify_cited` compile stage scores.

    - `quote.absent`: a quote not taken from the evidence proves nothing, and is set aside.
    - `quote.echo`: a contradiction that cites the claim itself there (an echo) rests on
      nothing: NOT_FOUND, so it is pruned, never "corrected" from thin air.
    - `quote.overrule`: a quote from the evidence that gives another value for one of the
      claim's details contradicts the claim, whatever a small model answered
      (`substituted_detail`, with the stricter same-event test for overruling).
    - `quote.witness`: a CONTRADICTED verdict keeps its witness (`contradiction_witness`)
      for the correction; without one it is `unwitnessed`.
    """
    def on(rule: str) -> bool:
        return rules is None or rules.on(rule)

    if not quote:
        return HeldVerdict(verdict)
    if normalise(quote) not in normalise(evidence) and on("quote.absent"):
        if verdict == "CONTRADICTED" and similarity(quote, claim) >= ECHO_SIMILARITY and \
                on("quote.echo"):
            return HeldVerdict("NOT_FOUND", rule="quote.echo",
                               note="judged CONTRADICTED citing the claim itself, which the "
                                    "evidence does not contain; NOT_FOUND")
        return HeldVerdict(verdict, rule="quote.absent",
                           note="its quote is not in the evidence; set aside")
    if verdict == "CONTRADICTED":
        witness = contradiction_witness(claim, quote, subject) if on("quote.witness") else None
        return HeldVerdict(verdict, witness, "quote.witness" if witness else None,
                           witness.reason if witness else None)
    if not on("quote.overrule"):
        return HeldVerdict(verdict)
    witness = substituted_detail(claim, quote, subject, overrule=True)
    if witness is None:
        return HeldVerdict(verdict)
    return HeldVerdict("CONTRADICTED", witness, "quote.overrule",
                       f"judged {verdict}, but {witness.reason}; CONTRADICTED")
