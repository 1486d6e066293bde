"""The provider library, litellm: imported on first use and set up as robotlab uses it.

Also what it knows of a model: the key variables it needs (:func:`missing_credentials`) and
its price (:func:`price`, :func:`is_priced`). litellm costs seconds and ~200 MB to import, so
nothing imports it before a model call, a price or a credential check needs it; its price
table is read from the installed package, never the network.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import logging
import threading
from typing import Any

from robotlab.service.logs import OWN_HANDLERS, adopt_loggers

__all__ = ["close_clients", "is_priced", "litellm_module", "load_client", "missing_credentials",
           "price"]


def load_client() -> Any:
    """Import litellm (seconds on a cold start) set up as every robotlab process uses it: no
    banners, and its log lines written once, through the process's own handlers."""
    return litellm_module()


_loading = threading.Lock()


def litellm_module() -> Any:
    """The litellm module, imported and set up on the first call (see :func:`load_client`)."""
    # A robotd loads the client on a thread of its own while it joins the bus: a model call made
    # meanwhile waits here for that load instead of running a second one beside it.
    with _loading:
        return _load_litellm()


@functools.cache
def _load_litellm() -> Any:
    from robotlab.config.cascade import prepare_litellm_environment

    prepare_litellm_environment()
    import litellm

    litellm.suppress_debug_info = True
    # litellm gives its loggers a handler of their own, so each line came out twice (and never
    # as JSON): its records go through the process's handlers only, and its per-call INFO
    # lines only when the process logs at DEBUG.
    adopt_loggers(OWN_HANDLERS)
    debugging = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for name in OWN_HANDLERS:
        logging.getLogger(name).setLevel(logging.DEBUG if debugging else logging.WARNING)
    atexit.register(close_clients, litellm)
    return litellm


def close_clients(litellm: Any) -> None:
    """Close the HTTP clients litellm keeps between calls (their pooled keep-alive connections
    to each api-base), as the process ends: left to the garbage collector, every pooled socket
    is a ResourceWarning at exit. Async clients are left alone: closing one needs its loop."""
    cache = getattr(litellm, "in_memory_llm_clients_cache", None)
    clients = [*getattr(cache, "cache_dict", {}).values(),
               getattr(litellm, "module_level_client", None)]
    for client in clients:
        close = getattr(client, "close", None)
        if close is None or inspect.iscoroutinefunction(close):
            continue
        try:
            close()
        except Exception:  # noqa: BLE001 (at exit, a client that cannot close is nothing to report)
            pass


def missing_credentials(model: str, api_base: str | None = None) -> list[str]:
    """The environment variables litellm says ``model`` (a litellm id, ``provider/model``) needs
    and that are not set.

    A model with an ``api_base`` (a local server) needs none: the robot sends a placeholder key.
    """
    if api_base:
        return []
    found = litellm_module().validate_environment(model=model)
    # Providers such as Ollama list their base URL, which has a default; only keys are required.
    return [key for key in found.get("missing_keys") or [] if not key.endswith("_API_BASE")]


_unpriced: set[str] = set()


def price(model: str, input_tokens: int, output_tokens: int) -> float:
    """Dollar cost from litellm's price table; 0.0 for unknown models, never an exception."""
    if model in _unpriced:
        return 0.0
    try:
        prompt, completion = litellm_module().cost_per_token(
            model=model, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )
        return float(prompt + completion)
    except Exception:  # litellm raises many types for "no price"; remember, the lookup is slow
        _unpriced.add(model)
        return 0.0


def is_priced(model: str) -> bool:
    """True when litellm's price table knows ``model``: a cost of 0.0 for it is a real zero."""
    price(model, 0, 0)
    return model not in _unpriced
