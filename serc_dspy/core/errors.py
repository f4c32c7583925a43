"""The package's error vocabulary, and the one place where an exception becomes text.

Two kinds of failure, handled differently everywhere:
- **abort** — `UserError` and its family: bad input, configuration or files (no LM, a
  retriever with the wrong signature, a rejected key). The caller can fix it; it always
  propagates, and the CLI prints it as one line with exit status 2.
- **degrade** — anything else inside a step (an unreachable LM, unparseable output, a search
  outage): the step falls back as the failure policy says, and the trace records an event.
  The errors this package raises for those derive from `StepFailed`.
  A run in which nothing could be verified is a failure (`DecodingFailed`, exit status 1).

`describe` turns any exception into one line with every configured secret redacted, so a key
that a server echoes back in an error body never reaches a trace, a results file or stderr.
"""

from __future__ import annotations

import os
import re

from pydantic import ValidationError

EXIT_OK = 0
"""Every item of the command's work is done (docs/failure-policy.md, "Exit codes")."""
EXIT_FAILED = 1
"""Some of the work failed (a decoding, an item of a run or a benchmark): what finished is
written, and a rerun with the same output retries the rest."""
EXIT_USAGE = 2
"""Bad input: a flag, a file, a configuration; nothing was run (or the answer was printed and
an output file could not be written)."""


class UserError(ValueError):
    """Bad input, configuration or files; the message says what to change."""


class ArgumentError(UserError):
    """A function or class was called with an argument it cannot work with (a count below 1,
    lists that must pair up but do not, an option that needs another); the message names the
    argument and what it must be."""


class WrongArgumentType(ArgumentError, TypeError):
    """An argument of the wrong kind (a retriever that is not callable); also a `TypeError`,
    as Python's own checks of a call are."""


class KeyRejected(UserError):
    """A server rejected the API key (HTTP 401 or 403): every later call would be rejected the
    same way, so it aborts instead of degrading. Its message is redacted when it is built."""

    def __init__(self, message: str = ""):
        super().__init__(redact(message))


class StepFailed(RuntimeError):
    """Our own degrade-family errors (a search outage, a truncated output, a passed deadline, a
    server that died): a step failed and falls back; it never aborts a run by itself."""


class MalformedOutput(StepFailed):
    """An LM reply that is not the complete, valid output its signature asks for (cut-off or
    broken JSON): a failed call, never repaired into an answer."""


def caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `exc`, or an exception it was raised from, is a `kind` (DSPy wraps an engine's
    errors into its own)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


class DecodingFailed(RuntimeError):
    """Nothing was verified (every check failed, or the LM could not be reached).

    Raised by a program built with `on_error="raise"`; with `on_error="degrade"` the prediction
    comes back with `trace.status == "failed"` and `trace.failure` saying why.
    """

    def __init__(self, message: str, trace=None):
        super().__init__(message)
        self.trace = trace


_SECRET_NAME = re.compile(r"(API_KEY|APIKEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+(@)", re.IGNORECASE)
"""The password of a URL's userinfo (`http://user:PASSWORD@host/`)."""
MIN_SECRET_CHARS = 8


def configured_secrets() -> list[str]:
    """Values of environment variables that hold keys (`*_API_KEY`, `*_TOKEN`, `*_SECRET`...)."""
    values = {value.strip() for name, value in os.environ.items()
              if _SECRET_NAME.search(name) and (value or "").strip()}
    return sorted(values, key=len, reverse=True)


# Characters a key is made of: a prefix of a key followed by one of these is another token.
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/=-")
_KEY_CLASS = "A-Za-z0-9._~+/=-"


def _cut_here(text: str, end: int) -> bool:
    """Whether a key-like token ends at `end`: the text ends there, or the next character
    (after any dots: an ellipsis) is not a key character."""
    while end < len(text) and text[end] == ".":
        end += 1
    return end == len(text) or text[end] not in _KEY_CHARS


def _redact_cut_key(text: str, secret: str) -> str:
    """`text` with every prefix of `secret` of `MIN_SECRET_CHARS` or more characters that ends
    a token (see `_cut_here`) replaced: what is left of a key when a message was cut inside
    it. A prefix followed by more key characters is another token and is left alone."""
    head, out, done = secret[:MIN_SECRET_CHARS], [], 0
    start = text.find(head)
    while start != -1:
        length, limit = MIN_SECRET_CHARS, min(len(secret), len(text) - start)
        while length < limit and text[start + length] == secret[length]:
            length += 1
        while length >= MIN_SECRET_CHARS and not _cut_here(text, start + length):
            length -= 1
        if length < MIN_SECRET_CHARS:
            start = text.find(head, start + 1)
            continue
        out += [text[done:start], "[redacted]"]
        done = start + length
        start = text.find(head, done)
    return "".join(out) + text[done:]


def redact(text: str) -> str:
    """`text` with every configured secret, any prefix of one that a cut left behind (8 or
    more characters, at the end of the text or before a non-key character), and any bearer
    token, replaced by `[redacted]`."""
    text = str(text)
    secrets = configured_secrets()
    for secret in secrets:
        if len(secret) >= MIN_SECRET_CHARS:
            text = text.replace(secret, "[redacted]")
        else:  # a short key ("sk-a1b2") as a whole token, whatever its length
            text = re.sub(rf"(?<![{_KEY_CLASS}]){re.escape(secret)}(?![{_KEY_CLASS}])",
                          "[redacted]", text)
    for secret in secrets:
        if len(secret) >= MIN_SECRET_CHARS:
            text = _redact_cut_key(text, secret)
    text = _URL_PASSWORD.sub(r"\1[redacted]\2", text)
    return _BEARER.sub(r"\1[redacted]", text)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def describe(exc: BaseException) -> str:
    """`Type: message` on one line, secrets redacted: the form failures take in traces, events,
    results files and CLI errors."""
    return redact(one_line(f"{type(exc).__name__}: {exc}"))


def first_problem(exc: ValidationError) -> str:
    """A pydantic validation error's first problem on one line, `field.path: message`: what a
    person needs to find and fix a malformed record, without pydantic's help links."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc") or ())
    return redact(one_line(f"{where}: {error['msg']}" if where else error["msg"]))
