"""Phase 2a: turning one sentence into variable nodes (atomic facts)."""

import dspy


class AtomicFacts(dspy.Signature):
    """Break the sentence into atomic facts about the subject.

    Rules:
    - Each fact is one complete statement with a subject, a verb and an object.
    - Start a new fact only where a new person, a new time period or a new main action begins;
      keep a detail (a date, a place, a role) together with the action it belongs to.
    - Replace pronouns and vague references with the subject's name, so each fact stands alone.
    - Never join two independent events into one fact.
    - Copy names, numbers and dates exactly as the sentence gives them; add nothing the sentence
      does not say, and do not judge whether it is true.
    - A sentence with no factual claim yields an empty list.

    For example, with the subject "Ada Ruiz", the sentence "In 1905 she moved to Lyon, where
    she taught chemistry for ten years." gives "Ada Ruiz moved to Lyon in 1905." and "Ada Ruiz
    taught chemistry in Lyon for ten years."
    """

    subject: str = dspy.InputField(desc="who or what the text is about")
    sentence: str = dspy.InputField()
    facts: list[str] = dspy.OutputField(desc="one statement per item")
