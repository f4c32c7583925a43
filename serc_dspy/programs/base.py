"""What every method program shares: traced LM calls, per-stage LMs, and bounded concurrency."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Literal

import dspy

from serc_dspy.core.errors import DecodingFailed, UserError, redact
from serc_dspy.core.layout import Layout
from serc_dspy.core.text import defang, restore_markers
from serc_dspy.core.trace import Passage, Step, Trace
from serc_dspy.retrieval.base import (
    DEFAULT_CONTEXT_CHARS,
    DEFAULT_TOP_K,
    RetrievalError,
    as_retriever,
    cap_context,
)
from serc_dspy.runtime.steps import (
    STAGE_ORDER,
    DeadlineExceeded,
    ProgressCallback,
    Run,
    StepSpec,
    run_sync,
)
from serc_dspy.signatures import AnswerQuestion
from serc_dspy.verifiers.base import VERIFIER_FAILED

__all__ = ["DeadlineExceeded", "InputError", "Run", "StepSpec", "TracedProgram"]

OnError = Literal["degrade", "raise"]
logger = logging.getLogger("serc_dspy")

STAGES = STAGE_ORDER
"""The LM stages `lms={...}` routes, in pipeline order."""
NO_INFO_ANSWER = "I could not find verified information to answer this question."
RETRIEVING_STEPS = frozenset({"verify", "agreement", "sub_question"})
"""Baseline steps that search (named in their `Step.name`)."""
EMPTY_OUTPUT = "the LM returned empty output"
"""The event (and failure) of an LM that answered the question with nothing: a failure, unlike
an LM that refused or a retrieval that found nothing (status `no_info`)."""
MAX_INPUT_CHARS = 2_000_000
"""The longest question or draft a program accepts (about 2 MB of text, some 300,000 words):
refused before any work, since splitting and prompts grow with it."""


class InputError(UserError):
    """The caller passed something a method cannot decode; the message says what."""


def check_text(name: str, value: Any, *, allow_none: bool = False) -> str | None:
    """Reject empty, oversized (`MAX_INPUT_CHARS`) or non-string inputs with a message naming
    the argument."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, got {type(value).__name__}")
    if len(value) > MAX_INPUT_CHARS:
        raise InputError(f"{name} is {len(value):,} characters; at most {MAX_INPUT_CHARS:,} "
                         "are accepted")
    if not value.strip():
        raise InputError(f"{name} is empty")
    return value.strip()


class TracedProgram(dspy.Module):
    """Base for SERC and the baselines.

    A program declares `steps`, its predictors' table (attribute name -> `StepSpec`: LM stage
    and usage key), and writes `aforward` against the step layer (`Run.call` / `map` /
    `attempt`, see `serc_dspy.runtime.steps`). `forward` is its synchronous twin. Every LM call then
    runs on its stage's LM (if the user gave one) with usage recorded into the trace per step
    and per model: the trace is the single source of cost figures.
    """

    method_name = "base"
    needs_retriever = False
    steps: ClassVar[dict[str, StepSpec]] = {
        "answerer": StepSpec("generate", "initial_answer"),
    }

    def __init__(
        self,
        retriever: Callable[[str, int], Any] | None = None,
        *,
        top_k: int = DEFAULT_TOP_K,
        context_chars: int = DEFAULT_CONTEXT_CHARS,
        max_workers: int = 8,
        lms: dict[str, dspy.LM] | None = None,
        adapter: Any = None,
        progress: ProgressCallback | None = None,
        on_error: OnError = "degrade",
        deadline_s: float | None = None,
        callbacks: list[Any] | None = None,
        serial_stages: Iterable[str] = (),
    ):
        super().__init__(callbacks=callbacks)
        if on_error not in ("degrade", "raise"):
            raise InputError(f"on_error must be 'degrade' or 'raise', got {on_error!r}")
        if top_k < 1:
            raise InputError(f"top_k must be at least 1, got {top_k}")
        if context_chars < 1:
            raise InputError(f"context_chars must be at least 1, got {context_chars}")
        if max_workers < 1:
            raise InputError(f"max_workers must be at least 1, got {max_workers}")
        not_lms = [stage for stage, lm in (lms or {}).items() if not isinstance(lm, dspy.BaseLM)]
        if not_lms:
            raise InputError(f"lms[{not_lms[0]!r}] is a {type(lms[not_lms[0]]).__name__}, not "
                             "a DSPy LM; build one, e.g. dspy.LM(...) or lm_from_spec(...)")
        self.retriever = as_retriever(retriever) if retriever is not None else None
        self.top_k = top_k
        self.context_chars = context_chars
        self.max_workers = max_workers
        """How many LM calls of one run are in flight at once (one pool for the whole run)."""
        if isinstance(serial_stages, str):
            serial_stages = [serial_stages]
        unknown = sorted(set(serial_stages) - set(STAGES))
        if unknown:
            raise InputError(f"unknown stage(s) {unknown} in serial_stages; the stages are "
                             f"{', '.join(STAGES)}")
        self.serial_stages = frozenset(serial_stages)
        """Stages whose calls of one run go one at a time, so each finds the stage's prompt
        prefix in the engine's cache (see `steps.Run.call`)."""
        self.lms = dict(lms or {})
        self.adapter = adapter
        self.progress = progress
        self.on_error = on_error
        if deadline_s is not None and deadline_s <= 0:
            raise InputError(f"deadline_s must be positive, got {deadline_s}")
        self.deadline_s = deadline_s
        self.answerer = dspy.Predict(AnswerQuestion)

    @classmethod
    def step_table(cls) -> dict[str, StepSpec]:
        """Every predictor's `StepSpec`, the subclasses' tables over the bases'."""
        table: dict[str, StepSpec] = {}
        for klass in reversed(cls.__mro__):
            table.update(klass.__dict__.get("steps", {}))
        return table

    def check_lm_keys(self) -> None:
        """`lms` keys are stages (`verify`), predictor names (`fact_checker`) or predictor paths
        (`checks.fact_checker`); anything else is a typo that would silently run on the
        default LM. Paths are read as the names the step layer uses."""
        paths = {path: name for name, path in (getattr(self, "PREDICTOR_PATHS", None)
                                               or {}).items()}
        predictors = [name for name, _ in self.named_predictors()]
        valid = set(STAGES) | set(predictors) | set(self.step_table())
        unknown = sorted(set(self.lms) - valid)
        if unknown:
            raise InputError(f"unknown key(s) {unknown} in lms; valid keys are the stages "
                             f"({', '.join(STAGES)}) and the predictors "
                             f"({', '.join(predictors)})")
        self.lms = {paths.get(key, key): lm for key, lm in self.lms.items()}

    def forward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        """The synchronous twin of `aforward` (see `steps.run_sync` for where it runs)."""
        return run_sync(self.aforward, question, draft)

    async def aforward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        raise NotImplementedError  # pragma: no cover - every method defines its decoding

    # -- the run ---------------------------------------------------------------------------
    async def initial_answer(self, run: Run, question: str, draft: str | None) -> str:
        """R_init: the caller's draft, or the LM's answer at temperature 0.

        Every method uses this same step, so methods given the same draft (or the same LM and
        question) start from the same initial answer and differ only by what they do next.
        """
        trace = run.trace
        run.report("generate", 0, 1)
        if draft is not None:
            answer, trace.draft_given = draft, True
        else:
            answer = ((await run.call("answerer", question=question,
                                      config={"temperature": 0.0})).answer or "").strip()
            if not answer:
                run.log("generate", f"{EMPTY_OUTPUT}: no answer to the question", "error")
        trace.initial_answer = answer
        return answer

    def start(self, question: str, draft: str | None) -> tuple[Run, str, str | None]:
        """Validate the inputs and open a run with a fresh trace and its step layer."""
        question = defang(check_text("question", question))
        draft = check_text("draft", draft, allow_none=True)
        raw_draft = draft
        draft = defang(draft) if draft is not None else None
        if self.needs_retriever and self.retriever is None:
            raise InputError(
                f"{self.method_name} needs a retriever: pass retriever=... (e.g. a LocalCorpus)"
            )
        self.check_lm_keys()
        if dspy.settings.lm is None and not self.lms and \
                not all(p.lm is not None for _, p in self.named_predictors()):
            # DSPy's rule: a predictor's own LM (`program.set_lm(lm)`) wins, the configured
            # one is the fallback; only a predictor with neither has no LM
            raise InputError("no LM is configured: run the program inside "
                             "`with dspy.context(lm=...)` (or dspy.configure(lm=...)), or "
                             "give every stage one with lms={...}")
        table = self.step_table()
        run = Run(Trace(method=self.method_name, question=question),
                  predictors={name: getattr(self, name) for name in table
                              if isinstance(getattr(self, name, None), dspy.Predict)},
                  table=table, lms=self.lms, adapter=self.adapter,
                  max_in_flight=self.max_workers, progress=self.progress,
                  deadline_s=self.deadline_s, serial_stages=self.serial_stages)
        if self.deadline_s is not None:
            run.deadline = time.monotonic() + self.deadline_s
        run.raw_draft = raw_draft
        return run, question, draft

    def finish(self, run: Run, answer: str) -> dspy.Prediction:
        """Close the run. A run whose LM calls all failed is a failure, never a correction:
        status "failed", one warning, and `DecodingFailed` when `on_error="raise"`."""
        trace = run.trace
        if run.raw_draft:
            answer = restore_markers(answer, run.raw_draft)
        trace.answer = answer
        usage = trace.usage.total
        if trace.status != "failed" and self.needs_retriever and \
                not any(step.passages for step in trace.steps):
            # A baseline whose every search failed or came back empty verified nothing: its
            # answer is the draft, and must not be recorded as a decoding that resume skips.
            searches = [s for s in trace.steps if s.name in RETRIEVING_STEPS]
            failed = sum(1 for s in searches if s.error)
            self.fail(run, f"no search returned evidence ({len(searches)} searches, {failed} "
                           "failed, the rest empty): nothing was verified")
        if trace.status != "failed" and usage.calls and usage.failed and \
                usage.failed + usage.cancelled == usage.calls:
            self.fail(run, f"every LM call failed ({usage.calls} made); last error: "
                           f"{next((e.message for e in reversed(trace.errors)), 'unknown')}")
        if trace.status != "failed" and self.lm_gave_nothing(run, answer):
            answer = trace.answer = ""
            self.fail(run, f"{EMPTY_OUTPUT}: the question got an empty answer and nothing "
                           "usable came back (not a refusal, not a retrieval that found "
                           "nothing)")
        if trace.status != "failed" and (warning := trace.bound_warning()):
            logger.warning("%s: %s", self.method_name, warning)
        lost = [e.message for e in trace.errors if e.message.startswith(VERIFIER_FAILED)]
        if lost:  # the verifier's signal is missing: said once, not only in the trace
            logger.warning("%s: %s %d time(s); those facts were decided without its vote. "
                           "First: %s", self.method_name, VERIFIER_FAILED, len(lost), lost[0])
        if trace.status == "failed":
            logger.warning("%s: %s", self.method_name, trace.failure)
            if self.on_error == "raise":
                raise DecodingFailed(trace.failure or "decoding failed", trace)
        return dspy.Prediction(answer=answer, initial_answer=run.trace.initial_answer,
                               trace=run.trace, usage=run.trace.usage)

    @staticmethod
    def lm_gave_nothing(run: Run, answer: str) -> bool:
        """Whether the LM answered the question (no draft given) with empty output and nothing
        usable replaced it: the answer is empty, or the run found no information with nothing
        received (a refusal would have been received, and is `no_info`, not a failure)."""
        trace = run.trace
        if trace.draft_given or trace.initial_answer.strip():
            return False
        if trace.status == "no_info":
            return not trace.received.strip()
        return not (answer or "").strip()

    def fail(self, run: Run, reason: str) -> None:
        """Mark the run failed: the answer it returns is the input, not a correction."""
        run.trace.status = "failed"
        run.trace.failure = redact(reason)
        run.log("run", f"decoding failed: {run.trace.failure}", "error")

    def layout(self, run: Run, text: str) -> Layout | None:
        """`text` cut into its layout and sentences (`serc_dspy.core.layout`) under the run's
        deadline, which is checked before the split starts and between its blocks: past it the
        run fails (nothing was checked) and None comes back."""
        try:
            if run.deadline is not None and time.monotonic() > run.deadline:
                raise TimeoutError("it had passed before splitting started")
            return Layout.parse(text, deadline=run.deadline)
        except TimeoutError as exc:
            self.fail(run, f"the run's deadline of {self.deadline_s:g}s passed before the "
                           f"answer was split into sentences ({exc}); nothing was checked")
            return None

    def add_step(self, run: Run, step: Step) -> Step:
        with run.lock:
            run.trace.steps.append(step)
        return step

    # -- retrieval --------------------------------------------------------------------------
    async def retrieve(self, run: Run, query: str) -> list[Passage]:
        """Retrieve (off the event loop) and cap the context; raises RetrievalError, which
        callers must not hide."""
        if self.retriever is None:
            raise RetrievalError("no retriever configured")
        found = await run.offload(self.retriever, query, self.top_k)
        return cap_context(found, self.context_chars)


_DELIMITER = re.compile(r"<(\s*/?\s*passage)", re.IGNORECASE)


def _undelimit(text: str) -> str:
    """Untrusted text with anything that looks like a passage delimiter broken ("<passage" ->
    "‹passage"): a passage cannot close itself and open a fake one with a source of its
    choosing."""
    return _DELIMITER.sub(lambda m: "\u2039" + m.group(1), defang(text))


def format_passages(passages: list[Passage]) -> str:
    """Number and delimit the passages, naming their sources, so steps can cite them and a
    passage's text (untrusted, with field markers and delimiters defanged) cannot pass for the
    prompt's own or for another passage."""
    blocks = []
    for number, passage in enumerate(passages, 1):
        source = " ".join(_undelimit(passage.source).replace(">", "\u203a").split())
        source = f" source={source}" if source else ""
        blocks.append(f"<passage {number}{source}>\n{_undelimit(passage.text)}\n"
                      f"</passage {number}>")
    return "\n".join(blocks)
