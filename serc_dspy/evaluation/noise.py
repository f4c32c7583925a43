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
are, per draft sentence, the trace's facts that the draft states and that carry no injected
value; a sentence without such facts (no fact trace, a reset answer, a failed decomposition)
falls back to its clean details (years, numbers, names, roles). A fact counts as preserved
when it was not corrected or pruned and its details are still in the answer.

`introduced` are years, numbers and capitalised names of the answer found in neither the draft
nor the article: invented content the decoder verified into the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from serc_dspy.evaluation.injection import ROLES, NoisyDraft
from serc_dspy.text import normalise
from serc_dspy.trace import Trace

ErrorOutcomeName = Literal["corrected", "deleted", "left"]
UnitOutcomeName = Literal["preserved", "altered", "pruned"]

_DETAIL = re.compile(r"(?<![\w-])\d+(?:[.,]\d+)*(?:st|nd|rd|th|s)?(?![\w-])"
                     r"|[A-Z][\w'’-]+(?: [A-Z][\w'’-]+)*")
"""Whole tokens, bounded as `count` bounds them: "15th" and "1960s" are details of their own,
never "15" or "1960", and "70-71" (a range) gives neither number."""
_FUNCTION_WORDS = frozenset("""
a an the he she they it his her their its in on at of and or but as by for from to with was is
were are be been this that these those after before during when while since until then there
here who whom whose which what where why how also both later early born died known
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
    unit: Literal["fact", "detail"] = "fact"
    introduced: list[str] = Field(default_factory=list)
    calls: int = 0
    tokens: int = 0


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
    # An answer that is the received answer verbatim (a fallback) altered and pruned nothing,
    # whatever its facts' statuses say.
    unchanged = trace is not None and normalise(answer) == normalise(trace.received)
    units, unit = _units(draft, facts, answer, unchanged=unchanged)
    usage = trace.usage.total if trace is not None else None
    return NoiseScore(id=draft.id, method=method, errors=errors, units=units, unit=unit,
                      introduced=introduced(answer, draft, article),
                      calls=usage.calls if usage else 0,
                      tokens=usage.total_tokens if usage else 0)


def _fact_outcome(fact, answer: str, unchanged: bool = False) -> UnitOutcomeName:
    if fact.status == "pruned" and not unchanged:
        return "pruned"
    if fact.status == "corrected" and fact.correction and fact.correction != fact.text \
            and not unchanged:
        return "altered"
    kept = all(count(answer, d) for d in details(fact.text))
    return "preserved" if kept else "altered"


def _units(draft: NoisyDraft, facts: list, answer: str, *,
           unchanged: bool = False) -> tuple[list[UnitOutcome], str]:
    """Clean units per draft sentence: the trace's facts of that sentence that the draft
    states (an invented fact is no draft content) and that carry no injected value; a sentence
    without such facts (no fact trace, or its decomposition failed) falls back to details."""
    injected = [e.injected for e in draft.errors]
    units: list[UnitOutcome] = []
    used_facts = False
    for index, sentence in enumerate(draft.sentences):
        own = [f for f in facts if f.sentence == index]
        grounded = [f for f in own if all(count(draft.draft, d) for d in details(f.text))]
        if grounded:
            used_facts = True
            units += [UnitOutcome(text=f.text, outcome=_fact_outcome(f, answer, unchanged))
                      for f in grounded if not any(_carries(f.text, v) for v in injected)]
        else:
            units += _detail_units(sentence, injected, answer)
    return units, "fact" if used_facts else "detail"


def _detail_units(sentence: str, injected: list[str], answer: str) -> list[UnitOutcome]:
    lowered = [v.lower() for v in injected]
    clean = [d for d in details(sentence) if not any(v in d.lower() for v in lowered)]
    present = [d for d in clean if count(answer, d)]
    return [UnitOutcome(text=d, outcome="preserved" if d in present
                        else "pruned" if not present else "altered") for d in clean]


def introduced(answer: str, draft: NoisyDraft, article: str) -> list[str]:
    """Details of the answer found in neither the draft nor the article."""
    known = f"{draft.draft}\n{article}"
    new = []
    for value in details(answer):
        if value in ROLES:
            continue
        parts = value.split() if not value[0].isdigit() else [value]
        if all(count(known, part) == 0 for part in parts):
            new.append(value)
    return new


class NoiseSummary(BaseModel):
    """Rates over bios; a rate is None when its denominator is 0 (e.g. errors at K = 0)."""

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
    residual_error_rate: float | None = None
    detection_rate: float | None = None
    correction_rate: float | None = None
    deletion_rate: float | None = None
    false_alarm_rate: float | None = None
    introduced_per_bio: float | None = None
    preservation: float | None = None
    calls_per_bio: float | None = None
    tokens_per_bio: float | None = None
    by_kind: dict[str, dict[str, int]] = Field(default_factory=dict)


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def summarize_noise(scores: Iterable[NoiseScore | None]) -> NoiseSummary:
    """Error rates pool every planted error. The false-alarm rate and preservation are means
    over bios: a bio scored by facts has a few units and one that fell back to details (a reset
    answer, say) has many, so pooling units would let one such bio outweigh the rest."""
    s = NoiseSummary()
    calls = tokens = 0
    per_bio: list[tuple[float, float]] = []
    for score in scores:
        if score is None:
            s.failed += 1
            continue
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
        if score.units:
            n = len(score.units)
            per_bio.append((sum(u.outcome == "altered" for u in score.units) / n,
                            sum(u.outcome == "preserved" for u in score.units) / n))
        s.introduced += len(score.introduced)
        calls += score.calls
        tokens += score.tokens
    s.residual_error_rate = _rate(s.left, s.injected)
    s.detection_rate = _rate(s.detected, s.injected)
    s.correction_rate = _rate(s.corrected, s.injected)
    s.deletion_rate = _rate(s.deleted, s.injected)
    s.false_alarm_rate = sum(a for a, _ in per_bio) / len(per_bio) if per_bio else None
    s.preservation = sum(p for _, p in per_bio) / len(per_bio) if per_bio else None
    s.introduced_per_bio = _rate(s.introduced, s.bios)
    s.calls_per_bio = _rate(calls, s.bios)
    s.tokens_per_bio = _rate(tokens, s.bios)
    return s


def score_records(drafts: Sequence[NoisyDraft], articles: Mapping[str, str],
                  records: Iterable[Mapping[str, Any]]) -> list[NoiseScore | None]:
    """Score a run's records against their drafts (matched by id); failed records are None."""
    by_id = {d.id: d for d in drafts}
    scores: list[NoiseScore | None] = []
    for record in records:
        draft = by_id.get(str(record.get("id")))
        if draft is None:
            continue
        if record.get("error"):
            scores.append(None)
            continue
        trace = Trace.model_validate(record["trace"]) if record.get("trace") else None
        scores.append(score_decoding(draft, articles[draft.title], record.get("answer"), trace,
                                     str(record.get("method") or "?")))
    return scores
