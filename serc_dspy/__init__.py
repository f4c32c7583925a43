"""serc-dspy: LDPC-inspired semantic error correction (SERC) for LLM answers, as DSPy programs."""

import os

# DSPy/LiteLLM fetch a model price map over the network on first use unless told otherwise;
# this package must work offline, so it asks for the bundled copy (a user's setting wins).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from serc_dspy.core.trace import Passage, Trace  # noqa: E402
from serc_dspy.core.version import __version__  # noqa: E402
from serc_dspy.programs import SERC, InputError  # noqa: E402
from serc_dspy.programs.serc.options import SercOptions  # noqa: E402
from serc_dspy.retrieval import LocalCorpus  # noqa: E402
from serc_dspy.runtime.adapter import StrictJSONAdapter  # noqa: E402

__all__ = ["SERC", "InputError", "LocalCorpus", "Passage", "SercOptions", "StrictJSONAdapter",
           "Trace", "__version__"]
