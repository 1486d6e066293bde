"""Before the branch: are there credentials, and does the model answer one minimal call?

A missing key, a refused key, an unknown model or an unreachable host ends the run before it
creates anything, with one line that names the cause and the fix (``SetupError``, exit 2).
``explain`` words the same causes for a permanent error in the middle of a run.
"""

from __future__ import annotations

from robotlab.errors import SetupError
from robotlab.llm import is_priced, missing_credentials
from robotlab.to.child.robot_factory import RobotModel, check_provider, ping
from robotlab.to.config import RobotToSettings
from robotlab.to.process.failure import Cause, Failure, describe_error


def _where(settings: RobotToSettings) -> str:
    return settings.api_base or f"the {settings.provider or 'model'} API"


def _key_name(settings: RobotToSettings) -> str:
    return f"{(settings.provider or 'openai').upper().replace('-', '_')}_API_KEY"


def explain(failure: Failure, settings: RobotToSettings, timeout: float | None = None) -> str:
    """One line: what went wrong with the model, and what to do about it."""
    where = _where(settings)
    causes = {
        Cause.AUTH: f"the provider refused the API key ({_key_name(settings)}): check it, "
                    "or pass --api-base URL for a local server",
        Cause.MODEL_NOT_FOUND: f"model {settings.model!r} was not found at {where}: "
                               "check --model and --provider",
        Cause.HOST_NOT_FOUND: f"cannot resolve the host of {where}: check the network, "
                              "or pass --api-base URL",
        Cause.CONNECTION: f"cannot reach {where}: start the server or check --api-base",
        Cause.TIMEOUT: f"{where} did not answer" + (f" within {timeout:g}s" if timeout else "")
                       + ": check the server, or skip this check with --no-preflight",
        Cause.BAD_REQUEST: f"{where} rejected the request: check --model and --provider",
        Cause.CONTEXT_WINDOW: f"the conversation does not fit the model's context window at "
                              f"{where}, even after compaction: give the server a larger window "
                              "(llama.cpp: --n_ctx), or lower --max-output-tokens",
    }
    reason = causes.get(failure.cause)
    detail = failure.message.splitlines()[0][:200] if failure.message else failure.error_class
    return f"{reason} ({detail})" if reason else f"the model call failed: {detail}"


def check_cost_limit(settings: RobotToSettings) -> None:
    """Refuse ``--max-cost`` for a model litellm has no price for: the limit could not hold."""
    if settings.max_cost is None:
        return
    model = settings.model_settings.required_id()
    if not is_priced(model):
        raise SetupError(f"--max-cost needs a price, and litellm's price table has none for "
                         f"{model}: drop --max-cost (or use --max-tokens)")


def check(settings: RobotToSettings) -> None:
    """Raise SetupError naming cause and fix unless the model has credentials and answers."""
    check_provider(settings.provider)
    model = RobotModel.of(settings)
    missing = missing_credentials(model.required_id(), model.api_base)
    if missing:
        names = " and ".join(missing)
        verb = "is" if len(missing) == 1 else "are"
        raise SetupError(f"{names} {verb} not set: set it, or pass --api-base URL for a local "
                         "server")
    try:
        ping(model, settings.preflight_timeout)
    except Exception as exc:  # every provider failure becomes one line with its fix
        reason = explain(describe_error(exc), settings, settings.preflight_timeout)
        raise SetupError(f"preflight: {reason}") from exc
