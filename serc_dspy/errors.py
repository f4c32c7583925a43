"""The package's user-facing error: anything the caller can fix by changing an input.

The CLI prints these as one line with exit status 2; other exceptions are bugs or outages.
"""


class UserError(ValueError):
    """Bad input, configuration or files; the message says what to change."""


def describe(exc: BaseException) -> str:
    """`Type: message`, the one-line form failures take in traces, events and results files."""
    return f"{type(exc).__name__}: {exc}"
