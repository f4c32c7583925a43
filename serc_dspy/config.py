"""The run configuration: every option of a command that runs a method, as one typed model.

Each command adds the shared flags with `add_run_options` (`commands/options.py`), reads them
back with `RunOptions.from_args`, and builds what it runs with `build_run`, each part in one
place:

    options = RunOptions.from_args(args)     # typed; the LM's run defaults filled in
    run = build_run(options, ["serc"])       # retriever: factory -> throttle -> cache; the LM
    program = run.program("serc")            # with its throttles, timeouts and stage LMs

No namespace is changed: unset values (None) are filled from `run_defaults(lm)` (a named offline
model's CPU defaults, else the paper's settings) while the model is built. Library code never
reads flags; configuration enters at the edges, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

from serc_dspy import backends, programs
from serc_dspy.backends.models import DEFAULT_MODEL
from serc_dspy.backends.spec import run_defaults
from serc_dspy.commands.progress import AssemblyProgress
from serc_dspy.core.errors import UserError
from serc_dspy.programs.registry import SERC_ONLY_OPTIONS, get_method
from serc_dspy.retrieval.factory import (
    DENSE_NEEDS_CORPUS,
    knowledge_source,
    local_corpus,
    maybe_cached,
    web_search,
)
from serc_dspy.rules import check_ids, parse_switches
from serc_dspy.runtime.throttle import check_rate
from serc_dspy.verifiers import verifier_from_spec

DEFAULT_LM = DEFAULT_MODEL
"""`--lm`'s one default: the offline default model (qwen1.5b)."""

_DEFAULTED = ("max_tokens", "top_k", "context_chars", "workers", "queries", "evidence",
              "verdicts", "serial_stages", "reconstruct")
"""Fields an unset value of which comes from `run_defaults(lm)`."""

_FLAGS = {"stage_lms": "--stage-lm", "rules": "--rule", "firewall": "--no-firewall",
          "retrieval": "--no-retrieval", "serial_stages": "--serial-stage"}


def _flag(field: str) -> str:
    return _FLAGS.get(field) or "--" + field.replace("_", "-")


class StageLMs(dict):
    """Stage (or predictor) -> LM, as `SERC(lms=...)` takes it; it describes itself by model name,
    so a results file records which LM verified, not an object address."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{stage!r}: {getattr(lm, 'model', type(lm).__name__)!r}"
                               for stage, lm in self.items()) + "}"


MAX_LM_TIMEOUT = 86_400.0
"""A per-call timeout past a day is no bound (99999999999 made every call fail at once)."""


class RunOptions(BaseModel):
    """The options of a run: the LM and its bounds, the retriever, the method's options.

    Built from flags (`from_args`) or directly (`RunOptions(lm="smollm2", top_k=2)`); a bad
    value raises `UserError` with the flag's name. Immutable: a variant is `model_copy(update=)`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # -- the LM, its bounds and throttles ---------------------------------------------------
    lm: str = DEFAULT_LM
    """The LM of every stage (a spec: qwen1.5b, smollm2, local=PATH.gguf, openai=URL#MODEL...)."""
    max_tokens: PositiveInt | None = None
    """Max new tokens per call (default: the model's, else 512)."""
    stage_lms: dict[str, str] = {}
    """Stage or predictor -> LM spec (`--stage-lm STAGE=SPEC`)."""
    lm_timeout: PositiveFloat | None = None
    """Per-call timeout of a server LM, seconds (default 120; at most `MAX_LM_TIMEOUT`)."""
    max_in_flight: PositiveInt | None = None
    """Server LMs: at most this many requests at once (each LM, stage LMs included)."""
    lm_rate: float | None = None
    """Server LMs: at most this many requests per second."""
    deadline: PositiveFloat | None = None
    """A method run's overall time limit (seconds); steps not started by then degrade."""
    quiet: bool = False
    """No progress on stderr."""
    from_lm_defaults: frozenset[str] = frozenset()
    """The fields the LM's run defaults filled, not the caller (never refused as given)."""

    # -- the retriever ----------------------------------------------------------------------
    corpus: str | None = None
    dense: bool = False
    knowledge: str | None = None
    search: Literal["tavily"] | None = None
    cache: str | None = None
    search_rate: float | None = None
    """At most this many searches per second (cache hits are free)."""

    # -- the method -------------------------------------------------------------------------
    top_k: PositiveInt | None = None
    context_chars: PositiveInt | None = None
    workers: PositiveInt | None = None
    """Concurrent LM calls inside one method run (the method's `max_workers`)."""
    serial_stages: tuple[str, ...] | None = None
    """Stages whose calls go one at a time (`--serial-stage`; default: the model's)."""
    queries: Literal["lm", "facts"] | None = None
    evidence: Literal["summary", "passages"] | None = None
    verdicts: Literal["check", "fact", "choose"] | None = None
    firewall: bool = True
    retrieval: bool = True
    density: Literal["sentence", "atomic"] | None = None
    max_facts_per_check: int | None = None
    compiled: str | None = None
    """A compiled state (path or packaged name) for SERC methods; default: the model's own."""
    frozen: bool = False
    """SERC methods: the paper's frozen prompts, even for a model that ships a compiled state."""
    rules: dict[str, bool] = {}
    """Rule id -> on/off (`--rule +ID` / `--rule -ID`)."""
    fact_evidence: bool = False
    evidence_window: int | None = None
    """Sentences of each passage a check node reads, around the one about each of its facts."""
    reconstruct: Literal["rebuild", "minimal"] | None = None
    verifier: str | None = None
    """SERC methods: a claim verifier (`KIND=MODEL`, `serc_dspy.verifiers.verifier_from_spec`)
    whose verdict is one of the signals `agree.contradiction` counts."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _user_error(exc) from None

    @model_validator(mode="before")
    @classmethod
    def _run_defaults(cls, data: Any) -> Any:
        """Fill every unset value the LM's run defaults name (`backends.spec.run_defaults`)."""
        if not isinstance(data, Mapping):
            return data

        data = dict(data)
        if isinstance(data.get("lm"), str) and not data["lm"].strip():
            # `--lm "$LM"` with LM unset: never start the heavy default model in its place
            raise UserError("--lm is empty (an unset variable?); name an LM, e.g. --lm "
                            f"{DEFAULT_LM}")
        data["lm"] = (data.get("lm") or "").strip() or DEFAULT_LM
        defaults = run_defaults(data["lm"])
        filled = []
        for name in _DEFAULTED:
            if data.get(name) is None:
                data[name] = defaults.get(name)  # the paper's `reconstruct` is SERC's own
                filled.append(name)
        data["from_lm_defaults"] = frozenset(filled)
        return data

    @field_validator("lm_timeout")
    @classmethod
    def _timeout(cls, value: float | None) -> float | None:
        if value is not None and value > MAX_LM_TIMEOUT:
            raise UserError(f"--lm-timeout must be at most {MAX_LM_TIMEOUT:.0f} seconds (a "
                            f"day), got {value:g}")
        return value

    @field_validator("lm_rate", "search_rate")
    @classmethod
    def _rate(cls, value: float | None, info) -> float | None:

        return None if value is None else check_rate(value, _flag(info.field_name))

    @field_validator("stage_lms", mode="before")
    @classmethod
    def _stage_lms(cls, value: Any) -> Any:
        """`["verify=openai/gpt-4o", ...]` (the flags) or a mapping; keys are checked by the
        program (stages or predictor names)."""
        if value is None:
            return {}
        if isinstance(value, Mapping):
            return dict(value)
        lms: dict[str, str] = {}
        for item in value:
            stage, sep, spec = str(item).partition("=")
            if not sep or not stage.strip() or not spec.strip():
                raise UserError(f"--stage-lm needs STAGE=SPEC, got {item!r}")
            lms[stage.strip()] = spec.strip()
        return lms

    @field_validator("rules", mode="before")
    @classmethod
    def _rules(cls, value: Any) -> Any:
        """`["-quote.overrule", "+fix.swap_back"]` (the flags) or `{id: on}`; an unknown id is
        an error listing the valid ones."""

        if value is None:
            return {}
        if isinstance(value, Mapping):
            check_ids(value)
            return dict(value)
        return parse_switches(value)

    @field_validator("serial_stages", mode="before")
    @classmethod
    def _serial_stages(cls, value: Any) -> Any:
        """`--serial-stage none` clears the model's default; a stage name is checked by the
        program (it lists the valid ones)."""
        if value is None or isinstance(value, str):
            return value if value is None else (value,)
        stages = tuple(str(stage).strip() for stage in value)
        if "none" in stages and len(stages) > 1:
            raise UserError("--serial-stage none means no stage; it cannot be combined with "
                            f"stages, got {', '.join(stages)}")
        return () if stages == ("none",) else stages

    @field_validator("compiled")
    @classmethod
    def _compiled(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise UserError("--compiled is empty: give a .json path or a packaged state name")
        return value

    @model_validator(mode="after")
    def _one_prompt_source(self) -> RunOptions:
        if self.compiled and self.frozen:
            raise UserError("pass either --compiled or --frozen, not both")
        return self

    @classmethod
    def from_args(cls, args: Any) -> RunOptions:
        """The options of a namespace parsed by a parser `add_run_options` was given; only the
        flags it added are read, and the namespace is left as it is."""
        dests = getattr(args, RUN_OPTION_DESTS, None)
        if dests is None:
            raise TypeError("this parser has no run options: call add_run_options on it")
        for dest, (flag, default, why) in (getattr(args, REFUSED_OPTIONS, None) or {}).items():
            if getattr(args, dest, default) not in (default, None, False, []):
                raise UserError(f"{flag} does not apply here: {why}")
        values: dict[str, Any] = {}
        for dest in dests:
            value = getattr(args, dest)
            if dest in ("no_firewall", "no_retrieval"):
                values[dest[3:]] = not value
            else:
                values[_FIELD_OF.get(dest, dest)] = value
        return cls(**values)

    def unused(self, fields: Iterable[str], reason: str) -> None:
        """Refuse options that cannot take effect in this command (a bound is never dropped
        silently): `UserError` naming the flags given, with `reason`."""
        given = [_flag(f) for f in fields if getattr(self, f) != type(self).model_fields[f]
                 .get_default()]
        if given:
            raise UserError(f"{', '.join(given)} cannot apply here: {reason}")


def _user_error(exc: ValidationError) -> UserError:
    """The first problem of a validation error, as the one-line message a command prints."""
    error = exc.errors()[0]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, UserError):
        return cause
    where = _flag(str(error["loc"][0])) if error.get("loc") else "run options"
    return UserError(f"{where}: {error['msg']}")


# -- the flags, declared once -------------------------------------------------------------------
RUN_OPTION_DESTS = "run_option_dests"
"""The namespace attribute that lists the flags `add_run_options` added (for `from_args`)."""
REFUSED_OPTIONS = "refused_run_options"
"""The namespace attribute of the flags a command has but cannot use: {dest: (flag, default,
why)}; `from_args` refuses any of them that was given."""

_FIELD_OF = {"stage_lm": "stage_lms", "rule": "rules", "method_workers": "workers"}


# -- what the options build, each in one place --------------------------------------------------
def build_lm(options: RunOptions, spec: str | None = None):
    """The LM of `spec` (default: `options.lm`) with the options' max tokens, timeout and
    throttles. Every command's LM, stage LM and judge LM is built here."""

    return backends.lm_from_spec(spec or options.lm, max_tokens=options.max_tokens,
                        timeout=options.lm_timeout, max_in_flight=options.max_in_flight,
                        rate=options.lm_rate,
                        progress=None if options.quiet else AssemblyProgress())


def build_stage_lms(options: RunOptions) -> StageLMs:
    """`--stage-lm` as the `lms={...}` a method takes, each built by `build_lm`."""
    return StageLMs({stage: build_lm(options, spec) for stage, spec in options.stage_lms.items()})


NO_RETRIEVER = ("no retriever configured: pass --corpus PATH (a folder of .txt/.md files or a "
                ".jsonl), --knowledge DB_OR_JSON or --search tavily ({method} needs a retriever), "
                "or --no-retrieval to verify without retrieval")


def build_retriever(options: RunOptions, method: str):
    """The retriever the options name, for a run of `method`: the source (`--corpus`,
    `--knowledge` or `--search`), then the search-rate throttle, then the cache (so cache hits
    are never throttled). A source given is built (and checked) even for a method that does not
    search; None when none is given and the method needs none (or `--no-retrieval`)."""

    if options.dense and not options.corpus:
        raise UserError(DENSE_NEEDS_CORPUS)
    given = [_flag(f) for f in ("corpus", "knowledge", "search") if getattr(options, f)]
    if len(given) > 1:
        raise UserError(f"pass one of --corpus, --knowledge or --search, not {' and '.join(given)}")
    if options.corpus:
        retriever = local_corpus(options.corpus, dense=options.dense)
    elif options.knowledge:
        retriever = knowledge_source(options.knowledge)
    elif options.search:
        retriever = web_search(options.search)
    elif get_method(method).needs_retriever and options.retrieval:
        raise UserError(NO_RETRIEVER.format(method=method))
    else:
        return None
    return maybe_cached(retriever, options.cache, options.search_rate)


def method_options(options: RunOptions, *, progress: Any = None) -> dict[str, Any]:
    """The options `build_method` (and `run_experiment`) takes. The per-model settings are
    always there; the rest only when set, so a results file's recorded options stay those of
    the run. Stage LMs are built here (`build_stage_lms`); baselines drop SERC-only options."""
    out: dict[str, Any] = {
        "top_k": options.top_k, "context_chars": options.context_chars,
        "max_workers": options.workers, "queries": options.queries,
        "evidence": options.evidence, "verdicts": options.verdicts}
    out.update({name: False for name, on in (("firewall", options.firewall),
                                             ("use_retrieval", options.retrieval)) if not on})
    given = {"density": options.density, "max_facts_per_check": options.max_facts_per_check,
             "rules": dict(options.rules) or None, "fact_evidence": options.fact_evidence or None,
             "evidence_window": options.evidence_window, "reconstruct": options.reconstruct,
             "serial_stages": options.serial_stages or None,
             "deadline_s": options.deadline,
             "progress": progress}
    out.update({name: value for name, value in given.items() if value is not None})
    if options.compiled or options.frozen:
        out["compiled"] = options.compiled  # None: the frozen prompts
    if options.stage_lms:
        out["lms"] = build_stage_lms(options)
    if options.verifier:
        out["verifier"] = build_verifier(options)
    return out


def build_verifier(options: RunOptions):
    """The claim verifier `--verifier KIND=MODEL` names (its config read and labels checked
    now, its weights on first use); None without the flag."""
    if not options.verifier:
        return None

    return verifier_from_spec(options.verifier)


def checked_method(options: RunOptions, name: str):
    """The registered method `name`, refusing options it cannot take (SERC's own options for a
    method that has no SERC stages)."""

    refuse_serc_only(options, [name])
    return get_method(name)


def refuse_serc_only(options: RunOptions, methods: Iterable[str]) -> None:
    """SERC's own options (`--verdicts`, `--rule`, `--compiled`, `--fact-evidence`, ...) given
    for a run none of whose methods is a SERC: refused in one line, never dropped. A
    benchmark that also runs a SERC method passes them to it (the baselines drop them)."""

    methods = list(methods)
    if not methods or any(get_method(m).serc_options for m in methods):
        return
    fields = type(options).model_fields
    given = [_flag(f) for f in fields if f in SERC_ONLY_OPTIONS | {"frozen"}
             and f not in options.from_lm_defaults
             and getattr(options, f) != fields[f].get_default()]
    if given:
        raise UserError(f"{', '.join(given)} applies to the SERC methods only, not "
                        f"{', '.join(repr(m) for m in methods)}")


@dataclass(frozen=True)
class RunParts:
    """What a command runs, built once from its options by `build_run`: the LM, the retriever
    (None where each item brings its own evidence), and the method's keyword options."""

    lm: Any
    retriever: Any
    settings: dict[str, Any]

    def program(self, method: str):
        """The method's program over this retriever, with these options."""
        return programs.build_method(method, retriever=self.retriever, **self.settings)


def build_run(options: RunOptions, methods: Iterable[str] = (), *, retrieval: bool = True,
              progress: Any = None) -> RunParts:
    """The one entry from a command's options to what it runs: every method checked (SERC's
    own options refused for a run with no SERC), then the retriever (`retrieval`: the first
    method's, from `--corpus` / `--knowledge` / `--search`), the method options and the LM,
    each built once. Every command that runs a method calls it."""
    methods = list(methods)
    for name in methods:
        get_method(name)
    refuse_serc_only(options, methods)
    retriever = build_retriever(options, methods[0]) if retrieval and methods else None
    settings = method_options(options, progress=progress)
    return RunParts(build_lm(options), retriever, settings)
