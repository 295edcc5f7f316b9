"""The report API the client's tests report to: the fixtures of tests/report_api."""

from tests.report_api.conftest import (
    authorizer,
    clock,
    config,
    make_server,
    registry,
    server,
    sink,
)

__all__ = ["authorizer", "clock", "config", "make_server", "registry", "server", "sink"]
