"""A run's LM cost: calls, tokens and seconds, per step and per model (`Trace.usage`)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class StepUsage(BaseModel):
    """LM calls made and their tokens; failed calls, calls cancelled while the engine served
    them, and DSPy cache hits are included in `calls` and also counted in `failed`,
    `cancelled` and `cached` (a cancelled call's tokens are unknown and not counted)."""

    calls: int = 0
    failed: int = 0
    cancelled: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Prompt tokens the engine served from its prompt cache (reported by llama.cpp, SGLang
    and OpenAI as `prompt_tokens_details.cached_tokens`; 0 where an engine reports nothing):
    `prompt_tokens - cached_prompt_tokens` is what the engine really processed."""
    completion_tokens: int = 0
    seconds: float = 0.0
    """Wall seconds of the calls, summed (concurrent calls overlap, so a step's seconds can
    exceed the run's wall time)."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: StepUsage) -> None:
        self.calls += other.calls
        self.failed += other.failed
        self.cancelled += other.cancelled
        self.cached += other.cached
        self.prompt_tokens += other.prompt_tokens
        self.cached_prompt_tokens += other.cached_prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.seconds += other.seconds


class Usage(BaseModel):
    """LM cost of one run: totals, per step (signature name) and per LM (model name)."""

    total: StepUsage = Field(default_factory=StepUsage)
    steps: dict[str, StepUsage] = Field(default_factory=dict)
    models: dict[str, StepUsage] = Field(default_factory=dict)

    def record(self, step: str, model: str, usage: StepUsage) -> None:
        self.total.add(usage)
        self.steps.setdefault(step, StepUsage()).add(usage)
        self.models.setdefault(model, StepUsage()).add(usage)

    @property
    def calls(self) -> int:
        """`total.calls`: the repr's fields read as attributes too (`usage.calls`)."""
        return self.total.calls

    @property
    def failed(self) -> int:
        return self.total.failed

    @property
    def cached(self) -> int:
        return self.total.cached

    @property
    def prompt_tokens(self) -> int:
        return self.total.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.total.completion_tokens

    @property
    def total_tokens(self) -> int:
        return self.total.total_tokens

    def __repr__(self) -> str:
        """One line; `.steps` and `.models` hold the breakdown."""
        t = self.total
        return (f"Usage(calls={t.calls}, failed={t.failed}, cached={t.cached}, "
                f"prompt_tokens={t.prompt_tokens}, completion_tokens={t.completion_tokens}, "
                f"steps={len(self.steps)}, models={sorted(self.models)})")

    __str__ = __repr__

    def merge(self, other: Usage) -> None:
        self.total.add(other.total)
        for name, step in other.steps.items():
            self.steps.setdefault(name, StepUsage()).add(step)
        for name, model in other.models.items():
            self.models.setdefault(name, StepUsage()).add(model)
