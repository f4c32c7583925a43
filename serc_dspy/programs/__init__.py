"""SERC and the compared methods as dspy.Modules, and the registry that names them."""

from serc_dspy.programs.base import NO_INFO_ANSWER, InputError, TracedProgram
from serc_dspy.programs.baselines import RARR, CoVe, CoVeRAG, InitialAnswer, ReEx
from serc_dspy.programs.registry import METHODS, build_method, get_method, method_names
from serc_dspy.programs.serc import SERC

__all__ = [
    "METHODS",
    "NO_INFO_ANSWER",
    "RARR",
    "SERC",
    "CoVe",
    "CoVeRAG",
    "InitialAnswer",
    "InputError",
    "ReEx",
    "TracedProgram",
    "build_method",
    "get_method",
    "method_names",
]
