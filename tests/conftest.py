import os
import sys
from pathlib import Path

import dspy
import pytest

sys.path.insert(0, str(Path(__file__).parent))

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
# Real datasets live outside the package; tests read them through this configurable path.
SHARED_DATA = Path(os.environ.get("SERC_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True, scope="session")
def _no_lm_cache():
    # The LM cache key ignores api_base and scripted answers differ per test: never share them.
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
