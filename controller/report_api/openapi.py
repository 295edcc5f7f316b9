"""The report API's OpenAPI 3.1 description, as data built from the vocabulary.

The enums (reasons, collectors, states, verdicts) come from the same tables the server checks
against, so the description cannot drift from what the server accepts; the tests validate real
requests and answers against it.
"""

from __future__ import annotations

from typing import Any

from statemachines.config import Config
from statemachines.reports import GENERATION_LIMIT, VERSION_LIMIT, VERSION_PATTERN, VerdictKind
from statemachines.vocabulary import Actor, Reason, State

__all__ = ["ERROR_REASONS", "REPORTS_PATH", "SPEC_PATH", "openapi_document"]

REPORTS_PATH = "/v1/reports"
SPEC_PATH = "/openapi.json"

# The `error.reason` values the server answers with, by status code.
ERROR_REASONS: dict[int, tuple[str, str]] = {
    400: ("BadRequest", "the body is not JSON, or the request is malformed"),
    401: ("Unauthorized", "no bearer token, or one that is not valid"),
    403: ("Forbidden", "the caller may not send this reason, or not about this collector"),
    404: ("NotFound", "no such path"),
    405: ("MethodNotAllowed", "the path does not take this method"),
    411: ("LengthRequired", "the request has no Content-Length"),
    413: ("RequestEntityTooLarge", "the body is larger than the limit"),
    415: ("UnsupportedMediaType", "the body is not application/json"),
    422: (
        "Invalid",
        "a field is missing, of the wrong type, out of range, not valid Unicode, or names an "
        "unknown value; or the API server rejected the status the report leads to",
    ),
    500: ("InternalError", "the controller failed"),
    501: ("NotImplemented", "the method is not one of HTTP's"),
    503: ("ServiceUnavailable", "not the leader, busy, or the token cannot be checked; retry"),
}


def _report_schema(config: Config) -> dict[str, Any]:
    profile = config.profile
    reasons = [*profile.reportable(), *profile.aliases]
    # Every accepted spelling of a collector's reason (either profile's names, aliases).
    by_collector = [
        text
        for text in reasons
        if (reason := profile.parse_reason(text)) is not None
        and profile.spec(reason).reported_by is Actor.METRICS_COLLECTOR
    ]
    updates = [Reason.UPDATE_SUCCESSFUL.value]
    updates += [a for a, r in profile.aliases.items() if r is Reason.UPDATE_SUCCESSFUL]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["reason"],
        "properties": {
            "collector": {
                "type": ["string", "null"],
                "enum": [*(c.name for c in config.collectors), None],
                "description": "the collector the report is about; none: every collector "
                "(endpoint operator only)",
            },
            "reason": {"type": "string", "enum": reasons},
            "message": {
                "type": "string",
                "description": (
                    "cut to 32768 characters; control characters other than tab and newline "
                    "become U+FFFD; when absent, a heartbeat keeps the last message"
                ),
            },
            "observedGeneration": {
                "type": ["integer", "null"],
                "format": "int64",
                "minimum": 0,
                "maximum": GENERATION_LIMIT - 1,
                "description": "the addon CR's generation the reporter saw; as in JSON Schema, "
                "a number whose fraction is zero is an integer (3.0 is 3, 3.5 is refused)",
            },
            "version": {
                "type": ["string", "null"],
                "minLength": 1,
                "maxLength": VERSION_LIMIT,
                "pattern": VERSION_PATTERN,
                "description": "with UpdateSuccessful only: the version the update installs; "
                "it becomes the installed one when the collector is next Available",
            },
        },
        # A collector's reason is always about the collector that sends it.
        "if": {"properties": {"reason": {"enum": by_collector}}, "required": ["reason"]},
        "then": {"required": ["collector"], "properties": {"collector": {"type": "string"}}},
        # A version comes only with an update (docs/spec.md §9).
        "dependentSchemas": {
            "version": {
                "anyOf": [
                    {"properties": {"version": {"type": "null"}}},
                    {"properties": {"reason": {"enum": updates}}},
                ]
            }
        },
    }


def _verdict_schema(config: Config) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["verdict", "collector", "state", "reason", "detail"],
        "properties": {
            "verdict": {"type": "string", "enum": [v.value for v in VerdictKind]},
            "collector": {"type": ["string", "null"]},
            "state": {"type": "string", "enum": [s.value for s in State]},
            "reason": {"type": ["string", "null"], "enum": [*(r.value for r in Reason), None]},
            "detail": {"type": "string"},
            "rule": {"type": "string", "description": "the rule that refused the report"},
            "deadline": {
                "type": "string",
                "format": "date-time",
                "description": "when a pending dampening window ends",
            },
        },
    }


_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "reason", "field", "message"],
            "properties": {
                "code": {"type": "integer"},
                "reason": {"type": "string", "description": "e.g. Invalid, Forbidden, NotLeader"},
                "field": {"type": ["string", "null"], "description": "the offending field"},
                "message": {"type": "string"},
            },
        }
    },
}


def _error_response(code: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": ERROR_REASONS[code][1],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if code == 401:
        response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
    if code == 503:
        response["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
    return response


def openapi_document(config: Config, *, max_body: int = 65536) -> dict[str, Any]:
    """The document served at /openapi.json for a server with this `config`."""
    codes = (400, 401, 403, 411, 413, 415, 422, 500, 503)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "addon status report API",
            "version": "1",
            "description": "Collectors and the endpoint operator report reasons; the "
            "controller's state machines judge them. A refused report is a 200 verdict.",
        },
        "paths": {
            REPORTS_PATH: {
                "post": {
                    "operationId": "submitReport",
                    "summary": "report a reason about a collector (or, as the operator, all)",
                    "security": [{"bearer": []}],
                    "requestBody": {
                        "required": True,
                        "description": f"at most {max_body} bytes",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Report"}}
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "the verdict: accepted, pending, heartbeat or refused",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Verdict"}
                                }
                            },
                        },
                        **{str(code): _error_response(code) for code in codes},
                    },
                }
            },
            SPEC_PATH: {
                "get": {
                    "operationId": "getOpenAPI",
                    "summary": "this document",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "the OpenAPI document",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        }
                    },
                }
            },
        },
        "components": {
            "schemas": {
                "Report": _report_schema(config),
                "Verdict": _verdict_schema(config),
                "Error": _ERROR_SCHEMA,
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
