"""Every dspy.Signature of the package, grouped by the paper's phases."""

from serc_dspy.signatures.baselines import (
    AnswerFromContext,
    AnswerFromMemory,
    CheckAgreement,
    ExplainErrors,
    MinimalEdit,
    PlanVerifications,
    ResearchQuestions,
    ReviseWithExplanation,
    SubQuestions,
    VerifiedAnswer,
)
from serc_dspy.signatures.correction import CorrectFacts, FactFix
from serc_dspy.signatures.decomposition import AtomicFacts
from serc_dspy.signatures.firewall import AnswerEntity, EvidenceEntity, QueryEntity, SameEntity
from serc_dspy.signatures.generation import AnswerQuestion, GroundedAnswer
from serc_dspy.signatures.reconstruction import PolishAnswer, RewriteSentence
from serc_dspy.signatures.verification import (
    ChooseSentence,
    ChooseValue,
    EvidenceSummary,
    JudgeFact,
    JudgeFacts,
    ParametricEvidence,
    QuoteAndJudge,
    ReadAnswer,
    VerdictLabel,
    VerificationQuery,
)

__all__ = [
    "AnswerFromContext",
    "AnswerFromMemory",
    "CheckAgreement",
    "ExplainErrors",
    "MinimalEdit",
    "PlanVerifications",
    "ResearchQuestions",
    "ReviseWithExplanation",
    "SubQuestions",
    "VerifiedAnswer",
    "AnswerEntity",
    "AtomicFacts",
    "ChooseSentence",
    "ChooseValue",
    "CorrectFacts",
    "EvidenceEntity",
    "EvidenceSummary",
    "FactFix",
    "GroundedAnswer",
    "AnswerQuestion",
    "JudgeFact",
    "JudgeFacts",
    "ParametricEvidence",
    "PolishAnswer",
    "QueryEntity",
    "QuoteAndJudge",
    "ReadAnswer",
    "RewriteSentence",
    "SameEntity",
    "VerdictLabel",
    "VerificationQuery",
]

from serc_dspy.signatures.evaluation import (  # noqa: E402
    ClaimSupported,
    JudgeTruthfulness,
    SupportLabel,
)

__all__ += ["ClaimSupported", "JudgeTruthfulness", "SupportLabel"]
