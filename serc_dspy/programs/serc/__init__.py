"""SERC as composable DSPy sub-modules: `EntityFirewall` (phase 1), `CheckNodes` (phase 2),
`Corrector` and `Reconstructor` (phase 3), composed by `SERC` (`program.py`), whose
`aforward` reads as the paper's Algorithm 1."""

from serc_dspy.programs.serc.checks import CheckNodes
from serc_dspy.programs.serc.common import Settings, subject_name
from serc_dspy.programs.serc.correction import Corrector
from serc_dspy.programs.serc.firewall import EntityFirewall
from serc_dspy.programs.serc.options import SercOptions
from serc_dspy.programs.serc.program import PREDICTOR_PATHS, SERC, STAGES
from serc_dspy.programs.serc.reconstruction import Reconstructor

__all__ = ["PREDICTOR_PATHS", "SERC", "STAGES", "CheckNodes", "Corrector", "EntityFirewall",
           "Reconstructor", "SercOptions", "Settings", "subject_name"]
