"""What SERC asks of a claim verifier, and the verdict it gets back.

A verifier is a signal beside the LM's own verdict (`SERC(verifier=...)`): the check nodes only
need one `VerifierVerdict` per claim, in the trace's verdict vocabulary, sync or async. This
module holds that contract (`Verifier`), the verdict and its scores, the score cut-offs
(`Thresholds`) and the rule that turns best scores into a verdict (`decide`), so that any
verifier, classifier or not, answers in the same terms.
"""

from __future__ import annotations

import asyncio
from typing import Literal, Protocol, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from serc_dspy.core.errors import StepFailed
from serc_dspy.core.trace import Verdict
from serc_dspy.runtime.concurrency import in_thread

Kind = Literal["auto", "nli", "binary", "seq2seq"]
KINDS = ("auto", "nli", "binary", "seq2seq")
VERDICTS = get_args(Verdict)


class Thresholds(BaseModel):
    """Score cut-offs that turn a claim's best scores into a verdict (see the package doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    support: float = Field(0.5, ge=0.0, le=1.0)
    """SUPPORTED when the maximum support over the chunks is at least this."""
    contradiction: float = Field(0.5, ge=0.0, le=1.0)
    """CONTRADICTED (when not SUPPORTED) when the maximum contradiction is at least this.
    Unused by binary and seq2seq models, whose contradiction score is always 0."""


class VerifierVerdict(BaseModel):
    """One claim's verdict, its best scores over the evidence's chunks, and the chunk it rests
    on (the most supporting chunk; the most contradicting one for CONTRADICTED)."""

    claim: str
    verdict: Verdict
    support: float = Field(ge=0.0, le=1.0)
    contradiction: float = Field(ge=0.0, le=1.0)
    """0.0 from a model that cannot contradict (binary, seq2seq)."""
    chunk: str = ""
    """Empty when there was no evidence to score."""
    passage: int | None = None
    """Index of the evidence item the chunk comes from (0 for a single string)."""


@runtime_checkable
class Verifier(Protocol):
    """What SERC needs from a verifier: one verdict per claim, in order, sync and async."""

    def verify(self, claims: list[str], evidence: str | list[str]) -> list[VerifierVerdict]:
        ...

    async def averify(self, claims: list[str],
                      evidence: str | list[str]) -> list[VerifierVerdict]:
        ...


class ThreadedVerifier:
    """Base for blocking verifiers: `averify` runs `verify` in an AnyIO worker thread (in a
    copy of the caller's context), so the event loop keeps serving the run's other steps."""

    def verify(self, claims: list[str], evidence: str | list[str]) -> list[VerifierVerdict]:
        raise NotImplementedError

    async def averify(self, claims: list[str],
                      evidence: str | list[str]) -> list[VerifierVerdict]:
        return await in_thread(self.verify, claims, evidence, abandon_on_cancel=True)


VERIFIER_TIMEOUT_S = 600.0
"""The longest one verifier call may take (a first call loads its model), unless the verifier
says otherwise (`timeout_s`) or the run's deadline comes sooner."""


VERIFIER_FAILED = "the claim verifier failed"
"""How the error event of a failed verifier call starts (the run's warning counts them)."""


class VerifierFailed(StepFailed):
    """A verifier that hung past its bound, or returned something other than one verdict per
    claim: the check goes on with its other votes, and an error event says why."""


async def bounded_verdicts(verifier: Verifier, claims: list[str], evidence: str | list[str],
                           *, seconds: float | None = None) -> list[VerifierVerdict]:
    """`verifier.averify(claims, evidence)`, bounded in time and held to the contract: one
    verdict per claim, each with a verdict of the trace's vocabulary. A user's verifier is
    code the run does not control; it may hang, or return strings."""
    limit = getattr(verifier, "timeout_s", None) or VERIFIER_TIMEOUT_S
    limit = min(limit, seconds) if seconds is not None else limit
    try:
        result = await asyncio.wait_for(verifier.averify(claims, evidence), max(limit, 0.001))
    except TimeoutError:
        raise VerifierFailed(f"the verifier gave no verdict within {limit:g}s") from None
    if not isinstance(result, (list, tuple)) or len(result) != len(claims):
        got = f"{len(result)} items" if isinstance(result, (list, tuple)) else \
            type(result).__name__
        raise VerifierFailed(f"the verifier returned {got} for {len(claims)} claims; it must "
                             "return one VerifierVerdict per claim")
    verdicts = []
    for item in result:
        verdict = getattr(item, "verdict", None)
        if verdict not in VERDICTS:
            raise VerifierFailed(f"the verifier returned {type(item).__name__} "
                                 f"{str(item)[:60]!r}, not a VerifierVerdict with a verdict "
                                 f"of {', '.join(VERDICTS)}")
        verdicts.append(item)
    return verdicts


def decide(support: float, contradiction: float, thresholds: Thresholds) -> Verdict:
    """The verdict for a claim's best scores (support first, see the package doc)."""
    if support >= thresholds.support:
        return "SUPPORTED"
    if contradiction > 0.0 and contradiction >= thresholds.contradiction:
        return "CONTRADICTED"
    return "NOT_FOUND"
