"""Does an answer still state a claim, state its revision, or neither? The scoring paths.

"The answer states X" is decided by the first path that can decide it:
1. `verbatim`: the claim's draft sentence is in the answer word for word;
2. `details`: deterministic matching of the claim's words (stemmed, stopwords out, number
   words as digits, negation as a token) in the answer's sentences and sentence pairs. For a
   false claim whose revision swaps a few details ("once" -> "three times"), the swapped words
   are looked for beside the words the two share; for a true claim, the share of its words
   found (all: kept; under a third: removed);
3. `judge`: an LM reads the claim and the answer (`ClaimInAnswer`) where the words cannot
   decide: a rewritten revision, a negation, a partly reworded claim.
Every claim records its path, and the summary reports which share each path scored. The
judge's agreement with hand labels is measured by `judge_agreement`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import dspy
from pydantic import BaseModel

from serc_dspy.core.errors import MalformedOutput, StepFailed, describe
from serc_dspy.core.text import normalise, split_sentences
from serc_dspy.evaluation.factcheck_items import BenchClaim, LabelledClaim, Outcome
from serc_dspy.evaluation.intervals import Pair, with_intervals
from serc_dspy.evaluation.noise import stem
from serc_dspy.retrieval.local import tokenize
from serc_dspy.signatures.evaluation import ClaimInAnswer

Path_ = Literal["verbatim", "details", "judge"]

ANCHOR = 0.5
"""Share of the words a false claim and its revision share that must stand beside a swapped
detail for the answer to state it (so "three" alone, elsewhere, states nothing)."""
KEPT_ALL = 1.0
REMOVED_BELOW = 1 / 3
"""A true claim with under this share of its words in any answer window is gone."""
MAX_SWAPPED = 3
"""A revision that changes more words than this is a rewrite: the judge decides it."""
NEGATION = "NOT"
_NEGATIONS = frozenset({"not", "no", "never", "n't", "cannot", "none", "neither", "nor"})
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "once": "1",
    "twice": "2", "thrice": "3", "hundred": "100", "thousand": "1000", "million": "1000000",
    "billion": "1000000000",
}
def claim_words(text: str) -> set[str]:
    """The words a claim is matched by: stems of its content words, number words as digits,
    and `NOT` when it is negated (stopword lists drop "not")."""
    lowered = (text or "").lower().replace("n't", " not")
    words = set()
    for raw in re.findall(r"[\w'’.-]+", lowered):
        token = raw.strip(".'’-")
        if token in _NEGATIONS:
            words.add(NEGATION)
        elif token in _NUMBER_WORDS:
            words.add(_NUMBER_WORDS[token])
        elif re.fullmatch(r"\d[\d,]*(?:\.\d+)?", token):
            words.add(token.replace(",", ""))  # one-digit numbers too, which tokenize drops
    for token in tokenize(lowered):
        if token in _NUMBER_WORDS or token in _NEGATIONS:
            continue
        if not token.isdigit():
            words.add(stem(token))
    return words


def _windows(answer: str) -> list[set[str]]:
    """The answer's sentences, and each pair of neighbours (a claim a rewrite split in two)."""
    sentences = [claim_words(s) for s in split_sentences(answer)]
    return sentences + [a | b for a, b in zip(sentences, sentences[1:], strict=False)]


def _coverage(words: set[str], windows: list[set[str]]) -> float:
    if not words:
        return 0.0
    return max((len(words & w) / len(words) for w in windows), default=0.0)


def _states(wanted: set[str], anchor: set[str], windows: list[set[str]]) -> bool:
    need = ANCHOR * len(anchor)
    return any(wanted <= w and len(anchor & w) >= need for w in windows)


def _in_answer(sentence: str, answer: str) -> bool:
    return bool(normalise(sentence)) and normalise(sentence) in normalise(answer)


class Decision(BaseModel):
    outcome: Outcome | None = None
    path: Path_ | None = None
    """None: the words cannot decide, ask the judge."""


def revisable(claim: BenchClaim) -> bool:
    """A false claim whose revision says something else (some revisions repeat the claim, or
    are a note such as "No evidence shows ..."): only those can be fixed."""
    revised = normalise(claim.revised)
    return bool(revised) and revised != normalise(claim.text) \
        and not revised.startswith("no evidence")


def decide_by_words(claim: BenchClaim, draft: str, answer: str) -> Decision:
    """The deterministic paths (module docs); `Decision()` when they cannot decide."""
    false = claim.label == "false"
    if normalise(answer) == normalise(draft) or _in_answer(claim.sentence_text, answer):
        return Decision(outcome="left" if false else "kept", path="verbatim")
    windows = _windows(answer)
    in_draft = claim_words(draft)
    words = claim_words(claim.text) & in_draft
    if false and revisable(claim):
        said, fixed = claim_words(claim.text), claim_words(claim.revised)
        removed, added, shared = said - fixed, fixed - said, said & fixed
        if (NEGATION in removed | added or not removed or len(removed) > MAX_SWAPPED
                or len(added) > MAX_SWAPPED + 1 or len(shared) < 2 or not removed <= in_draft):
            return Decision()
        if _states(removed, shared, windows):
            return Decision(outcome="left", path="details")
        if added and _states(added, shared, windows) or \
                not added and _coverage(shared, windows) >= KEPT_ALL or \
                _states_a_value_in_range(claim.revised, added, shared, windows):
            return Decision(outcome="fixed", path="details")
        return Decision(outcome="removed", path="details")
    if not words:
        return Decision()
    coverage = _coverage(words, windows)
    if coverage >= KEPT_ALL:
        return Decision(outcome="left" if false else "kept", path="details")
    if coverage < REMOVED_BELOW:
        return Decision(outcome="removed", path="details")
    return Decision()


_RANGE = re.compile(r"\b(\w+)\s*(?:to|-|–)\s*(\w+)\b")


def _states_a_value_in_range(revised: str, added: set[str], shared: set[str],
                             windows: list[set[str]]) -> bool:
    """A revision that gives a range ("six to seven new stars") is stated by an answer that
    gives any number in it ("about 7 stars"), beside the rest of what it adds."""
    for low, high in _RANGE.findall(revised.lower()):
        a, b = (_NUMBER_WORDS.get(low, low), _NUMBER_WORDS.get(high, high))
        if not (a.isdigit() and b.isdigit()) or int(b) - int(a) > 1000:
            continue
        values = {str(v) for v in range(int(a), int(b) + 1)}
        rest = added - values
        if any(_states(rest | {v}, shared, windows) for v in values):
            return True
    return False


JudgeVerdict = Literal["states", "contradicts", "silent"]


class ClaimJudge:
    """Asks an LM what an answer says about one claim (`ClaimInAnswer`), one retry on a failed
    call. `lm` None uses the context's LM."""

    def __init__(self, lm: Any = None, *, attempts: int = 2):
        self.lm = lm
        self.attempts = attempts
        self.predict = dspy.Predict(ClaimInAnswer)
        self.calls = 0

    def __call__(self, claim: str, answer: str) -> JudgeVerdict:
        error: Exception | None = None
        for attempt in range(self.attempts):
            try:
                config = {"temperature": 0.7} if attempt else {}
                with dspy.context(**({"lm": self.lm} if self.lm is not None else {})):
                    self.calls += 1
                    verdict = self.predict(claim=claim, answer=answer, config=config).verdict
                if verdict in ("states", "contradicts", "silent"):
                    return verdict
                error = MalformedOutput(f"unexpected verdict {verdict!r}")
            except Exception as exc:  # a parse failure or an outage: retry, then report
                error = exc
        raise StepFailed(f"the claim judge failed: {describe(error)}")


def decide_by_judge(claim: BenchClaim, answer: str, judge: Callable[[str, str], str]) -> Outcome:
    said = judge(claim.text, answer)
    if claim.label != "false":
        return {"states": "kept", "contradicts": "altered", "silent": "removed"}[said]
    if said == "states":
        return "left"
    if revisable(claim) and judge(claim.revised, answer) == "states":
        return "fixed"
    return "removed"


def judge_agreement(labels: Sequence[LabelledClaim], judge: Callable[[str, str], str]
                    ) -> dict[str, Any]:
    """How often each scoring path gives the person's outcome: the judge on every labelled
    claim, and the word paths on the claims they decide."""
    judge_hits: list[Pair] = []
    words_hits: list[Pair] = []
    failures = 0
    for row in labels:
        decision = decide_by_words(row.claim, row.draft, row.answer)
        if decision.outcome is not None:
            words_hits.append((float(decision.outcome == row.outcome), 1.0))
        try:
            outcome = decide_by_judge(row.claim, row.answer, judge)
            judge_hits.append((float(outcome == row.outcome), 1.0))
        except Exception:  # counted, not fatal: the agreement is over the judged rows
            failures += 1
    judged = with_intervals({"agreement": judge_hits})
    worded = with_intervals({"agreement": words_hits})
    return {"labels": len(labels),
            "judge": {**judged, "n": len(judge_hits), "failed": failures},
            "words": {**worded, "n": len(words_hits)}}
