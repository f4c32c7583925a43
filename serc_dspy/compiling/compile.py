"""Compile SERC's stages with DSPy optimizers and evaluate them before and after.

A stage is one SERC predictor (`single_verifier`, `fact_extractor`, `corrector`) wrapped in a
one-predictor `StageProgram` whose attribute has the same name as in SERC, so the state saved
from a stage program loads into `SERC(compiled=...)` unchanged. Evaluation uses `dspy.Evaluate`
with `max_errors` above the dev size: an example whose call or parse fails scores 0 and is
counted in `Score.failures` instead of aborting the run.

All LM work runs inside `dspy.context(lm=..., adapter=...)` (JSONAdapter by default, which the
embedded model needs); nothing here calls `dspy.configure`.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from serc_dspy.compiling.choice_devset import load_choice_examples
from serc_dspy.compiling.devsets import (
    Split,
    load_correction_examples,
    load_fact_examples,
    load_verdict_examples,
)
from serc_dspy.core.errors import UserError
from serc_dspy.evaluation.metrics.dspy_metrics import (
    VERDICT_LABELS,
    choice_metric,
    correction_metric,
    facts_metric,
    macro_f1,
    verdict_metric,
)
from serc_dspy.programs.serc import SERC
from serc_dspy.rules.quotes import hold_to_quote, opening_name
from serc_dspy.runtime.adapter import StrictJSONAdapter
from serc_dspy.runtime.states import save_compiled

OPTIMIZERS = ("labeled", "bootstrap", "mipro")
DEFAULT_DEMOS = 4


@dataclass(frozen=True)
class StageSpec:
    name: str
    predictor: str
    metric: Callable[..., Any]
    threshold: float  # a bootstrapped demo is kept when the metric reaches this
    output: str  # the output field the dev report looks at
    description: str


STAGES: dict[str, StageSpec] = {s.name: s for s in [
    StageSpec("verify", "single_verifier", verdict_metric, 1.0, "verdict",
              "claim verdicts vs Factcheck-GPT stances (exact match, macro-F1)"),
    StageSpec("verify_cited", "fact_checker", verdict_metric, 1.0, "verdict",
              "cited verdicts (a quote, then a verdict held to it) vs Factcheck-GPT stances; "
              "the offline models' verifier"),
    StageSpec("facts", "fact_extractor", facts_metric, 0.7, "facts",
              "atomic facts vs FActScore human facts (fact-level F1)"),
    StageSpec("correct", "corrector", correction_metric, 0.5, "corrections",
              "corrections vs Factcheck-GPT revised claims (gap closed)"),
    StageSpec("choose", "value_chooser", choice_metric, 1.0, "choice",
              "slot choices vs the value a Wikipedia bio states, its own or a planted rival "
              "listed first (exact option)"),
]}


def get_stage(name: str) -> StageSpec:
    try:
        return STAGES[name]
    except KeyError:
        raise UserError(f"unknown stage {name!r}; valid stages: {', '.join(STAGES)}") from None


class StageProgram(dspy.Module):
    """One SERC predictor as a program, stored under the predictor's name in SERC."""

    def __init__(self, predictor_name: str, predictor: dspy.Predict):
        super().__init__()
        self.predictor_name = predictor_name
        setattr(self, predictor_name, predictor)

    @property
    def predictor(self) -> dspy.Predict:
        return getattr(self, self.predictor_name)

    def forward(self, **inputs: Any) -> dspy.Prediction:
        return self.predictor(**inputs)


class CitedVerifier(StageProgram):
    """The verdict path the offline models run (`verdicts="fact"`): a cited verdict, then held
    to its own quote by the rule `SERC.cross_check` runs (`hold_to_quote`).

    SERC sends an unwitnessed contradiction to a second, uncited vote (`single_verifier`).
    That vote is the `verify` stage's predictor, not this one's, so it is left out here and
    this stage scores the cited verdict as the quote leaves it. The labelled claims come
    without a subject; the name a claim opens with stands in for it (`opening_name`)."""

    def __init__(self, fact_checker: dspy.Predict):
        super().__init__("fact_checker", fact_checker)

    def forward(self, evidence: str, claim: str) -> dspy.Prediction:
        result = self.fact_checker(evidence=evidence, claim=claim)
        quote = result.quote or ""
        held = hold_to_quote(result.verdict, claim, quote, evidence, opening_name(claim))
        return dspy.Prediction(verdict=held.verdict, quote=quote)


def stage_program(stage: str, predictor: dspy.Predict | None = None) -> StageProgram:
    """The program a stage is compiled and scored as: SERC's own predictor for it (a fresh,
    uncompiled one unless `predictor` is given)."""
    spec = get_stage(stage)
    if predictor is None:
        predictor = getattr(SERC(compiled=None), spec.predictor).reset_copy()
    if spec.name == "verify_cited":
        return CitedVerifier(predictor)
    return StageProgram(spec.predictor, predictor)


# -- data ----------------------------------------------------------------------------------------
_PATTERNS = {
    "stance": "subtask3_claim_evidence_stance*.jsonl",
    "claims": "subtask4_claim_factuality*.jsonl",
    "benchmark": "factcheck-GPT-benchmark*.jsonl",
    "benchmark_dev": "benchmark*.jsonl",
}
_FACTCHECK_DIRS = (".", "factcheck_gpt", "subtasks", "factcheck_gpt/subtasks")
_FACTSCORE_DIRS = (".", "labeled_dev", "factscore/labeled_dev", "labeled", "factscore/labeled",
                   "data/labeled", "factscore/data/labeled")


def _find(root: Path, pattern: str, dirs: tuple[str, ...], *, required: bool = True
          ) -> Path | None:
    for sub in dirs:
        found = sorted((root / sub).glob(pattern)) if (root / sub).is_dir() else []
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise UserError(f"several files match {pattern} in {root / sub}: "
                            f"{', '.join(p.name for p in found)}; keep one per folder")
    if required:
        raise UserError(f"no {pattern} under {root} (looked in {', '.join(dirs)})")
    return None


def find_stance_file(data: Path) -> Path:
    """Factcheck-GPT's stance file: `data` itself, or the one under it (see `_FACTCHECK_DIRS`)."""
    return data if data.is_file() else _find(data, _PATTERNS["stance"], _FACTCHECK_DIRS)


def _factscore_dir(root: Path) -> Path:
    for sub in _FACTSCORE_DIRS:
        folder = root / sub
        if folder.is_dir() and any(_has_annotations(p) for p in folder.glob("*.jsonl")):
            return folder
    raise UserError(f"no FActScore labelled .jsonl files (rows with 'annotations') under "
                    f"{root} (looked in {', '.join(_FACTSCORE_DIRS)})")


def _has_annotations(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as handle:
            return '"annotations"' in handle.readline()
    except OSError:
        return False


def load_stage_data(stage: str, data: str | os.PathLike[str], *, train: int | None,
                    dev: int | None, seed: int = 0, balanced: bool = True) -> Split:
    """Find a stage's files under `data` (a folder, or for one-file stages the file) and load."""
    root = Path(data).expanduser()
    if not root.exists():
        raise UserError(f"data path not found: {root}")
    spec = get_stage(stage)
    if spec.name in ("verify", "verify_cited"):
        return load_verdict_examples(find_stance_file(root), train=train, dev=dev, seed=seed,
                                     balanced=balanced)
    if spec.name == "facts":
        paths = root if root.is_file() else _factscore_dir(root)
        return load_fact_examples(paths, train=train, dev=dev, seed=seed)
    if spec.name == "choose":
        articles = root if root.is_file() else _find(root, "wikipedia_dev.json",
                                                     (".", "factscore_wiki"))
        return load_choice_examples(articles, train=train, dev=dev, seed=seed)
    if root.is_file():
        raise UserError("the correct stage needs a folder (claims, stances and optionally the "
                        "benchmark file), not a single file")
    benchmark = (_find(root, _PATTERNS["benchmark"], _FACTCHECK_DIRS, required=False)
                 or _find(root, _PATTERNS["benchmark_dev"], _FACTCHECK_DIRS, required=False))
    return load_correction_examples(
        _find(root, _PATTERNS["claims"], _FACTCHECK_DIRS),
        _find(root, _PATTERNS["stance"], _FACTCHECK_DIRS),
        benchmark_path=benchmark, train=train, dev=dev, seed=seed)


# -- evaluation ----------------------------------------------------------------------------------
@dataclass
class Score:
    """A dev evaluation: the mean metric in percent (as dspy.Evaluate reports it)."""

    score: float
    n: int
    failures: int
    seconds: float
    macro_f1: float | None = None
    per_label: dict[str, dict] | None = None
    values: list[float] | None = None
    """Each example's metric value, in dev order (intervals are resampled from them)."""
    gold: list[str] | None = None
    predicted: list[str | None] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"score": self.score, "n": self.n, "failures": self.failures,
               "seconds": round(self.seconds, 1)}
        if self.values is not None:
            out["values"] = self.values
        if self.gold is not None:
            out["gold"], out["predicted"] = self.gold, self.predicted
        if self.macro_f1 is not None:
            out["macro_f1"] = self.macro_f1
            out["per_label"] = self.per_label
        return out


def evaluate_stage(program: dspy.Module, devset: list[dspy.Example], stage: str, *,
                   num_threads: int = 1, display_progress: bool = False) -> Score:
    """Evaluate on the dev split; failed examples score 0 and are counted, never fatal."""
    if not devset:
        raise UserError(f"the dev split of stage {stage!r} is empty")
    spec = get_stage(stage)
    evaluator = dspy.Evaluate(
        devset=devset,
        metric=spec.metric,
        num_threads=num_threads,
        display_progress=display_progress,
        max_errors=len(devset) + 1,
        provide_traceback=False,
        failure_score=0.0,
    )
    started = time.monotonic()
    result = evaluator(program)
    seconds = time.monotonic() - started
    # dspy.Evaluate replaces a failed example's prediction by an empty dspy.Prediction().
    failures = sum(1 for _, prediction, _ in result.results if not list(prediction.keys()))
    score = Score(score=float(result.score), n=len(devset), failures=failures, seconds=seconds,
                  values=[float(value or 0.0) for _, _, value in result.results])
    if spec.name in ("verify", "verify_cited"):
        gold = [example.verdict for example, _, _ in result.results]
        predicted = [prediction.get("verdict") for _, prediction, _ in result.results]
        score.macro_f1, score.per_label = macro_f1(gold, predicted, VERDICT_LABELS)
        score.gold, score.predicted = gold, predicted
    return score


# -- optimisation --------------------------------------------------------------------------------
def make_optimizer(optimizer: str, stage: str, *, demos: int, trainsize: int,
                   num_threads: int = 1, seed: int = 0):
    spec = get_stage(stage)
    if optimizer == "labeled":
        return dspy.LabeledFewShot(k=demos)
    if optimizer == "bootstrap":
        return dspy.BootstrapFewShot(
            metric=spec.metric, metric_threshold=spec.threshold,
            max_bootstrapped_demos=demos, max_labeled_demos=demos, max_rounds=1,
            max_errors=trainsize + 1)
    if optimizer == "mipro":
        if importlib.util.find_spec("optuna") is None:
            raise UserError("--optimizer mipro needs optuna, which DSPy makes optional: "
                            "pip install 'dspy[optuna]'")
        return dspy.MIPROv2(
            metric=spec.metric, auto="light", max_bootstrapped_demos=demos,
            max_labeled_demos=demos, num_threads=num_threads, max_errors=trainsize + 1,
            seed=seed, metric_threshold=spec.threshold)
    return _any_teleprompter(optimizer, spec, demos=demos, num_threads=num_threads, seed=seed)


def resolve_teleprompter(name: str) -> type:
    """A DSPy teleprompter class by name (`SIMBA`, `BootstrapFewShotWithRandomSearch`) or by
    import path (`package.module:Class` or `package.module.Class`)."""
    import importlib
    import inspect

    found = None
    if ":" in name or "." in name:
        module_name, _, attr = name.replace(":", ".").rpartition(".")
        try:
            found = getattr(importlib.import_module(module_name), attr, None)
        except ImportError as exc:
            raise UserError(f"cannot import optimizer {name!r}: {exc}") from None
    else:
        found = getattr(dspy, name, None) or getattr(dspy.teleprompt, name, None)
    if not (inspect.isclass(found) and issubclass(found, dspy.teleprompt.Teleprompter)):
        raise UserError(f"unknown optimizer {name!r}: give {', '.join(OPTIMIZERS)}, a DSPy "
                        "teleprompter class name (e.g. SIMBA) or an import path "
                        "(package.module:Class)")
    return found


def _any_teleprompter(name: str, spec: StageSpec, *, demos: int, num_threads: int, seed: int):
    """Build any teleprompter with the stage's metric and the options it accepts."""
    return build_teleprompter(name, resolve_teleprompter(name), {
        "metric": spec.metric, "max_bootstrapped_demos": demos, "max_labeled_demos": demos,
        "num_threads": num_threads, "seed": seed, "metric_threshold": spec.threshold})


def build_teleprompter(name: str, cls: type, wanted: dict[str, Any]):
    """`cls(**options)` with those of `wanted` its constructor accepts; a teleprompter that
    needs more than these (GEPA: a reflection LM) fails with a message saying so."""
    import inspect

    accepted = inspect.signature(cls.__init__).parameters
    options = {k: v for k, v in wanted.items() if k in accepted}
    try:
        return cls(**options)
    except Exception as exc:  # a teleprompter needing more (GEPA: reflection_lm...) says so
        raise UserError(f"cannot build optimizer {name} with {sorted(options)}: "
                        f"{type(exc).__name__}: {exc}") from None


def run_optimizer(optimizer: str, student: StageProgram, trainset: list[dspy.Example],
                  stage: str, *, demos: int = DEFAULT_DEMOS, num_threads: int = 1,
                  seed: int = 0) -> StageProgram:
    if not trainset:
        raise UserError(f"the train split of stage {stage!r} is empty")
    if demos < 1:
        raise UserError(f"demos must be at least 1, got {demos}")
    teleprompter = make_optimizer(optimizer, stage, demos=demos, trainsize=len(trainset),
                                  num_threads=num_threads, seed=seed)
    if optimizer == "labeled":
        # The first k in split order: a balanced split interleaves the labels, so k >= 3
        # demos cover every verdict (random sampling could miss the rare one).
        return teleprompter.compile(student, trainset=trainset, sample=False)
    if optimizer == "mipro":
        if len(trainset) < 2:
            raise UserError("--optimizer mipro needs at least 2 training examples")
        return teleprompter.compile(student, trainset=trainset, seed=seed,
                                    minibatch_size=max(1, min(35, len(trainset) * 4 // 5)))
    return teleprompter.compile(student, trainset=trainset)


@dataclass
class StageResult:
    stage: str
    optimizer: str
    program: StageProgram
    before: Score
    after: Score
    compile_seconds: float
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def predictor_name(self) -> str:
        return get_stage(self.stage).predictor

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "predictor": self.predictor_name,
                "optimizer": self.optimizer, "demos": len(self.program.predictor.demos),
                "before": self.before.to_dict(), "after": self.after.to_dict(),
                "compile_seconds": round(self.compile_seconds, 1), "data": self.counts}


def compile_stage(stage: str, split: Split, *, lm: dspy.LM, optimizer: str = "labeled",
                  demos: int = DEFAULT_DEMOS, adapter: Any = None, num_threads: int = 1,
                  seed: int = 0, display_progress: bool = False,
                  log: Callable[[str], None] | None = None) -> StageResult:
    """Evaluate a fresh stage program on dev, optimise it on train, evaluate it again."""
    say = log or (lambda message: None)
    spec = get_stage(stage)
    if optimizer not in OPTIMIZERS:
        resolve_teleprompter(optimizer)  # fail before any LM call
    if not split.train or not split.dev:
        raise UserError(f"stage {stage!r} needs train and dev examples, got "
                        f"{len(split.train)} train / {len(split.dev)} dev")
    with dspy.context(lm=lm, adapter=adapter if adapter is not None else StrictJSONAdapter()):
        student = stage_program(stage)
        say(f"{stage}: evaluating the uncompiled {spec.predictor} on {len(split.dev)} dev "
            "examples")
        before = evaluate_stage(student, split.dev, stage, num_threads=num_threads,
                                display_progress=display_progress)
        say(f"{stage}: compiling with {optimizer} on {len(split.train)} train examples")
        started = time.monotonic()
        compiled = run_optimizer(optimizer, student, split.train, stage, demos=demos,
                                 num_threads=num_threads, seed=seed)
        compile_seconds = time.monotonic() - started
        say(f"{stage}: evaluating the compiled {spec.predictor}")
        after = evaluate_stage(compiled, split.dev, stage, num_threads=num_threads,
                               display_progress=display_progress)
    return StageResult(stage, optimizer, compiled, before, after, compile_seconds,
                       dict(split.counts))


def assemble(results: list[StageResult]):
    """The program to save: the stage program itself, or a SERC carrying every stage."""

    if len(results) == 1:
        return results[0].program, StageProgram(
            results[0].predictor_name, stage_program(results[0].stage).predictor)
    serc, reference = SERC(), SERC()
    for result in results:
        setattr(serc, result.predictor_name, result.program.predictor)
    return serc, reference


def save_results(results: list[StageResult], path: str | os.PathLike[str],
                 meta: dict[str, Any] | None = None) -> Path:
    """Save the compiled stages (one state file) with their scores in `meta`."""
    if not results:
        raise UserError("nothing to save: no stage was compiled")
    program, reference = assemble(results)
    meta = dict(meta or {})
    meta["stages"] = {r.stage: r.to_dict() for r in results}
    return save_compiled(program, path, meta, stages=[r.predictor_name for r in results],
                         reference=reference)
