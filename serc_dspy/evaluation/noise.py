"""Scoring a decoding of a planted-error draft: what was caught, fixed, deleted or left, what
true content survived, and what the decoder made up.

Per injected error (see `injection`):
- `detected`: a fact carrying the injected value got CONTRADICTED or NOT_FOUND (from the trace;
  a method without facts counts as detecting what it changed);
- `corrected`: the injected value is gone and the original is back;
- `deleted`: the injected value is gone and the original is not back (pruned or rewritten);
- `left`: the injected value is still in the answer.

Per clean unit of the draft, `preserved`, `altered` (a false alarm that changed true content)
or `pruned`; the false-alarm rate and preservation are means over bios of those shares. Units
do not depend on the method: they are decided once per draft, from its text alone, one per
clause of each sentence (see `draft_units`), so what an extractor never produced still counts
when it is lost. A unit is preserved when all of its details (years, numbers, capitalised
names) and content words are still in the answer, pruned when fewer than half are, and
altered otherwise. Injected values are never part of a unit: the error counts score them.

Beside the units, per bio: the share of the draft's error-free sentences that come back
verbatim, the answer's degenerate sentences (`text.degenerate_sentences`: tautologies,
repeats, runs of restatements), and the answer's length in sentences against the draft's.

`introduced` are years, numbers and capitalised names of the answer found in neither the draft
nor the article: invented content the decoder verified into the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, NonNegativeInt

from serc_dspy.core.text import degenerate_sentences, split_sentences
from serc_dspy.core.trace import Trace
from serc_dspy.evaluation.injection import ROLES, NoisyDraft
from serc_dspy.evaluation.intervals import Pair, with_intervals
from serc_dspy.retrieval.local import tokenize

ErrorOutcomeName = Literal["corrected", "deleted", "left"]
UnitOutcomeName = Literal["preserved", "altered", "pruned"]

_DETAIL = re.compile(r"(?<![\w-])\d+(?:[.,]\d+)*(?:st|nd|rd|th|s)?(?![\w-])"
                     r"|(?<![\w-])[A-Z][\w'’-]+(?: [A-Z][\w'’-]+)*")
"""Whole tokens, bounded as `count` bounds them: "15th" and "1960s" are details of their own,
never "15" or "1960", and "70-71" (a range) gives neither number."""
_FUNCTION_WORDS = frozenset("""
a an the he she they it his her their its in on at of and or but as by for from to with was is
were are be been this that these those after before during when while since until then there
here who whom whose which what where why how also both later early born died known
has had have having
""".split())


def count(text: str, value: str) -> int:
    """Word-bounded, case-insensitive occurrences of `value` in `text`."""
    if not value:
        return 0
    return len(re.findall(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text or "", re.IGNORECASE))


def details(text: str) -> list[str]:
    """Years, numbers, capitalised names and role words of a text, each once, in order."""
    found = []
    for m in _DETAIL.finditer(text or ""):
        value = m.group(0)
        if value.lower() in _FUNCTION_WORDS:
            continue
        words = value.split()
        while words and words[0].lower() in _FUNCTION_WORDS:  # "The Beatles" -> "Beatles"
            words = words[1:]
        if words:
            found.append(" ".join(words))
    found += [r for r in ROLES if count(text, r)]
    return list(dict.fromkeys(found))


_CLAUSE_BREAK = re.compile(r"\s*(?:[;:()\[\]–—]|,\s+|\s-\s)\s*")
MIN_CLAUSE_TOKENS = 3
"""A piece of a sentence with fewer tokens than this joins its neighbour: "Jane Doe" alone is
no clause, and units of one word would make every reworded sentence a false alarm."""
PRUNED_BELOW = 0.5
"""A unit with less than this share of its tokens left in the answer is pruned, not altered."""


def stem(word: str) -> str:
    """A light suffix strip, so "composed" meets "composer"'s sentence as "compos": enough to
    tell a kept word from a lost one, without a stemmer model."""
    word = word.lower().removesuffix("'s").removesuffix("’s")
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def content_stems(text: str) -> list[str]:
    """Stems of the words of a text that are no stopwords and no digits, each once."""
    return list(dict.fromkeys(stem(t) for t in tokenize(text or "")
                              if not t.isdigit() and len(t) > 2
                              and t not in _FUNCTION_WORDS))


class DraftUnit(BaseModel):
    """One clause of a draft sentence: the details and content words a reader would miss."""

    sentence: int
    text: str
    details: list[str] = Field(default_factory=list)
    words: list[str] = Field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.details) + len(self.words)


def _piece_tokens(piece: str) -> tuple[list[str], list[str]]:
    found = details(piece)
    inside = {stem(w) for d in found for w in tokenize(d)}
    return found, [w for w in content_stems(piece) if w not in inside]


def _clauses(sentence: str) -> list[list[str]]:
    """The sentence cut at clause punctuation, each clause a list of its pieces: a piece too
    small to stand alone joins its neighbour (details are read per piece, so "Union (UCR)"
    never becomes one name)."""
    pieces = [p for p in _CLAUSE_BREAK.split(sentence) if p and p.strip(" .,")]
    merged: list[list[str]] = []

    def size(group: list[str]) -> int:
        return sum(len(a) + len(b) for a, b in map(_piece_tokens, group))

    for piece in pieces:
        if merged and (size([piece]) < MIN_CLAUSE_TOKENS or size(merged[-1]) < MIN_CLAUSE_TOKENS):
            merged[-1].append(piece)
        else:
            merged.append([piece])
    return merged


def draft_units(sentences: Sequence[str], injected: Sequence[str] = ()) -> list[DraftUnit]:
    """The method-independent units of a draft: one per clause of each sentence, holding the
    clause's details and content words, with every injected value (and its words) left out:
    a detail made of an injected value's words alone is left out too."""
    bad = [v.lower() for v in injected if v]
    bad_words = {stem(w) for v in bad for w in tokenize(v)}
    units = []
    for index, sentence in enumerate(sentences):
        for clause in _clauses(sentence):
            kept: list[str] = []
            words: list[str] = []
            for found, content in map(_piece_tokens, clause):
                # a detail holding an injected value, or made of its words only ("Rio" and
                # "Janeiro" of a planted "Rio de Janeiro") is the error's, not the unit's
                kept += [d for d in found if not any(v in d.lower() for v in bad) and
                         not {stem(w) for w in tokenize(d)} <= bad_words]
                words += [w for w in content if w not in bad_words]
            if kept or words:
                units.append(DraftUnit(sentence=index, text=" | ".join(clause),
                                       details=list(dict.fromkeys(kept)),
                                       words=list(dict.fromkeys(words))))
    return units


def unit_outcome(unit: DraftUnit, answer: str, answer_stems: set[str] | None = None
                 ) -> UnitOutcomeName:
    stems = answer_stems if answer_stems is not None else set(content_stems(answer))
    present = sum(1 for d in unit.details if count(answer, d)) + \
        sum(1 for w in unit.words if w in stems)
    if present == unit.size:
        return "preserved"
    return "pruned" if present < PRUNED_BELOW * unit.size else "altered"


class ErrorOutcome(BaseModel):
    id: str
    kind: str
    original: str
    injected: str
    outcome: ErrorOutcomeName
    detected: bool
    detected_by: Literal["trace", "text"] = "text"


class UnitOutcome(BaseModel):
    text: str
    outcome: UnitOutcomeName


class NoiseScore(BaseModel):
    """One decoded bio."""

    id: str
    method: str
    errors: list[ErrorOutcome] = Field(default_factory=list)
    units: list[UnitOutcome] = Field(default_factory=list)
    unit: Literal["clause"] = "clause"
    introduced: list[str] = Field(default_factory=list)
    clean_sentences: NonNegativeInt = 0
    verbatim_sentences: NonNegativeInt = 0
    draft_sentences: NonNegativeInt = 0
    answer_sentences: NonNegativeInt = 0
    degenerate: dict[int, str] = Field(default_factory=dict)
    calls: NonNegativeInt = 0
    tokens: NonNegativeInt = 0


def _error_outcome(draft: NoisyDraft, answer: str) -> dict[str, ErrorOutcomeName]:
    out: dict[str, ErrorOutcomeName] = {}
    for error in draft.errors:
        gone = count(answer, error.injected) < count(draft.draft, error.injected)
        restored = count(answer, error.original) >= max(1, count(draft.clean, error.original))
        out[error.id] = "left" if not gone else "corrected" if restored else "deleted"
    return out


def _draft_facts(trace: Trace | None, draft: NoisyDraft) -> list:
    if trace is None or trace.cold_start or trace.firewall.reset:
        return []
    return [f for f in trace.facts if 0 <= f.sentence < len(draft.sentences)]


def _carries(fact_text: str, value: str) -> bool:
    return count(fact_text, value) > 0


def verbatim_sentences(sentences: Sequence[str], answer: str) -> int:
    """How many of `sentences` the answer returns word for word (whitespace aside)."""
    text = " ".join((answer or "").split())
    return sum(1 for s in sentences if " ".join(s.split()) in text)


def score_decoding(draft: NoisyDraft, article: str, answer: str | None, trace: Trace | None,
                   method: str = "?") -> NoiseScore:
    """Score one decoding (see module docs); `answer` None means the run failed."""
    answer = answer or ""
    facts = _draft_facts(trace, draft)
    outcomes = _error_outcome(draft, answer)
    errors = []
    for error in draft.errors:
        carrying = [f for f in facts if _carries(f.text, error.injected)]
        if carrying:
            detected = any(f.verdict in ("CONTRADICTED", "NOT_FOUND") for f in carrying)
            by = "trace"
        else:
            detected, by = outcomes[error.id] != "left", "text"
        errors.append(ErrorOutcome(id=error.id, kind=error.kind, original=error.original,
                                   injected=error.injected, outcome=outcomes[error.id],
                                   detected=detected, detected_by=by))
    stems = set(content_stems(answer))
    units = [UnitOutcome(text=u.text, outcome=unit_outcome(u, answer, stems))
             for u in draft_units(draft.sentences, [e.injected for e in draft.errors])]
    clean = [s for i, s in enumerate(draft.sentences)
             if not any(e.sentence == i for e in draft.errors)]
    usage = trace.usage.total if trace is not None else None
    return NoiseScore(id=draft.id, method=method, errors=errors, units=units,
                      introduced=introduced(answer, f"{draft.draft}\n{article}"),
                      clean_sentences=len(clean),
                      verbatim_sentences=verbatim_sentences(clean, answer),
                      draft_sentences=len(draft.sentences),
                      answer_sentences=len(split_sentences(answer)),
                      degenerate=degenerate_sentences(answer),
                      calls=usage.calls if usage else 0,
                      tokens=usage.total_tokens if usage else 0)


def introduced(answer: str, known: str) -> list[str]:
    """Details of the answer found nowhere in `known` (the draft and the evidence)."""
    new = []
    for value in details(answer):
        if value in ROLES:
            continue
        parts = value.split() if not value[0].isdigit() else [value]
        if all(count(known, part) == 0 for part in parts):
            new.append(value)
    return new


# -- summaries with intervals -------------------------------------------------------------------
def _share(score: NoiseScore, outcome: str) -> Pair:
    """A bio's share of units with `outcome`, as one item of a mean over bios."""
    if not score.units:
        return (0.0, 0.0)
    return (sum(u.outcome == outcome for u in score.units) / len(score.units), 1.0)


def _errors(score: NoiseScore, outcome: str) -> Pair:
    return (float(sum(e.outcome == outcome for e in score.errors)), float(len(score.errors)))


NOISE_FIGURES: dict[str, Any] = {
    "residual_error_rate": lambda s: _errors(s, "left"),
    "detection_rate": lambda s: (float(sum(e.detected for e in s.errors)), float(len(s.errors))),
    "correction_rate": lambda s: _errors(s, "corrected"),
    "deletion_rate": lambda s: _errors(s, "deleted"),
    "false_alarm_rate": lambda s: _share(s, "altered"),
    "pruned_rate": lambda s: _share(s, "pruned"),
    "preservation": lambda s: _share(s, "preserved"),
    "verbatim_share": lambda s: ((s.verbatim_sentences / s.clean_sentences, 1.0)
                                 if s.clean_sentences else (0.0, 0.0)),
    "degenerate_per_bio": lambda s: (float(len(s.degenerate)), 1.0),
    "length_ratio": lambda s: ((s.answer_sentences / s.draft_sentences, 1.0)
                               if s.draft_sentences else (0.0, 0.0)),
    "introduced_per_bio": lambda s: (float(len(s.introduced)), 1.0),
    "calls_per_bio": lambda s: (float(s.calls), 1.0),
    "tokens_per_bio": lambda s: (float(s.tokens), 1.0),
}
"""Every figure of a noise summary as one `(part, whole)` pair per bio (see `intervals`)."""


def bio_of(score: NoiseScore) -> str:
    """The article a score belongs to: drafts of one bio (other K, other seeds) resample
    together, as they share its sentences."""
    return score.id.split("#", 1)[0]


def figure_pairs(scores: Iterable[NoiseScore], figures: Mapping[str, Any] = NOISE_FIGURES
                 ) -> dict[str, dict[str, Pair]]:
    """`{figure: {bio: (part, whole)}}`, the drafts of one bio summed."""
    out: dict[str, dict[str, Pair]] = {name: {} for name in figures}
    for score in scores:
        for name, pair_of in figures.items():
            part, whole = pair_of(score)
            old = out[name].get(bio_of(score), (0.0, 0.0))
            out[name][bio_of(score)] = (old[0] + part, old[1] + whole)
    return out


class NoiseSummary(BaseModel):
    """Counts, and rates over bios with their 95% intervals (`<rate>_ci`); a rate is None when
    its denominator is 0 (e.g. errors at K = 0)."""

    model_config = {"extra": "allow"}

    bios: int = 0
    failed: int = 0
    injected: int = 0
    detected: int = 0
    corrected: int = 0
    deleted: int = 0
    left: int = 0
    units: int = 0
    preserved: int = 0
    altered: int = 0
    pruned: int = 0
    introduced: int = 0
    degenerate: int = 0
    residual_error_rate: float | None = None
    detection_rate: float | None = None
    correction_rate: float | None = None
    deletion_rate: float | None = None
    false_alarm_rate: float | None = None
    pruned_rate: float | None = None
    introduced_per_bio: float | None = None
    preservation: float | None = None
    verbatim_share: float | None = None
    degenerate_per_bio: float | None = None
    length_ratio: float | None = None
    calls_per_bio: float | None = None
    tokens_per_bio: float | None = None
    by_kind: dict[str, dict[str, int]] = Field(default_factory=dict)

    def ci(self, figure: str) -> list[float] | None:
        return getattr(self, f"{figure}_ci", None)


def summarize_noise(scores: Iterable[NoiseScore | None]) -> NoiseSummary:
    """Error rates pool every planted error. The false-alarm rate and preservation are means
    over bios: a bio with many clauses would otherwise outweigh the rest. Intervals resample
    bios (`intervals.bootstrap_rate`)."""
    s = NoiseSummary()
    ok: list[NoiseScore] = []
    for score in scores:
        if score is None:
            s.failed += 1
            continue
        ok.append(score)
        s.bios += 1
        for e in score.errors:
            s.injected += 1
            s.detected += e.detected
            setattr(s, e.outcome, getattr(s, e.outcome) + 1)
            kind = s.by_kind.setdefault(e.kind, {"injected": 0, "corrected": 0, "deleted": 0,
                                                 "left": 0, "detected": 0})
            kind["injected"] += 1
            kind[e.outcome] += 1
            kind["detected"] += e.detected
        for u in score.units:
            s.units += 1
            setattr(s, u.outcome, getattr(s, u.outcome) + 1)
        s.introduced += len(score.introduced)
        s.degenerate += len(score.degenerate)
    pairs = figure_pairs(ok)
    rates = with_intervals({name: list(by_bio.values()) for name, by_bio in pairs.items()})
    return NoiseSummary(**{**s.model_dump(), **rates})


def score_records(drafts: Sequence[NoisyDraft], articles: Mapping[str, str],
                  records: Iterable[Mapping[str, Any]]) -> list[tuple[str, NoiseScore | None]]:
    """Score a run's records against their drafts (matched by id); failed records score
    None. Returns `(id, score)` pairs."""
    by_id = {d.id: d for d in drafts}
    scores: list[tuple[str, NoiseScore | None]] = []
    for record in records:
        draft = by_id.get(str(record.get("id")))
        if draft is None:
            continue
        if record.get("error"):
            scores.append((draft.id, None))
            continue
        trace = Trace.model_validate(record["trace"]) if record.get("trace") else None
        scores.append((draft.id, score_decoding(draft, articles[draft.title],
                                                record.get("answer"), trace,
                                                str(record.get("method") or "?"))))
    return scores
