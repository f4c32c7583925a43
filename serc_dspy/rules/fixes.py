"""Fixes: which corrections a contradicted fact accepts, and how a fix is mapped to its fact.

A 1.5B corrector restates its fact ("born in 1923" -> "born on 1923"), keeps the very detail the
evidence contradicts, copies the evidence over the fact, splits one fix into pieces, or quotes
its fix instead of the fact as `original`. These rules decide which replies are corrections.
"""

from __future__ import annotations

from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.words import content_stems, content_words, is_number, negations, stem

POSITIONAL_MIN_SIMILARITY = 0.3
"""A fix mapped to a fact by position alone must still resemble it (a rewording of one fact
scores 0.3-0.7; an unrelated sentence under 0.1)."""
LOSES_CONTENT_SHARE = 0.3
"""A fix may drop at most this share of its fact's content words (the swapped detail aside)."""

register(
    Rule("fix.restates", "a fix equal to its fact (case and punctuation aside) is no "
         "correction", "a small corrector answers with the fact itself"),
    Rule("fix.rewords", "a fix with the same content words and negations as its fact is no "
         "correction", "\"born in 1923\" -> \"born on 1923\" changes no fact",
         english_only=True),
    Rule("fix.keeps_contradicted", "a fix that still states every detail its quote "
         "contradicts is no correction", "\"appointed Knight of the Thistle in 2009\" -> "
         "\"knighted in 2009\" kept the contradicted year"),
    Rule("fix.empty", "an empty fix leaves the fact contradicted (and open for the retry), "
         "never pruned", "an empty reply is the corrector failing, not evidence that the fact "
         "is false beyond repair"),
    Rule("fix.propagated_delete", "a propagated (dependent-fact) change never deletes the "
         "fact", "logic propagation may rewrite a supported fact, never remove it"),
    Rule("fix.quote_evidence", "when every contradicted fact of a sentence cites a quote, "
         "the corrector reads those quotes as its evidence, not the check nodes' whole "
         "evidence (off: the check nodes' evidence)", "the sentences a verdict rests on are "
         "short and exact; a 1.5B corrector given whole passages copied other sentences' "
         "details into its fix"),
    Rule("fix.retry", "a contradicted fact left without a usable fix gets one more correction "
         "call, warmer (temperature 0.5)", "at temperature 0 the corrector repeats itself; "
         "off by default since its ablation on the Factcheck-Bench report split: off, it saved "
         "0.36 [0.05, 0.77] calls per answer and did not measurably hurt (false claims fixed "
         "or removed -0.045 [-0.222, 0.000], true claims kept +0.010 [0.000, 0.038])",
         default=False),
    Rule("fix.collateral", "a fix may change its contradicted detail and nothing else: it may "
         "drop only details its evidence does not state, add only details its evidence "
         "states, and negate only where its evidence negates", "a corrector dropped the true "
         "year, changed 1867 to 1999, swapped \"born\" for \"killed\", negated the fact or "
         "appended \"and she was a convicted fraudster\", and each was applied as a "
         "correction"),
    Rule("fix.join_pieces", "several unmatched pieces for one open fact are joined into its "
         "fix", "a small corrector splits one fix into pieces"),
    Rule("fix.positional", "unmatched fixes and open facts that pair up one to one are mapped "
         "in order, when each fix still resembles its fact", "a small model quotes its fix, "
         "not the fact, as `original`",
         thresholds={"min_similarity": POSITIONAL_MIN_SIMILARITY}),
    Rule("fix.swap_back", "when the quote swapped exactly one detail, swapping it back is the "
         "correction for a fact without a usable fix, or whose fix dropped other details",
         "a small model copies the evidence sentence over the fact (the main job's 1944 -> "
         "1934 death year kept its cause of death this way)",
         thresholds={"loses_content_share": LOSES_CONTENT_SHARE}, english_only=True),
)


def rewords(original: str, fixed: str, subject: str) -> bool:
    """Whether a "fix" says what its fact said: the same content words and numbers (only
    function words moved or changed) and the same negations. Small correctors answer
    "born in 1923" with "born on 1923", or drop an "also"; that changes no fact."""
    before, after = content_stems(original, subject), content_stems(fixed, subject)
    return bool(before) and before == after and negations(original) == negations(fixed)


def loses_content(original: str, fixed: str, kept_aside: str | None = None,
                  share: float = LOSES_CONTENT_SHARE) -> bool:
    """True when a fix drops more than `share` of its fact's content words (the swapped detail
    aside): a correction must change the wrong detail, not rewrite the fact away."""
    wanted = content_stems(original) - content_stems(kept_aside or "")
    return bool(wanted) and len(wanted - content_stems(fixed)) > share * len(wanted)




def collateral(original: str, fixed: str, evidence: str, subject: str = "",
               contradicted: str | None = None, *, words: bool = True) -> str | None:
    """What a fix changes beyond its contradicted detail, or None.

    The evidence is the only licence for a change. A detail the fix adds (a number, a name,
    with `words` any content word) must be in the fact or the evidence. A detail of the fact
    that the evidence states may go only as the one it replaces (a number for a number, a word
    for a word) or as the `contradicted` detail: "born in Kraków in 1867" -> "born in Warsaw"
    replaced Kraków and dropped the true 1867. A negation may be added or removed only where
    the evidence has one. A dependent's change (`words=False`) may reword freely, never add a
    number or name."""
    said = {_key(w) for w in content_words(evidence)}
    own = content_words(original, subject)
    new = content_words(fixed, subject)
    had, kept = {_key(w) for w in own}, {_key(w) for w in new}
    added = [w for w in new if _key(w) not in had and _key(w) not in said
             and (words or is_number(w) or w[0].isupper())]
    if added:
        return f"it adds {', '.join(dict.fromkeys(added))}, which the evidence does not state"
    aside = {_key(w) for w in content_words(contradicted or "")}
    dropped = [w for w in dict.fromkeys(own) if _key(w) not in kept and _key(w) in said
               and _key(w) not in aside]
    replaced = [w for w in dict.fromkeys(new) if _key(w) not in had]
    for numeric in (True, False):
        gone = [w for w in dropped if is_number(w) == numeric]
        if len(gone) > sum(is_number(w) == numeric for w in replaced):
            return f"it drops {', '.join(gone)}, which the evidence states"
    if negations(original) != negations(fixed) and not negations(evidence):
        return "it changes a negation the evidence does not have"
    return None


def _key(word: str) -> str:
    return word if is_number(word) else stem(word)
