"""What SERC asks of a claim verifier, and the verdict it gets back.

A verifier is a signal beside the LM's own verdict (`SERC(verifier=...)`): the check nodes only
need one `VerifierVerdict` per claim, in the trace's verdict vocabulary, sync or async. This
module holds that contract (`Verifier`), the verdict and its scores, the score cut-offs
(`Thresholds`) and the rule that turns best scores into a verdict (`decide`), so that any
verifier, classifier or not, answers in the same terms.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from serc_dspy.concurrency import in_thread
from serc_dspy.trace import Verdict

Kind = Literal["auto", "nli", "binary", "seq2seq"]
KINDS = ("auto", "nli", "binary", "seq2seq")


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
        return await in_thread(self.verify, claims, evidence)


def decide(support: float, contradiction: float, thresholds: Thresholds) -> Verdict:
    """The verdict for a claim's best scores (support first, see the package doc)."""
    if support >= thresholds.support:
        return "SUPPORTED"
    if contradiction > 0.0 and contradiction >= thresholds.contradiction:
        return "CONTRADICTED"
    return "NOT_FOUND"
