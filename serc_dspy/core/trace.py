"""The decoding graph's vocabulary, shared by programs, the CLI, evaluation and reports.

This module imports nothing else from the package but `core.usage` (a run's LM cost, which it
re-exports): everything downstream speaks these types, and a saved trace must load back
without running any SERC code.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from serc_dspy.core.usage import StepUsage, Usage

__all__ = ["Candidate", "Check", "Correction", "Event", "Fact", "Firewall", "Passage", "Ruling",
           "Sentence", "Slot", "StateChange", "Step", "StepUsage", "Syndrome", "Trace", "Usage",
           "Witness"]

Verdict = Literal["SUPPORTED", "CONTRADICTED", "NOT_FOUND"]
FactStatus = Literal["pending", "kept", "corrected", "pruned", "unverified", "uncorrected",
                     "disputed"]
"""`disputed`: one signal said CONTRADICTED and no second one agreed (`agree.contradiction`):
the fact stays in the draft's words, flagged, never changed."""
AnswerStatus = Literal["decoded", "no_info", "fallback", "failed"]
"""decoded: checks ran and produced verdicts; no_info: nothing to answer from; fallback: the
decoding pruned so much that the received answer comes back unchanged; failed: nothing could
be verified (the LM or the retriever failed throughout, or every search came back empty) and
the answer is not a correction."""

TRACE_FORMAT_VERSION = 1


class Passage(BaseModel):
    """One retrieved chunk of text; `source` says where a reader can find it again."""

    text: str
    source: str = ""
    score: float = 0.0


class Sentence(BaseModel):
    index: int
    text: str
    rewritten: str | None = None
    kept_verbatim: bool = True


class Witness(BaseModel):
    """What a cited quote says instead of a claim: the claim's details it gives other values
    for (`contradicted`), and `old` / `new` when exactly one detail was swapped, so the claim
    can be corrected by swapping it back. Saved on the fact it witnesses against."""

    reason: str
    old: str | None = None
    new: str | None = None
    contradicted: tuple[str, ...] = ()

    def kept_by(self, fix: str) -> bool:
        """Whether a fix still states every contradicted detail: then it fixed nothing."""
        import re

        return bool(self.contradicted) and all(
            re.search(rf"(?<!\w){re.escape(term)}(?!\w)", fix, re.IGNORECASE)
            for term in self.contradicted)

    def apply(self, claim: str) -> str | None:
        """The claim with `old` replaced by `new` (whole words), or None if not applicable."""
        import re

        if not (self.old and self.new):
            return None
        fixed, count = re.subn(rf"(?<!\w){re.escape(self.old)}(?!\w)", self.new, claim)
        return fixed if count else None


class Candidate(BaseModel):
    """A value a detail slot could take: the fact's own, one found in a passage (with where),
    or "not stated"."""

    value: str
    origin: Literal["fact", "evidence", "none"] = "evidence"
    passage: int | None = None
    """Index of the check's passage it was found in (evidence candidates)."""
    offset: int | None = None
    """Character offset of the value in that passage."""
    context: str = ""
    """The passage's words that lead up to the value ("died on 4 July 1934"), shown beside
    it as an option: a 1.5B model matched a bare "1934" to its sentence less often."""
    read: bool = False
    """The model's reading of the evidence offered it (`choose.read_answer`), not a pattern."""


class Slot(BaseModel):
    """A checkable detail of a fact (a year, date, number, name or role; or, for a fact with
    none, the evidence sentence about it), the options it was asked about, and the choice.

    `choices` holds the value chosen in each option order (None for an unusable reply);
    `ruling` is the decision: the fact's own value chosen both times (`supported`), the same
    other candidate both times (`contradicted`, `chosen` is that value), a different other
    value each time while no passage states its own (`rejected`: no correction), else
    `unverified`."""

    kind: Literal["date", "year", "number", "name", "role", "sentence"]
    text: str
    start: int = 0
    """Character offset of the slot's text in the fact."""
    candidates: list[Candidate] = Field(default_factory=list)
    choices: list[str | None] = Field(default_factory=list)
    ruling: Literal["supported", "contradicted", "rejected", "unverified"] = "unverified"
    chosen: str | None = None
    note: str = ""
    confidence: dict[str, float] = Field(default_factory=dict)
    """Each value's probability, averaged over the option orders asked (from the letters'
    log-probabilities); empty where the backend returned none."""


class StateChange(BaseModel):
    """One change of a fact's verdict or status, and what made it: a rule's id
    (`choose.swap`), or the step's reason (`check failed`)."""

    by: str
    verdict: Verdict | None = None
    status: str = "pending"


_SAME: Any = object()
"""`Fact.settle`'s "leave it as it is"."""


class Fact(BaseModel):
    """A variable node: one atomic fact of one sentence, with its syndrome and correction.

    Its verdict and status change only through `settle`, which records each change and what
    made it in `history`, so the view and the ablations read one account of the fact."""

    id: str
    text: str
    sentence: int
    check: str | None = None
    verdict: Verdict | None = None
    lm_verdict: Verdict | None = None
    """The verifier's own verdict, before any rule held it to its quote; `verdict` is final."""
    witness: Witness | None = None
    """The detail the cited quote gives another value for (see `Witness`)."""
    votes: dict[str, str] = Field(default_factory=dict)
    """Each independent signal's verdict on a contradicted fact (`cited`, `second`,
    `verifier`): it is changed only when two agree (`agree.contradiction`)."""
    own_passages: list[int] = Field(default_factory=list)
    """Indices into its check's passages of those found for the fact's own text
    (`SERC(fact_evidence=True)`), shown to its verdict first."""
    quote: str | None = None
    """The evidence sentence the verdict rests on, when the verifier cites one."""
    second_verdict: Verdict | None = None
    """The uncited verifier's vote on a cited contradiction whose quote showed no conflicting
    detail; only SUPPORTED keeps such a fact (see `SERC.second_opinion`)."""
    slots: list[Slot] = Field(default_factory=list)
    """`verdicts="choose"`: the fact's detail slots, their candidates and choices."""
    correction: str | None = None
    status: FactStatus = "pending"
    history: list[StateChange] = Field(default_factory=list)
    """Each change of the verdict or status, in order (`settle`)."""

    def settle(self, by: str, *, verdict: Any = _SAME, status: Any = _SAME,
               model: bool = False) -> None:
        """The one writer of the fact's state: set its verdict and / or status, and record
        the change with `by` (a rule id or the step's reason). `model`: the verdict is the
        model's own, so `lm_verdict` takes it too. A call that changes nothing records
        nothing."""
        verdict = self.verdict if verdict is _SAME else verdict
        status = self.status if status is _SAME else status
        if model:
            self.lm_verdict = verdict
        if (verdict, status) == (self.verdict, self.status):
            return
        self.verdict, self.status = verdict, status
        self.history.append(StateChange(by=by, verdict=verdict, status=status))


class Check(BaseModel):
    """A check node: one query and one evidence summary shared by a group of facts."""

    id: str
    facts: list[str]
    sentence: int
    query: str = ""
    passages: list[Passage] = Field(default_factory=list)
    evidence: str = ""
    evidence_source: Literal["retrieval", "parametric", "none"] = "retrieval"
    error: str | None = None


class Firewall(BaseModel):
    """Phase 1's entity firewall: three descriptors, the judge's reasoning and outcome."""

    enabled: bool = False
    query_entity: str = ""
    answer_entity: str = ""
    evidence_entity: str = ""
    analysis: str = ""
    same_entity: bool | None = None
    decision: str = ""
    """Why the firewall passed or reset, in words (e.g. "same name: no judge call")."""
    reset: bool = False
    replaced_answer: str = ""
    """The received answer a hard reset replaced (kept so a reader can see what was thrown away)."""
    error: str | None = None


class Correction(BaseModel):
    """One pair returned by the correction step, and the fact it was mapped to (if any)."""

    original: str
    fixed: str
    fact: str | None = None
    match_score: float = 0.0
    propagated: bool = False


class Step(BaseModel):
    """One intermediate step of a baseline (a verification question, an agreement check...)."""

    name: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, Any] = Field(default_factory=dict)
    passages: list[Passage] = Field(default_factory=list)
    error: str | None = None

    def fail(self, error: str) -> None:
        """Record why the step failed (`Run.attempt(..., failed=step.fail)`)."""
        self.error = error


class Event(BaseModel):
    """Something a reader of the trace should know that is not a node or a ruling: an outage
    or failed call (`error`), a degraded step or a bound (`fallback`), a note (`info`)."""

    phase: str
    kind: Literal["error", "fallback", "info"] = "info"
    message: str


class Ruling(BaseModel):
    """One firing of a named deterministic rule (`serc_dspy.rules`): which rule, on which node
    (a fact, check or sentence id, `answer` or `firewall`), what it changed from and to, and
    why (the witness, the reason)."""

    rule: str
    node: str = ""
    before: str | None = None
    after: str | None = None
    detail: str = ""


class Syndrome(BaseModel):
    """Counts over the facts, read by the CLI summary and by reports."""

    facts: int = 0
    supported: int = 0
    contradicted: int = 0
    not_found: int = 0
    corrected: int = 0
    pruned: int = 0
    unverified: int = 0
    unchecked_sentences: int = 0
    """Sentences past `max_sentences`: never decomposed, so they have no facts to count, and
    they stand in the answer unverified."""

    def summary(self) -> str:
        unchecked = (f" + {self.unchecked_sentences} unchecked sentence"
                     f"{'s' if self.unchecked_sentences != 1 else ''}"
                     if self.unchecked_sentences else "")
        return (
            f"facts checked {self.facts} / supported {self.supported} / "
            f"contradicted {self.contradicted} / not found {self.not_found} / "
            f"corrected {self.corrected} / pruned {self.pruned} / "
            f"unverified {self.unverified}{unchecked}"
        )


class Trace(BaseModel):
    """The whole decoding graph of one answer; a JSON dump of it loads back equal."""

    format_version: int = TRACE_FORMAT_VERSION
    method: str = "serc"
    question: str = ""
    initial_answer: str = ""
    draft_given: bool = False
    cold_start: bool = False
    short_draft: bool = False
    """A caller's draft too short to read as prose ("Ulster County"): checked as one claim
    answering the question, never replaced by the cold start."""
    status: AnswerStatus = "decoded"
    failure: str | None = None
    """Why the run failed (status "failed"), in one line."""
    subject: str = ""
    bounded: bool = False
    """The answer had more sentences than `max_sentences`: only the first were checked."""
    unchecked_sentences: int = 0
    """How many sentences were past the bound: kept verbatim, never checked (unverified)."""
    firewall: Firewall = Field(default_factory=Firewall)
    sentences: list[Sentence] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)
    checks: list[Check] = Field(default_factory=list)
    corrections: list[Correction] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    received: str = ""
    reconstructed: str = ""
    answer: str = ""
    events: list[Event] = Field(default_factory=list)
    rulings: list[Ruling] = Field(default_factory=list)
    rules_off: list[str] = Field(default_factory=list)
    """Rules switched off for this run (by the caller, or as English-only on another
    language)."""
    language: str = ""
    """`en`, or `other` when the received answer is not English (`rules.language_of`)."""
    prompts: str = ""
    """Which prompts the run used when `compiled="auto"` chose: "packaged state qwen1.5b",
    or "the program's own" (demos the user compiled, set or loaded: never replaced)."""
    usage: Usage = Field(default_factory=Usage)

    def fact(self, fact_id: str) -> Fact:
        for fact in self.facts:
            if fact.id == fact_id:
                return fact
        raise KeyError(fact_id)

    def log(self, phase: str, message: str, kind: str = "info") -> None:
        self.events.append(Event(phase=phase, kind=kind, message=message))

    @property
    def errors(self) -> list[Event]:
        return [event for event in self.events if event.kind == "error"]

    def ruled(self, rule: str | None = None, node: str | None = None) -> list[Ruling]:
        """The rulings of `rule` (an id, or a concern prefix such as `quote.`), on `node`."""
        return [r for r in self.rulings
                if (rule is None or r.rule == rule or (rule.endswith(".")
                                                        and r.rule.startswith(rule)))
                and (node is None or r.node == node)]

    @property
    def syndrome(self) -> Syndrome:
        counts = Syndrome(facts=len(self.facts), unchecked_sentences=self.unchecked_sentences)
        for fact in self.facts:
            if fact.verdict == "SUPPORTED":
                counts.supported += 1
            elif fact.verdict == "CONTRADICTED":
                counts.contradicted += 1
            elif fact.verdict == "NOT_FOUND":
                counts.not_found += 1
            if fact.status == "corrected":
                counts.corrected += 1
            elif fact.status == "pruned":
                counts.pruned += 1
            elif fact.status == "unverified":
                counts.unverified += 1
        return counts

    def bound_warning(self) -> str | None:
        """What a reader must be told when the run was bounded: how many sentences were never
        checked. None when every sentence was."""
        if not self.bounded:
            return None
        total = len(self.sentences)
        return (f"only the first {total - self.unchecked_sentences} of {total} sentences were "
                f"checked; {self.unchecked_sentences} are unverified")

    def __repr__(self) -> str:
        """One line: printing a prediction must not dump the whole graph (`to_json` does)."""
        return (f"Trace(method={self.method!r}, status={self.status!r}, "
                f"sentences={len(self.sentences)}, facts={len(self.facts)}, "
                f"checks={len(self.checks)}, corrections={len(self.corrections)}, "
                f"events={len(self.events)}, calls={self.usage.total.calls})")

    __str__ = __repr__

    def to_json(self, indent: int | None = 2) -> str:
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        return cls.model_validate_json(text)
