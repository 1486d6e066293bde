"""The fork server's warm-up: what every robotd needs, imported, built and run once, then frozen.

Children are forked from the warmed server and share its pages until they write to them, so
everything here aims at fewer pages a child writes to (each one written is copied, and counts as
the child's own memory): the imports a child would make, litellm's lazily built objects and
the whole path of a child's life (a robot hosted by robotd's daemon, joining a broker, asked
for its info and to run, its model an in-process stub), the code that path runs moved onto
pages of its own (:func:`relocate_hot_code`), the free memory between the server's objects taken
so a child's new objects do not land there (``robotd/holes.py``), and ``gc.freeze()`` so a
child's collections do not write to the inherited objects. Measured step by step in
docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import inspect
import logging
import os
import select
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from types import CodeType, FrameType, FunctionType
from typing import Any

from robotlab.observability import logfields

from .holes import take_holes

log = logging.getLogger("robotlab.robotd")

# Rounds of model calls after the code is moved: the copies start unquickened, and CPython 3.11
# keeps writing to a code object's counters and inline caches over its first calls until its
# instructions are specialised and settle. Measured (docs/benchmarks.md): in the fork harness a
# child's construction and first run make 12.1 MB its own after 2 rounds, 11.6 after 10, 11.4
# after 20, no less after 40; a spawned child holds 15.5 MB after its first run, not 15.8.
AFTER_RELOCATION_ROUNDS = 20
# One model litellm cannot price and one it can: after the call, litellm's cost calculator
# formats a traceback for the first and prices the second, two different code paths; a child
# whose first call takes a path the warm-up did not writes about 3 MB more of its own.
WARM_UP_MODELS = ("openai/warm-up", "openai/gpt-4o-mini")
# Seconds the warm-up's hosted robot may take to join its broker, and to answer each request.
JOIN_SECONDS = 30.0
# The original code objects, kept alive: freed, they would leave holes in the inherited heap
# that a child's first allocations fill, copying those pages instead.
_ORIGINALS: list[CodeType] = []


# What litellm loads on a process's first completion (about 2.5 s, mostly pydantic building
# response schemas): paid once here instead of in every child. Best effort: names that a
# litellm version lacks are skipped.
WARM_MODULES = (
    "httpcore", "h11", "h2.connection",
    "litellm.proxy._types", "litellm._service_logger",
    "litellm.integrations.generic_api.generic_api_callback",
    "litellm.integrations.prometheus_services",
    "litellm.litellm_core_utils.logging_callback_manager",
    "litellm.llms.github_copilot.authenticator",
    "litellm.llms.github_copilot.per_user_auth", "litellm.llms.litellm_proxy.chat.transformation",
    "litellm.llms.openai.chat.gpt_audio_transformation", "litellm.llms.openai_like.dynamic_config",
    "litellm.proxy.openai_files_endpoints.common_utils", "litellm.proxy.spend_tracking.savings",
)
WARM_MODELS = (
    "litellm.proxy._types:CallbackOnUI", "litellm.types.router:GenericLiteLLMParams",
    "litellm.types.router:LiteLLM_Params", "litellm.types.services:ServiceLoggerPayload",
    "litellm.types.utils:Message", "litellm.types.utils:Choices",
    "litellm.types.utils:ModelResponse",
    "litellm.types.utils:Usage", "litellm.types.utils:PromptTokensDetailsWrapper",
    "litellm.types.utils:ModelResponseStream", "litellm.types.utils:StreamingChoices",
    "litellm.types.utils:Delta", "openai.types.chat.chat_completion_message:ChatCompletionMessage",
    "openai.types.chat.chat_completion:Choice", "openai.types.chat.chat_completion:ChatCompletion",
)


def warm() -> None:
    """Import everything a robotd needs, live a spawned child's life, move its code together, fill
    the holes, freeze.

    A fork keeps only the forking thread, so no thread may outlive the warm-up: each round of
    hosted runs (:func:`warm_model_call`) ends every thread it started before ``gc.freeze()``.
    """
    from robotlab.llm import load_client

    preload()
    litellm = load_client()  # the point is the import: 3-4 s paid once, not per child
    for name in WARM_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for path in WARM_MODELS:
        module, _, attr = path.partition(":")
        with contextlib.suppress(Exception):
            getattr(importlib.import_module(module), attr).model_rebuild()
    with contextlib.suppress(Exception):
        # Built lazily by the first price lookup, by walking the whole price table: each child
        # doing it itself would also un-share every key it touches.
        litellm.utils._rebuild_model_cost_lowercase_map()
    try:
        with _unlogged():
            warm_model_call()
            relocate_hot_code(warm_model_call)
            warm_model_call(rounds=AFTER_RELOCATION_ROUNDS)
    except Exception as exc:  # best effort: a child then pays the first call's cost itself
        log.warning("fork server: warm-up model call skipped: %s", exc)
    gc.collect()
    # After the last collection: its garbage is what leaves the holes.
    log.debug("fork server: %d free pymalloc blocks and %d malloc chunks taken", *take_holes())
    gc.freeze()


@contextlib.contextmanager
def _unlogged() -> Iterator[None]:
    """The warm-up's robots and broker are nobody's to read about: below WARNING they log nothing,
    and the robot they named is forgotten before any child is forked (it would name it too)."""
    logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)
        logfields.forget_process()


def preload() -> None:
    """Import what a child needs to join the bus and answer (about 0.3 s), all but the model client.

    The fork server does this before it serves, so even a child forked before the warm-up is done
    is on the bus in milliseconds; such a child loads the model client on a thread of its own
    (``robotd/hosting.py``), as a robotd started by hand does.
    """
    # robotlab.bus.member.link: the bus client's I/O side, imported on a child's first connect
    # (2.1 MB of each child's memory after a first run when each child imported it itself).
    import robotlab.bus.member.link  # noqa: F401
    import robotlab.config.settings  # noqa: F401
    import robotlab.network.member  # noqa: F401
    import robotlab.observability  # noqa: F401
    import robotlab.robot.robot  # noqa: F401
    import robotlab.robot.spawn  # noqa: F401
    from robotlab import bus  # noqa: F401


def warm_model_call(rounds: int = 1) -> None:
    """``rounds`` hosted robot runs per model in ``WARM_UP_MODELS`` against an in-process stub, then
    every thread ended.

    Each run goes as a spawned child's first one does (:func:`_hosted_run`): a robot hosted by
    robotd's daemon joins a broker on this process's threads, is asked for its info and then to
    run, over the bus, and leaves. A child's first model call otherwise builds (and so
    un-shares) about 15 MB of litellm's lazily made objects; made here, they are inherited
    copy-on-write. What the runs leave behind would break a fork: the threads of the broker,
    the daemons and the stub's connection (ended, and litellm's cached HTTP clients closed,
    which children must not share anyway), ZeroMQ's I/O thread (its context terminated), and
    litellm's logging executor worker, which a child would believe alive while no thread
    serves its queue.

    Raises:
        RuntimeError: a thread the call started is still running.
    """
    import litellm
    import zmq

    from robotlab.bus import BusClient
    from robotlab.bus.embedded import EmbeddedBroker
    from robotlab.testing import serve_script

    before = set(threading.enumerate())
    # The broker's and the asker's; each hosted robot's client takes Context.instance(), as a
    # child's does.
    context = zmq.Context()
    # One stub and one broker for all rounds: stopping a stub waits out its half-second poll.
    # The broker on a unix socket: binding tcp, libzmq lists the network interfaces through
    # netlink and aborts where it may not (robotd's systemd unit allows only unix and IP sockets).
    with serve_script([{"content": "warm"}] * (len(WARM_UP_MODELS) * rounds)) as api, \
            tempfile.TemporaryDirectory(prefix="robotlab-warm-up-") as folder:
        broker = EmbeddedBroker(f"ipc://{folder}/broker.sock", context=context).start()
        asker = BusClient(broker.url, name="warm-up-parent", keys=False, context=context).start()
        try:
            for _ in range(rounds):
                for model in WARM_UP_MODELS:
                    _hosted_run(broker.url, asker, model, api)
                    _as_found_by_a_child(litellm.in_memory_llm_clients_cache)
        finally:
            asker.close()
            broker.stop()
    context.term()
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=5)
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    if left:
        raise RuntimeError(f"threads still running after the warm-up call: {', '.join(left)}")


def _hosted_run(url: str, asker: Any, model: str, api: str) -> None:
    """One robot hosted as a fork request hosts it (``robotd.hosting``), asked for its info and one
    run.

    The request is the one ``Robot.spawn`` sends, but for the parent's pid (no process to
    watch: its thread would never end) and the fork server socket. ``api`` is the stub model.
    """
    from robotlab.observability import trace_settings
    from robotlab.robot.requests import INFO_TYPE, RUN_TYPE

    from .hosting import from_fork_request, hosting_daemon

    request = {"daemon": {"name": "warm-up", "broker": url, "instance": uuid.uuid4().hex[:12],
                          "parent": "warm-up-parent",
                          "watch_pid": None, "connect_timeout": 10.0, "curve": {}},
               "robot": {"template": None, "system_prompt": "Warm up.", "prompts_dir": None,
                         "serve": True, "llm": {"model": model, "api_base": api}, "settings": {}}}
    ready_r, ready_w = os.pipe()
    config, spec = from_fork_request(request, ready_w)
    trace_settings()  # read, never set up here: see robotd/forkserver.py
    daemon = hosting_daemon(config, spec)
    thread = threading.Thread(target=daemon.run, name="robotlab-warm-up-daemon")
    thread.start()
    announced = False
    try:
        with os.fdopen(ready_r, "rb") as ready:
            announced = (bool(select.select([ready], [], [], JOIN_SECONDS)[0])
                         and ready.readline().startswith(b"ready"))
        if not announced:
            raise RuntimeError("the warm-up robot did not join its broker")
        asker.request("warm-up", None, type=INFO_TYPE, timeout=JOIN_SECONDS)
        asker.request("warm-up", {"message": "warm up", "kwargs": {}}, type=RUN_TYPE,
                      timeout=JOIN_SECONDS)
    finally:
        daemon.stop()
        thread.join(timeout=JOIN_SECONDS)  # one still running is reported by the caller
        if not announced:
            os.close(ready_w)  # the daemon closes it only once it has announced itself


def _as_found_by_a_child(clients: Any) -> None:
    """Leave litellm and ZeroMQ as a child's first call finds them, so the next run takes its paths.

    A child makes its ZeroMQ context (``Context.instance()``, in a new process), starts
    litellm's logging worker and its HTTP client, and has no formatted traceback cached.
    """
    import zmq

    zmq.Context.instance().term()
    _close_cached_clients(clients)
    _renew_logging_executor()
    _forget_formatted_tracebacks()


def _forget_formatted_tracebacks() -> None:
    """Clear litellm's cache of the traceback it formats when it cannot price a model's reply.

    The cache is keyed by the error's text, which names the model: without this only the first
    warm-up call formats one, so :func:`relocate_hot_code` never sees ``traceback``'s code run,
    and a child whose model litellm cannot price (a new text) runs it cold, on pages spread over
    the heap. Best effort: a litellm without this cache has nothing to clear.
    """
    with contextlib.suppress(ImportError, AttributeError):
        from litellm.litellm_core_utils import litellm_logging

        litellm_logging._get_traceback_str_for_error.cache_clear()


def _close_cached_clients(cache: Any) -> None:
    for client in list(cache.cache_dict.values()):
        close = getattr(client, "close", None)
        if callable(close) and not inspect.iscoroutinefunction(close):
            with contextlib.suppress(Exception):
                close()
    cache.flush_cache()


def _renew_logging_executor() -> None:
    """Let litellm's logging executor's workers exit and leave litellm a usable, threadless one.

    A ``ThreadPoolExecutor`` that was shut down refuses work and has no public way to start
    again, so litellm gets a fresh one, made as litellm makes its own (same class and limits) and
    bound under every litellm module's name for the old one (its modules import it by name). The
    next ``submit`` (in a child) starts the fresh executor's first worker.
    """
    from litellm.litellm_core_utils import thread_pool_executor as pool

    old = pool.executor
    old.shutdown(wait=True)
    fresh = type(old)(max_workers=pool.MAX_THREADS,
                      max_pending_tasks=pool.LOGGING_EXECUTOR_MAX_PENDING_TASKS)
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] != "litellm" or module is None:
            continue
        namespace = getattr(module, "__dict__", {})
        for attribute in [key for key, value in namespace.items() if value is old]:
            setattr(module, attribute, fresh)


def relocate_hot_code(call: Callable[[], None]) -> int:
    """Run ``call`` and give every function it ran a fresh copy of its code; return how many.

    Why: running a function writes to its code object (each new frame takes a reference to it),
    so a child's first model call copies every page that holds a code object it runs, about
    1,500 of them, spread over the heap between code that never runs. Copied after the warm-up,
    in one go, into memory that was never used (the free blocks and chunks between older objects
    taken first: ``robotd/holes.py``), they sit together on far fewer pages. Functions that share
    a code object (the closures a decorator makes) share its copy. A copy behaves as the
    original: same bytecode, constants, names and line table.
    """
    hot: dict[CodeType, int] = {}  # each code object the call ran, and when it first did

    def record(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            hot.setdefault(frame.f_code, len(hot))

    threading.setprofile(record)
    sys.setprofile(record)
    try:
        call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    # gc.get_objects() does not list frozen objects: thaw any frozen earlier (warm() freezes
    # everything again once the code is moved).
    gc.unfreeze()
    gc.collect()
    take_holes()
    copies: dict[CodeType, CodeType] = {}
    # In the order the call first ran them: what a child runs early in its life (the daemon, the
    # bus connection) sits apart from what only its model calls run.
    functions = sorted((obj for obj in gc.get_objects() if type(obj) is FunctionType
                        and obj.__code__ in hot),
                       key=lambda function: hot[function.__code__])
    for function in functions:
        function.__code__ = _copied(function.__code__, hot, copies)
    _ORIGINALS.extend(copies)
    return len(functions)


def _copied(code: CodeType, hot: dict[CodeType, int], copies: dict[CodeType, CodeType]) -> CodeType:
    """The copy of ``code`` (made once), its hot nested code (lambdas, comprehensions) copied
    too."""
    if code not in copies:
        consts = tuple(_copied(c, hot, copies) if isinstance(c, CodeType) and c in hot else c
                       for c in code.co_consts)
        copies[code] = code.replace(co_consts=consts)
    return copies[code]
