"""The package's version, on its own.

A saved state records which serc_dspy wrote it (`states.py`); reading the version from here
rather than from the package itself keeps that module from importing the package facade
(`serc_dspy/__init__.py` imports the programs, a layer above the saved states).
"""

__version__ = "0.1.0"
