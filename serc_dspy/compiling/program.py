"""Compile a whole SERC end to end: any DSPy optimizer over every predictor at once, scored by
the planted-error metric on drafts with known errors (`serc compile --stage serc`).

A stage compile (`compile.py`) tunes one predictor against its own labels; this one lets an
optimizer such as `BootstrapFewShot` trace complete decodings and keep, for every predictor,
the demos of runs that fixed their planted errors. Examples come from an articles file
(`evaluation.metrics.dspy_metrics.planted_error_examples`): train and dev are different bios,
so the dev score is on articles nothing was chosen by. The retriever is BM25 over the
bodies of every drafted article (leads removed), the planted-error benchmark's corpus.
"""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from serc_dspy.compiling.compile import Score, build_teleprompter, resolve_teleprompter
from serc_dspy.compiling.devsets import Split
from serc_dspy.core.errors import UserError
from serc_dspy.evaluation.injection import corpus_articles, load_articles, make_drafts
from serc_dspy.evaluation.metrics.dspy_metrics import planted_error_examples, planted_error_score
from serc_dspy.programs.serc import SERC
from serc_dspy.retrieval.knowledge import KnowledgeSource
from serc_dspy.runtime.adapter import StrictJSONAdapter
from serc_dspy.runtime.states import save_compiled

PROGRAM_STAGE = "serc"
_ARTICLE_PATTERNS = ("wikipedia*.json", "*articles*.json")
_ARTICLE_DIRS = (".", "factscore_wiki")


def find_articles(data: str | os.PathLike[str]) -> Path:
    """The articles file: `data` itself, or the one `wikipedia*.json` under it."""
    root = Path(data).expanduser()
    if root.is_file():
        return root
    for sub in _ARTICLE_DIRS:
        for pattern in _ARTICLE_PATTERNS:
            found = sorted((root / sub).glob(pattern)) if (root / sub).is_dir() else []
            if found:
                return found[0]
    raise UserError(f"no articles file (wikipedia*.json) under {root} (looked in "
                    f"{', '.join(_ARTICLE_DIRS)}); --stage serc needs one")


def load_program_data(data: str | os.PathLike[str], *, train: int, dev: int, seed: int = 0,
                      errors: int = 2, sentences: int = 3) -> tuple[Split, Any]:
    """Planted-error examples (train bios, then dev bios) and the retriever they decode with."""

    path = find_articles(data)
    articles = load_articles(path)
    examples = planted_error_examples(articles, bios=train + dev, errors=errors, seed=seed,
                                      sentences=sentences)
    if len(examples) <= train:
        raise UserError(f"{path} gave {len(examples)} drafts with {errors} plantable errors; "
                        f"--stage serc needs more than --train {train}")
    drafts = make_drafts(articles, bios=train + dev, errors=errors, seed=seed,
                         sentences=sentences)
    retriever = KnowledgeSource.from_json(corpus_articles(articles, drafts))
    counts = {"source": str(path), "examples": len(examples), "skipped": 0,
              "train": train, "dev": len(examples) - train, "errors": errors}
    return Split(examples[:train], examples[train:train + dev], counts), retriever


def evaluate_program(program: dspy.Module, devset: list[dspy.Example], *,
                     num_threads: int = 1, display_progress: bool = False) -> Score:
    """Mean planted-error score in percent; a decoding that failed scores 0 and is counted."""

    if not devset:
        raise UserError("the dev split of --stage serc is empty")
    evaluator = dspy.Evaluate(devset=devset, metric=planted_error_score,
                              num_threads=num_threads, display_progress=display_progress,
                              max_errors=len(devset) + 1, provide_traceback=False,
                              failure_score=0.0)
    started = time.monotonic()
    result = evaluator(program)
    failures = sum(1 for _, prediction, _ in result.results
                   if not list(prediction.keys())
                   or getattr(prediction.get("trace"), "status", "") == "failed")
    return Score(score=float(result.score), n=len(devset), failures=failures,
                 seconds=time.monotonic() - started)


@dataclass
class ProgramResult:
    """A whole-SERC compile: the program, its dev scores before and after, and the data."""

    optimizer: str
    program: dspy.Module
    before: Score
    after: Score
    compile_seconds: float
    counts: dict[str, Any] = field(default_factory=dict)
    stage: str = PROGRAM_STAGE

    def demos(self) -> dict[str, int]:
        return {name: len(p.demos) for name, p in self.program.named_predictors() if p.demos}

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "predictor": "every predictor",
                "optimizer": self.optimizer, "demos": self.demos(),
                "before": self.before.to_dict(), "after": self.after.to_dict(),
                "compile_seconds": round(self.compile_seconds, 1), "data": self.counts}


def make_program_optimizer(name: str, *, demos: int, trainsize: int, num_threads: int = 1,
                           seed: int = 0):
    """`bootstrap` (the default for a whole program: demos from decodings that scored), or
    any DSPy teleprompter by name or import path, given the planted-error metric."""

    if name == "labeled":
        raise UserError("--optimizer labeled needs labels per predictor; a whole SERC has "
                        "none. Use bootstrap, or a teleprompter such as SIMBA")
    if name == "bootstrap":
        cls = dspy.BootstrapFewShot
    elif name == "mipro":
        if importlib.util.find_spec("optuna") is None:
            raise UserError("--optimizer mipro needs optuna, which DSPy makes optional: "
                            "pip install 'dspy[optuna]'")
        cls = dspy.MIPROv2
    else:
        cls = resolve_teleprompter(name)
    return build_teleprompter(name, cls, {
        "metric": planted_error_score, "max_bootstrapped_demos": demos, "max_labeled_demos": 0,
        "num_threads": num_threads, "seed": seed, "metric_threshold": 0.99, "max_rounds": 1,
        "max_errors": trainsize + 1})


def compile_program(split: Split, retriever: Any, *, lm: dspy.LM, optimizer: str = "bootstrap",
                    demos: int = 2, adapter: Any = None, num_threads: int = 1, seed: int = 0,
                    program_options: dict[str, Any] | None = None,
                    display_progress: bool = False, log=None) -> ProgramResult:
    """Evaluate a frozen SERC on dev, optimise the whole program on train, evaluate again."""

    say = log or (lambda message: None)
    if not split.train or not split.dev:
        raise UserError(f"--stage serc needs train and dev bios, got {len(split.train)} train "
                        f"/ {len(split.dev)} dev")
    teleprompter = make_program_optimizer(optimizer, demos=demos, trainsize=len(split.train),
                                          num_threads=num_threads, seed=seed)
    options = {**(program_options or {}), "compiled": None}
    with dspy.context(lm=lm, adapter=adapter if adapter is not None else StrictJSONAdapter()):
        student = SERC(retriever=retriever, **options)
        say(f"serc: decoding {len(split.dev)} dev bios with the frozen prompts")
        before = evaluate_program(student, split.dev, num_threads=num_threads,
                                  display_progress=display_progress)
        say(f"serc: compiling the whole program with {optimizer} on {len(split.train)} bios")
        started = time.monotonic()
        compiled = teleprompter.compile(student, trainset=split.train)
        compile_seconds = time.monotonic() - started
        say("serc: decoding the dev bios with the compiled program")
        after = evaluate_program(compiled, split.dev, num_threads=num_threads,
                                 display_progress=display_progress)
    return ProgramResult(optimizer, compiled, before, after, compile_seconds,
                         dict(split.counts))


def save_program(result: ProgramResult, path: str | os.PathLike[str],
                 meta: dict[str, Any] | None = None) -> Path:
    """Save every predictor that got demos (or new instructions) as one state file."""

    meta = dict(meta or {})
    meta["stages"] = {PROGRAM_STAGE: result.to_dict()}
    reference = SERC(compiled=None)
    changed = [name for name, predictor in result.program.named_predictors()
               if predictor.demos or predictor.signature.instructions
               != dict(reference.named_predictors())[name].signature.instructions]
    if not changed:
        raise UserError("the optimizer changed no predictor (no decoding of the train bios "
                        "reached the metric's threshold); nothing was saved")
    return save_compiled(result.program, path, meta, stages=changed, reference=reference)
