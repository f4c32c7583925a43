"""`SERC(compiled="auto")`, the default: the packaged compiled state of the offline model the
run's LM is, applied once, and never over demos the user compiled, set or loaded.

It lives with the program, not with the compiled-state files (`runtime/states.py`), because it
asks the backends which offline model an LM runs."""

from __future__ import annotations

import threading
from typing import Any

import dspy

from serc_dspy.backends.models import model_of_lm
from serc_dspy.runtime.states import load_compiled

AUTO_STATE = "auto"
"""`SERC(compiled="auto")`, the default: the run's offline model's packaged state, if any."""
_MODEL_STATE_LOCK = threading.Lock()


USER_STATE = "user"
"""`program.model_state` when `compiled="auto"` found demos of the user's own and applied
nothing."""


def apply_model_state(program: Any, run: Any) -> None:
    """`compiled="auto"`: on the first run, apply the packaged state of the offline model the
    context LM runs, if that model ships one (`OfflineModel.compiled`); any other LM keeps the
    frozen prompts. `compiled=None` always keeps them. Logged on the run."""

    if program.compiled != AUTO_STATE:
        return
    model = model_of_lm(dspy.settings.lm)
    with _MODEL_STATE_LOCK:
        if program.model_state is None and model is not None and model.compiled:
            own = sorted(name for name, p in program.named_predictors() if p.demos)
            if own:
                # the user compiled, set or loaded demos: a packaged state never replaces them
                program.model_state = USER_STATE
                run.log("align", f"prompts: the program's own demos ({', '.join(own)}); the "
                                 f"packaged state of {model.name} was not applied")
                run.trace.prompts = "the program's own"
                return
            load_compiled(program, model.compiled)
            program.model_state = model.name
    if program.model_state == USER_STATE:
        run.trace.prompts = "the program's own"
        return
    if program.model_state and (model is None or model.name != program.model_state):
        run.log("align", f"this SERC carries the compiled state of {program.model_state} "
                         f"but runs with {getattr(dspy.settings.lm, 'model', '?')}",
                "fallback")
    elif program.model_state:
        run.log("align", f"prompts: compiled state {model.compiled} of {model.name}")
    if program.model_state:
        run.trace.prompts = f"packaged state {program.model_state}"
