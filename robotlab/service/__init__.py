"""Running under a service manager: sd_notify readiness and watchdog, log formats for journald."""

from .environment import ServiceEnvironment, service_environment
from .logs import LOG_FORMATS, configure_logging, logging_options
from .notify import Notifier

__all__ = ["LOG_FORMATS", "Notifier", "ServiceEnvironment", "configure_logging", "logging_options",
           "service_environment"]
