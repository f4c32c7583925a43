"""Phase 3b: fact-to-text reconstruction and the final polish."""

import dspy


class RewriteSentence(dspy.Signature):
    """Write one sentence that states the verified facts, fitting after what came before.

    The verified facts are the only source of truth: state them accurately and completely.
    The earlier facts are there for flow only (to avoid repeating them and to resolve
    references); do not restate them. Add no names, dates or numbers that are not listed. Write
    no notes, labels or comments about the facts: output the sentence alone.
    """

    subject: str = dspy.InputField()
    earlier_facts: list[str] = dspy.InputField(desc="facts accepted in earlier sentences")
    facts: list[str] = dspy.InputField(desc="verified facts for this sentence")
    sentence: str = dspy.OutputField()


class PolishAnswer(dspy.Signature):
    """Edit the draft into one coherent answer to the question.

    Smooth transitions only where the facts' logic supports them and merge sentences that
    repeat each other. Do not add, drop or change any fact, name, date or number. Output the
    answer text alone.
    """

    question: str = dspy.InputField()
    draft: str = dspy.InputField()
    answer: str = dspy.OutputField()
