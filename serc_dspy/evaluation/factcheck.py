"""Factcheck-Bench: correcting real ChatGPT errors, scored against the annotators' labels.

Each item is a ChatGPT answer (the draft) to a prompt (the question), decomposed by people into
claims, each labelled true or false, with a revised claim for each false one and the web
passages they verified it against. A method decodes the draft against that item's passages
only; the answer is then scored claim by claim:

- a **false** claim is `fixed` when the answer states what its revision states and no longer
  states the false detail, `removed` when it states neither, `left` otherwise;
- a **true** claim is `kept` when the answer still states it, `altered` when it now states
  something else, `removed` when it is gone;
- `introduced`: years, numbers and names of the answer found in neither the draft nor the
  item's passages.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import dspy
from pydantic import BaseModel, Field

from serc_dspy.errors import MalformedOutput, StepFailed, UserError, describe
from serc_dspy.evaluation.intervals import Pair, with_intervals
from serc_dspy.evaluation.noise import introduced, stem, verbatim_sentences
from serc_dspy.io import read_jsonl, read_jsonl_rows
from serc_dspy.retrieval.local import tokenize
from serc_dspy.signatures.evaluation import ClaimInAnswer
from serc_dspy.text import degenerate_sentences, normalise, split_sentences

Label = Literal["true", "false", "unknown"]
Outcome = Literal["fixed", "removed", "left", "kept", "altered"]
Path_ = Literal["verbatim", "details", "judge"]
Evidence = Literal["auto", "human"]

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
_URL_LINE = re.compile(r"\s*Link:\s*(https?://\S+)\s*$", re.I)
_NO_EVIDENCE = {"", "na", "no evidence", "none", "n/a"}


# -- the data -----------------------------------------------------------------------------------
class BenchClaim(BaseModel):
    index: int
    sentence: int
    sentence_text: str
    text: str
    label: Label
    revised: str = ""


class FactcheckItem(BaseModel):
    """One answer of the benchmark, with the passages of the chosen evidence kind."""

    id: str
    number: int
    question: str
    draft: str
    claims: list[BenchClaim]
    passages: list[tuple[str, str]] = Field(default_factory=list)
    """(source, text); the source is the passage's URL where the data gives one."""


def _label(value: Any) -> Label:
    if value is True or str(value).strip().lower() == "true":
        return "true"
    if value is False or str(value).strip().lower() == "false":
        return "false"
    return "unknown"


def _human_passage(raw: Any, where: str) -> tuple[str, str] | None:
    text = str(raw or "").strip()
    if text.lower().rstrip(".") in _NO_EVIDENCE or (text.startswith("http") and " " not in text):
        return None  # no evidence, or a bare link whose page the data does not hold
    link = _URL_LINE.search(text)
    if link:
        return link.group(1), text[: link.start()].strip()
    return where, text


def _item(row: dict[str, Any], number: int, path: Path, evidence: Evidence) -> FactcheckItem:
    def bad(reason: str) -> UserError:
        return UserError(f"{path}, line {number}: {reason}")

    for key in ("prompt", "response"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise bad(f"no {key!r} text")
    sentences = row.get("sentences")
    if not isinstance(sentences, dict):
        raise bad("no 'sentences' object")
    claims: list[BenchClaim] = []
    passages: dict[tuple[str, str], None] = {}
    for s_index, sentence in enumerate(sentences.values()):
        if not isinstance(sentence, dict):
            raise bad("a sentence is not an object")
        texts = sentence.get("claims") or []
        labels = sentence.get("claims_factuality_label") or []
        revised = sentence.get("revised_claims") or []
        for c_index, claim in enumerate(texts):
            label = _label(labels[c_index]) if c_index < len(labels) else "unknown"
            claims.append(BenchClaim(
                index=len(claims), sentence=s_index, sentence_text=str(sentence.get("text", "")),
                text=str(claim), label=label,
                revised=str(revised[c_index]) if c_index < len(revised) else ""))
        if evidence == "auto":
            for group, urls in zip(sentence.get("auto_evidence") or [],
                                   sentence.get("auto_evidence_url") or [], strict=False):
                for text, url in zip(group or [], urls or [], strict=False):
                    if str(text or "").strip():
                        passages[(str(url or f"factcheck item {number}"), str(text).strip())] = None
        else:
            for c_index, raw in enumerate(sentence.get("human_evidence") or []):
                found = _human_passage(raw, f"human evidence, item {number}, "
                                            f"sentence {s_index + 1}, claim {c_index + 1}")
                if found:
                    passages[found] = None
    return FactcheckItem(id=f"factcheck-{number}", number=number, question=row["prompt"].strip(),
                         draft=row["response"].strip(), claims=claims, passages=list(passages))


def load_factcheck(path: str | Path, *, evidence: Evidence = "auto") -> list[FactcheckItem]:
    """Every item of Factcheck-Bench's `benchmark_dev.jsonl`, numbered from 1 in file order.

    A line that is not a well-formed item is an error naming the file and line."""
    path = Path(path)
    if evidence not in ("auto", "human"):
        raise UserError(f"evidence must be 'auto' or 'human', got {evidence!r}")
    items = [_item(row, number, path, evidence)
             for number, row in read_jsonl_rows(path, what="Factcheck-Bench file")]
    if not items:
        raise UserError(f"{path} holds no Factcheck-Bench items (JSON lines)")
    return items


def trained_items(items: Sequence[FactcheckItem], state: Mapping[str, Any] | None
                  ) -> list[str]:
    """Ids of the items a compiled state learned from: a demo of any predictor quotes one of
    their claims or their prompt. Their figures would measure memory, not correction."""
    if not state:
        return []
    quoted: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            quoted.add(normalise(value))
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for predictor in (state.get("state") or {}).values():
        walk((predictor or {}).get("demos") or [])
    quoted.discard("")
    return [item.id for item in items
            if normalise(item.question) in quoted
            or any(normalise(c.text) in quoted for c in item.claims)]


# -- matching words -----------------------------------------------------------------------------
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


# -- the judge ----------------------------------------------------------------------------------
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


# -- scoring ------------------------------------------------------------------------------------
class ClaimScore(BaseModel):
    index: int
    label: Label
    claim: str
    outcome: Outcome | None = None
    path: Path_ | None = None
    error: str | None = None


class FactcheckScore(BaseModel):
    """One decoded answer."""

    id: str
    method: str
    answer_hash: str = ""
    claims: list[ClaimScore] = Field(default_factory=list)
    introduced: list[str] = Field(default_factory=list)
    degenerate: dict[int, str] = Field(default_factory=dict)
    draft_sentences: int = 0
    answer_sentences: int = 0
    verbatim_sentences: int = 0
    calls: int = 0
    tokens: int = 0


def answer_hash(answer: str) -> str:
    import hashlib

    return hashlib.sha256((answer or "").encode("utf-8")).hexdigest()[:16]


def score_answer(item: FactcheckItem, answer: str | None, *, method: str = "?",
                 judge: Callable[[str, str], str] | None = None, usage: Any = None
                 ) -> FactcheckScore:
    """Score one answer claim by claim (module docs). Without a judge, claims the words cannot
    decide stay unscored (`outcome` None)."""
    answer = answer or ""
    claims = []
    for claim in item.claims:
        if claim.label == "unknown":
            continue
        score = ClaimScore(index=claim.index, label=claim.label, claim=claim.text)
        decision = decide_by_words(claim, item.draft, answer)
        if decision.outcome is not None:
            score.outcome, score.path = decision.outcome, decision.path
        elif judge is not None:
            score.path = "judge"
            try:
                score.outcome = decide_by_judge(claim, answer, judge)
            except Exception as exc:  # recorded; the claim stays unscored and is retried
                score.error = describe(exc)
        claims.append(score)
    known = item.draft + "\n" + "\n".join(text for _, text in item.passages)
    draft_sentences = split_sentences(item.draft)
    return FactcheckScore(
        id=item.id, method=method, answer_hash=answer_hash(answer), claims=claims,
        introduced=introduced(answer, known), degenerate=degenerate_sentences(answer),
        draft_sentences=len(draft_sentences), answer_sentences=len(split_sentences(answer)),
        verbatim_sentences=verbatim_sentences(draft_sentences, answer),
        calls=getattr(usage, "calls", 0) or 0, tokens=getattr(usage, "total_tokens", 0) or 0)


def _count(score: FactcheckScore, label: str, outcome: str) -> Pair:
    scored = [c for c in score.claims if c.label == label and c.outcome is not None]
    return (float(sum(c.outcome == outcome for c in scored)), float(len(scored)))


def _perfect(score: FactcheckScore) -> Pair:
    scored = [c for c in score.claims if c.outcome is not None]
    if len(scored) < len(score.claims):
        return (0.0, 0.0)  # an unscored claim: the answer cannot be called perfect or not
    return (float(all(c.outcome in ("fixed", "kept") for c in scored)), 1.0)


FACTCHECK_FIGURES: dict[str, Callable[[FactcheckScore], Pair]] = {
    "fixed_rate": lambda s: _count(s, "false", "fixed"),
    "removed_rate": lambda s: _count(s, "false", "removed"),
    "residual_rate": lambda s: _count(s, "false", "left"),
    "fixed_or_removed_rate": lambda s: (_count(s, "false", "fixed")[0]
                                        + _count(s, "false", "removed")[0],
                                        _count(s, "false", "fixed")[1]),
    "kept_rate": lambda s: _count(s, "true", "kept"),
    "false_alarm_rate": lambda s: _count(s, "true", "altered"),
    "true_removed_rate": lambda s: _count(s, "true", "removed"),
    "perfect_answer_rate": _perfect,
    "introduced_per_answer": lambda s: (float(len(s.introduced)), 1.0),
    "degenerate_per_answer": lambda s: (float(len(s.degenerate)), 1.0),
    "verbatim_share": lambda s: ((s.verbatim_sentences / s.draft_sentences, 1.0)
                                 if s.draft_sentences else (0.0, 0.0)),
    "length_ratio": lambda s: ((s.answer_sentences / s.draft_sentences, 1.0)
                               if s.draft_sentences else (0.0, 0.0)),
    "calls_per_answer": lambda s: (float(s.calls), 1.0),
    "tokens_per_answer": lambda s: (float(s.tokens), 1.0),
}
"""Every figure as one `(part, whole)` pair per answer (see `intervals`)."""


def summarize_factcheck(scores: Iterable[FactcheckScore | None]) -> dict[str, Any]:
    """Rates with 95% intervals over answers, counts, and the share of claims each path
    scored."""
    scores = list(scores)
    ok = [s for s in scores if s is not None]
    failed = len(scores) - len(ok)
    claims = [c for s in ok for c in s.claims]
    summary: dict[str, Any] = with_intervals(
        {name: [pair_of(s) for s in ok] for name, pair_of in FACTCHECK_FIGURES.items()})
    summary.update({
        "items": len(ok), "failed": failed,
        "false_claims": sum(c.label == "false" for c in claims),
        "true_claims": sum(c.label == "true" for c in claims),
        "unscored_claims": sum(c.outcome is None for c in claims),
        "paths": {p: (sum(c.path == p and c.outcome is not None for c in claims) / len(claims)
                      if claims else None) for p in ("verbatim", "details", "judge")},
    })
    return summary


def read_scores(path: str | Path) -> dict[str, FactcheckScore | None]:
    """`RUN.factcheck.jsonl`: score rows by id (None for a failed answer)."""
    return {str(row["id"]): None if row.get("failed") else FactcheckScore.model_validate(row)
            for row in read_jsonl(path, what="Factcheck-Bench scores") if "id" in row}


# -- the judge against people -------------------------------------------------------------------
class LabelledClaim(BaseModel):
    """A claim, an answer, and what a person decided the answer does with the claim."""

    item: str
    method: str = ""
    claim: BenchClaim
    draft: str
    answer: str
    outcome: Outcome
    note: str = ""


def load_labels(path: str | Path) -> list[LabelledClaim]:
    rows = []
    for number, row in read_jsonl_rows(path, what="judge labels"):
        try:
            rows.append(LabelledClaim.model_validate(row))
        except ValueError as exc:
            raise UserError(f"{path}, line {number}: not a labelled claim "
                            f"({describe(exc)})") from None
    return rows


def packaged_labels() -> Path:
    """The hand-labelled sample shipped with the package."""
    import importlib.resources

    return Path(str(importlib.resources.files("serc_dspy") / "evaluation" / "data"
                    / "factcheck_judge_labels.jsonl"))


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
