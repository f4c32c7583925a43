"""Phase 1, the entity firewall: three descriptors and a judge of whether two name one entity.

A descriptor is compact, `Name (Characteristic)`, e.g. `Marie Curie (physicist and chemist)`,
so the judge compares like with like.
"""

from typing import Literal

import dspy


class QueryEntity(dspy.Signature):
    """Name the entity the question asks about, as `Name (Characteristic)`.

    Use only what the question itself says. Do not add anything you know from elsewhere: if the
    question gives no characteristic, write just the name. If the question names no entity,
    return an empty string.
    """

    question: str = dspy.InputField()
    entity: str = dspy.OutputField(desc="Name (Characteristic), or empty")


class AnswerEntity(dspy.Signature):
    """Name the entity this answer is actually about, as `Name (Characteristic)`.

    The characteristic is the single attribute the answer stresses most, such as a profession,
    role or field. If the answer is not about any particular entity, return an empty string.
    """

    answer: str = dspy.InputField()
    entity: str = dspy.OutputField(desc="Name (Characteristic), or empty")


class EvidenceEntity(dspy.Signature):
    """Name the dominant subject of the retrieved context, as `Name (Characteristic)`.

    Pick the proper name the passages are mostly about and its one most prominent
    characteristic in the passages. If no single subject dominates, return an empty string.
    """

    context: str = dspy.InputField(desc="retrieved passages")
    entity: str = dspy.OutputField(desc="Name (Characteristic), or empty")


class SameEntity(dspy.Signature):
    """Decide whether two entity descriptors refer to the same real-world entity.

    Treat small differences in spelling, initials, titles or name order as the same name. Decide
    on the core attributes: profession or role, time period, and place of origin. Two people who
    share a name but differ in profession or era are different entities. Write a brief analysis
    first, then the decision.
    """

    answer_entity: str = dspy.InputField()
    evidence_entity: str = dspy.InputField()
    analysis: str = dspy.OutputField(desc="one or two sentences")
    same: Literal["YES", "NO"] = dspy.OutputField()
