"""SERC and the compared methods as dspy.Modules."""

from serc_dspy.programs.base import NO_INFO_ANSWER, InputError, TracedProgram
from serc_dspy.programs.serc import SERC

__all__ = ["NO_INFO_ANSWER", "SERC", "InputError", "TracedProgram"]
