"""Quality benchmarks that work at any model size: planted errors and HaluEval QA.

Both run through `run_experiment`, so every run is resumable (re-running the same command
skips finished bios and retries failed ones) and every results file also feeds `serc report`.

Layout of `serc bench noise --out DIR` (`S` is `""` for seed 0 and `-s{seed}` otherwise, so
folders made before `--seeds` existed read as seed 0):
- `DIR/drafts-k{K}S.json`: the noisy drafts and their recorded errors (deterministic from the
  seed; rewritten identically on every run);
- `DIR/{method}-k{K}S.jsonl`: the runner's results, plus `.meta.json`;
- `DIR/{method}-k{K}S.noise.jsonl` and `.noise.summary.json`: per-bio scores and their summary;
- `DIR/noise.json`, `DIR/noise.md` and `DIR/waterfall.png`: every method at every K, the seeds
  of one K pooled, each rate with its 95% bootstrap interval over bios.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import read_json, read_jsonl, write_json, write_jsonl
from serc_dspy.core.text import glued_pieces
from serc_dspy.evaluation.ablation import (
    VARIANT,
    ablation,
    ablation_table,
    seed_ablation,
    variants,
)
from serc_dspy.evaluation.datasets import Item
from serc_dspy.evaluation.halueval_score import halueval_outcome
from serc_dspy.evaluation.injection import NoisyDraft, corpus_articles, load_articles, make_drafts
from serc_dspy.evaluation.intervals import Pair, format_ci, paired_difference, with_intervals
from serc_dspy.evaluation.noise import NoiseScore, NoiseSummary, score_records, summarize_noise
from serc_dspy.evaluation.protocol import split_of_articles
from serc_dspy.evaluation.report import pyplot, save_figure
from serc_dspy.evaluation.results import read_results, read_score_rows, sibling
from serc_dspy.evaluation.runner import run_experiment
from serc_dspy.programs.registry import get_method
from serc_dspy.retrieval.knowledge import KnowledgeSource
from serc_dspy.rules.questions import question_kind

WATERFALL_NAME = "waterfall.png"
SUMMARY_FIELDS = ("residual_error_rate", "correction_rate", "deletion_rate", "false_alarm_rate",
                  "introduced_per_bio", "preservation", "verbatim_share", "degenerate_per_bio",
                  "length_ratio", "calls_per_bio", "tokens_per_bio")
_RUN_NAME = re.compile(r"(?P<method>.+)-k(?P<k>\d+)(?:-s(?P<seed>\d+))?")


def seed_suffix(seed: int) -> str:
    """File-name suffix of a seed's runs: none for seed 0, so older folders stay readable."""
    return "" if seed == 0 else f"-s{seed}"


def _corpus_retriever(text: str, name: str):
    return KnowledgeSource.from_json({name: text})


def unglued(knowledge: str) -> str:
    """HaluEval's knowledge is its Wikipedia paragraphs glued with no space ("... in the 19th
    century.First for Women is ..."): the paragraph break put back (`core.text.glue_cuts`), so
    the sentences split where the paragraphs met. An item's knowledge (at most 994 characters
    in the 500 questions) is shorter than one passage
    (`retrieval.knowledge.DEFAULT_PASSAGE_CHARS`), so it stays one passage, its whitespace
    folded: no rule sees where a paragraph ends. (Within any passage,
    `rules.slots.about_subject` splits glued sentences too.)"""
    return "\n\n".join(glued_pieces(knowledge))


def run_noise(
    articles_path: str | os.PathLike[str] | Mapping[str, Any],
    out_dir: str | os.PathLike[str],
    *,
    methods: Sequence[str],
    errors: Sequence[int],
    bios: int,
    seed: int = 0,
    seeds: Sequence[int] | None = None,
    ablate: Sequence[str] = (),
    ablate_rerun_all: bool = False,
    sentences: int = 3,
    include_lead: bool = False,
    offset: int = 0,
    lm: Any = None,
    progress: bool = True,
    on_run: Callable[[str, int, Any], None] | None = None,
    **method_options: Any,
) -> dict[str, Any]:
    """Plant K errors in `bios` leads for each K, decode with each method, score everything.

    The corpus of each bio is its own article's body (BM25 over passages), with the lead too if
    `include_lead`. `offset` skips the first articles of the file (a held-out split). `seeds`
    (default: just `seed`) plants errors once per seed on the same bios; the summaries pool
    them. Returns the combined summary (also written to `DIR/noise.json`).
    """
    if not methods:
        raise UserError("give at least one --method")
    articles = load_articles(articles_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for k in errors:
        for one_seed in (seeds if seeds else [seed]):
            _run_noise_seed(articles, articles_path, out, k=k, seed=one_seed, methods=methods,
                            ablate=ablate, ablate_rerun_all=ablate_rerun_all,
                            bios=bios, sentences=sentences,
                            include_lead=include_lead, offset=offset, lm=lm, progress=progress,
                            on_run=on_run, method_options=method_options)
    rescore_noise(out, articles)  # every run in `out`, earlier ones included, scored alike
    return write_noise_report(collect_noise(out), out)


def _run_noise_seed(articles, articles_path, out: Path, *, k: int, seed: int, methods, ablate,
                    ablate_rerun_all, bios, sentences, include_lead, offset, lm, progress, on_run,
                    method_options):
    drafts = make_drafts(articles, bios=bios, errors=k, seed=seed, sentences=sentences,
                         offset=offset)
    suffix = seed_suffix(seed)
    write_json(out / f"drafts-k{k}{suffix}.json", [d.model_dump(mode="json") for d in drafts])
    corpora = corpus_articles(articles, drafts, include_lead=include_lead)
    items = [Item(id=d.id, question=d.question, topic=d.title, draft=d.draft) for d in drafts]
    source = str(articles_path) if not isinstance(articles_path, Mapping) else "<memory>"
    for label, method, rules_off in variants(methods, ablate, accepts_rules):
        options = with_rules_off(method_options, rules_off)
        if rules_off and not ablate_rerun_all:
            seed_ablation(out / f"{method}-k{k}{suffix}.jsonl",
                          out / f"{label}-k{k}{suffix}.jsonl", rules_off, progress)
        summary = run_experiment(
            method, items, out / f"{label}-k{k}{suffix}.jsonl", lm=lm, progress=progress,
            dataset=f"noise-k{k}",
            retriever=_NamedRetriever(f"article-body{'+lead' if include_lead else ''}"),
            retriever_for=lambda item, c=corpora: _corpus_retriever(c[item.topic], item.topic),
            meta={"articles": source, "bios": bios, "errors": k, "seed": seed,
                  "sentences": sentences, "include_lead": include_lead,
                  "split": split_of_articles(source),
                  **({"offset": offset} if offset else {})},
            **options)
        if on_run:
            on_run(label, k, summary)


def accepts_rules(method: str) -> bool:
    """Whether a registered method takes `rules=` (the SERC family)."""

    return get_method(method).accepts("rules")


def with_rules_off(options: dict[str, Any], off: dict[str, bool]) -> dict[str, Any]:
    """`options` with the rules of `off` switched off, beside any the caller switched."""
    if not off:
        return options
    return {**options, "rules": {**(options.get("rules") or {}), **off}}


class _NamedRetriever:
    """Names a per-item retriever in a results file's meta; never called."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, query: str, k: int = 5):  # pragma: no cover - never used
        raise UserError("per-item retriever called without an item")


def score_noise_run(run_path: str | os.PathLike[str], drafts: Sequence[NoisyDraft],
                    articles: Mapping[str, str]) -> NoiseSummary:
    """Score one results file; writes `RUN.noise.jsonl` and `RUN.noise.summary.json`."""
    records = read_results(run_path)
    scores = score_records(drafts, articles, records)
    write_jsonl(sibling(run_path, ".noise.jsonl"),
                 [s.model_dump(mode="json") if s else {"id": ident, "failed": True}
                  for ident, s in scores])
    summary = summarize_noise(s for _, s in scores)
    write_json(sibling(run_path, ".noise.summary.json"), summary.model_dump(mode="json"))
    return summary


def load_drafts(path: str | os.PathLike[str]) -> list[NoisyDraft]:
    """The drafts a `serc bench noise` run planted (`DIR/drafts-k{K}S.json`)."""
    return [NoisyDraft.model_validate(r) for r in read_json(path, what="drafts file")]


def _runs(out: Path, suffix: str) -> list[tuple[Path, str, int, int]]:
    """(path, method, K, seed) of every noise run file in `out` ending in `suffix`."""
    found = []
    for path in sorted(out.glob(f"*-k*{suffix}")):
        m = _RUN_NAME.fullmatch(path.name[: -len(suffix)])
        if m and m["method"] != "drafts":
            found.append((path, m["method"], int(m["k"]), int(m["seed"] or 0)))
    return found


def rescore_noise(out_dir: str | os.PathLike[str], articles: Mapping[str, str]) -> int:
    """Score every `{method}-k{K}S.jsonl` in `out_dir` against its `drafts-k{K}S.json`, so a
    change of the scoring rules reaches runs made before it. Returns the runs scored."""
    out, scored = Path(out_dir), 0
    for path, _method, k, seed in _runs(out, ".jsonl"):
        drafts_path = out / f"drafts-k{k}{seed_suffix(seed)}.json"
        if drafts_path.is_file():
            score_noise_run(path, load_drafts(drafts_path), articles)
            scored += 1
    return scored


def read_noise_scores(path: str | os.PathLike[str]) -> list[NoiseScore | None]:
    """The per-bio scores of one `RUN.noise.jsonl` (None for a failed bio)."""
    return list(read_score_rows(path, NoiseScore, "noise scores").values())


def collect_noise_scores(out_dir: str | os.PathLike[str]
                         ) -> dict[int, dict[str, dict[int, list[NoiseScore | None]]]]:
    """`{K: {method: {seed: scores}}}` of every scored run under `out_dir`."""
    found: dict[int, dict[str, dict[int, list[NoiseScore | None]]]] = {}
    for path, method, k, seed in _runs(Path(out_dir), ".noise.jsonl"):
        found.setdefault(k, {}).setdefault(method, {})[seed] = read_noise_scores(path)
    return found


def _summary(by_seed: Mapping[int, Sequence[NoiseScore | None]]) -> NoiseSummary:
    summary = summarize_noise(s for scores in by_seed.values() for s in scores)
    return NoiseSummary(**{**summary.model_dump(), "seeds": sorted(by_seed)})


def collect_noise(out_dir: str | os.PathLike[str]) -> dict[int, dict[str, NoiseSummary]]:
    """Every method at every K under `out_dir`, the seeds of one K pooled (bios resampled
    whole, their seeds together)."""
    return {k: {method: _summary(by_seed) for method, by_seed in runs.items()}
            for k, runs in sorted(collect_noise_scores(out_dir).items())}


def _pooled(out_dir: str | os.PathLike[str], method: str) -> dict[str, Any]:
    """One method over every K and seed: error rates from K > 0, false alarms from every run."""
    scores = [s for runs in collect_noise_scores(out_dir).values()
              for by_seed in [runs.get(method, {})] for ss in by_seed.values() for s in ss]
    summary = summarize_noise(scores).model_dump(mode="json")
    return {k: v for k, v in summary.items() if k != "by_kind"}


def write_noise_report(by_k: Mapping[int, Mapping[str, NoiseSummary]],
                       out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    out = Path(out_dir)
    methods = list(dict.fromkeys(m for runs in by_k.values() for m in runs))
    combined = {
        "methods": {m: _pooled(out, m) for m in methods},
        "by_errors": {str(k): {m: s.model_dump(mode="json") for m, s in runs.items()}
                      for k, runs in sorted(by_k.items())},
    }
    try:
        combined["waterfall"] = str(write_waterfall(by_k, out / WATERFALL_NAME))
    except UserError as exc:
        combined["waterfall"] = None
        combined["waterfall_error"] = str(exc)
    combined["ablation"] = ablation(out, "noise")
    write_json(out / "noise.json", combined)
    ablated = ablation_table(combined["ablation"])
    (out / "noise.md").write_text(noise_table(by_k) + (
        f"\nRules switched off, against the full method:\n\n{ablated}" if ablated else ""),
        encoding="utf-8")
    return combined


def _f(value: float | None, spec: str = ".3f") -> str:
    return "–" if value is None else format(value, spec)


def noise_table(by_k: Mapping[int, Mapping[str, NoiseSummary]]) -> str:
    """One row per K and method; rates carry their 95% interval over bios in brackets."""
    lines = ["| K | method | seeds | bios | failed | injected | residual | corrected | deleted | "
             "false alarm | preserved | verbatim | degenerate/bio | length | introduced/bio | "
             "calls/bio | tokens/bio |",
             "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in sorted(by_k):
        for method, s in by_k[k].items():
            seeds = ",".join(map(str, getattr(s, "seeds", None) or [0]))

            def ci(name, spec=".3f", s=s):
                return format_ci(getattr(s, name), s.ci(name), spec)

            lines.append(
                f"| {k} | {method} | {seeds} | {s.bios} | {s.failed} | {s.injected} | "
                f"{ci('residual_error_rate')} | {ci('correction_rate')} | "
                f"{ci('deletion_rate')} | {ci('false_alarm_rate')} | {ci('preservation')} | "
                f"{ci('verbatim_share')} | {ci('degenerate_per_bio', '.2f')} | "
                f"{ci('length_ratio', '.2f')} | {_f(s.introduced_per_bio, '.2f')} | "
                f"{_f(s.calls_per_bio, '.1f')} | {_f(s.tokens_per_bio, '.0f')} |")
    return "\n".join(lines) + "\n"


def write_waterfall(by_k: Mapping[int, Mapping[str, NoiseSummary]],
                    path: str | os.PathLike[str]) -> Path:
    """Residual error rate against injected errors per bio, one curve per method; at K = 0
    (no errors to leave) the point is the false-alarm rate, drawn hollow."""

    fig, ax = pyplot().subplots(figsize=(6, 4.2))
    methods = list(dict.fromkeys(m for runs in by_k.values() for m in runs))
    for method in methods:
        ks = sorted(k for k in by_k if method in by_k[k])
        xs = [k for k in ks if k > 0 and by_k[k][method].residual_error_rate is not None]
        line = ax.plot(xs, [by_k[k][method].residual_error_rate for k in xs], marker="o",
                       label=method)
        if 0 in ks and by_k[0][method].false_alarm_rate is not None:
            ax.scatter([0], [by_k[0][method].false_alarm_rate], facecolors="none",
                       edgecolors=line[0].get_color(), s=50)
    ax.set_xlabel("injected errors per bio (K); K = 0 shows the false-alarm rate")
    ax.set_ylabel("residual error rate")
    ax.set_title("Planted-error waterfall")
    ax.set_ylim(-0.05, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


# -- HaluEval QA ----------------------------------------------------------------------------------
def load_halueval(path: str | os.PathLike[str], limit: int | None = None,
                  offset: int = 0) -> list[dict[str, Any]]:
    """HaluEval QA rows `{knowledge, question, right_answer, hallucinated_answer}`, the first
    `offset` left out (a report split past the items a method was tuned on)."""
    rows = read_jsonl(path, what="HaluEval data file")
    if not rows:
        raise UserError(f"{path} holds no HaluEval rows (JSON lines)")
    keep = []
    for number, row in enumerate(rows, 1):
        missing = [k for k in ("knowledge", "question", "right_answer", "hallucinated_answer")
                   if not isinstance(row.get(k), str) or not row[k].strip()]
        if missing:
            raise UserError(f"{path}: row {number} lacks {', '.join(missing)}")
        keep.append({**row, "id": f"halueval-{number}"})
    keep = keep[offset:]
    return keep[:limit] if limit is not None else keep


def run_halueval(data: str | os.PathLike[str], out_dir: str | os.PathLike[str], *,
                 method: str, limit: int | None, lm: Any = None, progress: bool = True,
                 offset: int = 0, ablate: Sequence[str] = (), ablate_rerun_all: bool = False,
                 **method_options: Any) -> dict[str, Any]:
    """Decode each hallucinated answer against the item's own knowledge (fix rate), and the
    right answer as a control draft (break rate: a right answer that stops being right); each
    rate also by question type (`rules.answers.question_kind`), so a weak type is visible.

    With `ablate`, the method runs again with each rule off on the same items (answers the
    rule never acted on carried over unless `ablate_rerun_all`), and `summary["ablation"]`
    gives each rate's paired difference, off - on."""
    rows = load_halueval(data, limit, offset)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"method": method, "items": len(rows), "offset": offset}
    per_item: dict[str, dict[str, dict[str, Pair]]] = {}
    for label, name, rules_off in variants([method], ablate,
                                           lambda m: get_method(m).accepts("rules")):
        options = dict(method_options)
        if rules_off:
            options["rules"] = {**dict(options.get("rules") or {}), **rules_off}
        result, pairs = _halueval_runs(rows, data, out, label, name, lm, progress, offset,
                                       limit, seed_from=method if rules_off and
                                       not ablate_rerun_all else None, **options)
        per_item[label] = pairs
        if label == method:
            summary.update(result)
        else:
            summary.setdefault("ablation", {})[label] = {
                figure: paired_difference(pairs[figure], per_item[method][figure],
                                          figure=figure).model_dump()
                for figure in pairs}
    write_json(out / f"halueval-{method}.json", summary)
    return summary


def _halueval_runs(rows, data, out: Path, label: str, method: str, lm, progress, offset, limit,
                   *, seed_from: str | None = None, **method_options: Any
                   ) -> tuple[dict[str, Any], dict[str, dict[str, Pair]]]:
    """One method (or an ablated variant, `label`) on the hallucinated and the control
    drafts: its summary, and each rate's per-item pairs for paired differences."""
    knowledge = {r["id"]: unglued(r["knowledge"]) for r in rows}
    summary: dict[str, Any] = {}
    pairs: dict[str, dict[str, Pair]] = {}
    for run, field in (("hallucinated", "hallucinated_answer"), ("control", "right_answer")):
        items = [Item(id=r["id"], question=r["question"], topic=r["id"], draft=r[field])
                 for r in rows]
        path = out / f"{label}-{run}.jsonl"
        if seed_from is not None:
            rule = label.split(VARIANT, 1)[1]
            seed_ablation(out / f"{seed_from}-{run}.jsonl", path, {rule: False}, progress)
        run_experiment(method, items, path, lm=lm, progress=progress,
                       dataset=f"halueval-{run}", retriever=_NamedRetriever("item-knowledge"),
                       retriever_for=lambda item: _corpus_retriever(knowledge[item.id],
                                                                    item.id),
                       meta={"data": str(data), "limit": limit, "offset": offset},
                       **method_options)
        by_id = {r["id"]: r for r in rows}
        outcomes, colds, failed, calls, tokens = [], [], 0, 0, 0
        types: list[str] = []
        main = "fix_rate" if run == "hallucinated" else "break_rate"
        pairs[main] = {}
        for record in read_results(path):
            row = by_id.get(str(record.get("id")))
            if row is None:
                continue
            if record.get("error"):
                failed += 1
                continue
            outcome = halueval_outcome(record.get("answer"), row["right_answer"],
                                       row["hallucinated_answer"])
            outcomes.append(outcome)
            pairs[main][row["id"]] = (float(outcome["fixed"] if run == "hallucinated"
                                            else not outcome["right"]), 1.0)
            types.append(question_kind(row["question"]))
            colds.append(bool((record.get("trace") or {}).get("cold_start")))
            usage = ((record.get("trace") or {}).get("usage") or {}).get("total") or {}
            calls += usage.get("calls", 0)
            tokens += usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        n = len(outcomes)
        summary[run] = {
            "scored": n, "failed": failed,
            **with_intervals({
                main: list(pairs[main].values()),
                "right_rate": [(float(o["right"]), 1.0) for o in outcomes],
                "cold_start_rate": [(float(c), 1.0) for c in colds]}),
            "calls_per_item": calls / n if n else None,
            "tokens_per_item": tokens / n if n else None,
            "by_type": {kind: {"n": types.count(kind), **with_intervals({main: [
                pair for pair, t in zip(pairs[main].values(), types, strict=True)
                if t == kind]})} for kind in sorted(set(types))},
        }
    return summary, pairs
