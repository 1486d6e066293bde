"""Why a model call failed, decided once, where the provider's exception becomes ours.

Every loop that could retry a model call (the library's own retries, robotd, robot-to's
backoff) reads the cause that ``classify_exception`` gave the ``InferenceError``, so they
and ``robotlab.retryable()`` always agree on what waiting can fix.

It lives with the errors because ``InferenceError`` decides its own retryability from
``PERMANENT``; the LLM client (``robotlab/llm.py``) and the scripted model, above the errors,
classify with it.
"""

from __future__ import annotations

import enum
import re

__all__ = ["PERMANENT", "Cause", "EMPTY_STREAM", "classify", "classify_exception"]

_AUTH = re.compile(r"invalid api key|incorrect api key|unauthorized|authentication failed|"
                   r"missing credentials", re.IGNORECASE)
_DNS = re.compile(r"name or service not known|nodename nor servname|getaddrinfo failed|"
                  r"temporary failure in name resolution|no address associated", re.IGNORECASE)
_CONTEXT = re.compile(r"context.?window|context length|maximum context|"
                      r"exceeds? (the )?(context|n_ctx)|too many tokens|prompt is too long",
                      re.IGNORECASE)
_CONNECTION = re.compile(r"connection refused|connection reset|connection error|"
                         r"connect call failed|server disconnected|remote end closed",
                         re.IGNORECASE)
_TIMEOUT = re.compile(r"timed? ?out", re.IGNORECASE)

EMPTY_STREAM = ("the server ended the stream without a reply; a common cause is a prompt over its "
                "context window — see its log")
"""The message of a streamed call that ended with no chunk and no finish reason (llama.cpp's
server answers a prompt over its window this way: HTTP 200, an empty stream, the error in its
log)."""


class Cause(enum.StrEnum):
    """What kind of failure a model call had, which decides whether retrying can help."""

    AUTH = "auth"
    MODEL_NOT_FOUND = "model_not_found"
    HOST_NOT_FOUND = "host_not_found"
    BAD_REQUEST = "bad_request"
    CONTEXT_WINDOW = "context_window"
    RATE_LIMIT = "rate_limit"
    TIMEOUT = "timeout"
    SERVER = "server"
    CONNECTION = "connection"
    OTHER = "other"


PERMANENT = frozenset({Cause.AUTH, Cause.MODEL_NOT_FOUND, Cause.HOST_NOT_FOUND, Cause.BAD_REQUEST,
                       Cause.CONTEXT_WINDOW})
"""Causes that sending the same request again cannot fix. A context overflow can be cured only
by a shorter conversation (compaction), never by waiting."""


def _status_cause(status: int | None) -> Cause | None:
    if status in (401, 403):
        return Cause.AUTH
    if status == 404:
        return Cause.MODEL_NOT_FOUND
    if status == 408:
        return Cause.TIMEOUT
    if status == 429:
        return Cause.RATE_LIMIT
    if status is not None and 400 <= status < 500:
        return Cause.BAD_REQUEST
    return None


def classify(names: str, status: int | None, text: str) -> Cause:
    """The cause of a failure from its class names, HTTP status (if any) and message.

    The message is read before the status: litellm reports a failed DNS lookup or a refused
    connection as a 500, which would otherwise look like a server fault worth retrying; and a
    local server names a context overflow only in the text of a 400 or a 500.
    """
    if "ContextWindow" in names or _CONTEXT.search(text):
        return Cause.CONTEXT_WINDOW
    if ("Authentication" in names or "Unauthorized" in names or "PermissionDenied" in names
            or _AUTH.search(text)):
        return Cause.AUTH
    if _DNS.search(text):
        return Cause.HOST_NOT_FOUND
    if "NotFound" in names:
        return Cause.MODEL_NOT_FOUND
    by_status = _status_cause(status)
    if by_status is not None:
        return by_status
    if "RateLimit" in names:
        return Cause.RATE_LIMIT
    if "Timeout" in names or _TIMEOUT.search(text):
        return Cause.TIMEOUT
    if "Connection" in names or _CONNECTION.search(text):
        return Cause.CONNECTION
    return Cause.SERVER if status is not None and status >= 500 else Cause.OTHER


def classify_exception(exc: BaseException) -> Cause:
    """The cause of a provider's exception.

    Read from its class, the class of what caused it, its status and its text.
    """
    cause = exc.__cause__ or exc.__context__
    names = f"{type(exc).__name__} {type(cause).__name__ if cause else ''}"
    status = (getattr(exc, "status_code", None) or getattr(exc, "status", None)
              or getattr(cause, "status_code", None))
    text = getattr(exc, "message", None) or str(exc)
    return classify(names, status if isinstance(status, int) else None, str(text))
