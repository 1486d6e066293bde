"""The doc tests start brokers as the process tests do."""

from tests.process.conftest import (  # noqa: F401  (fixtures used by the tests here)
    broker,
    endpoint,
    processes,
    start_broker,
    state_directory,
    xprocess,
)
