"""Kubernetes ``Status`` failures with the real reasons and codes."""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """A request the API server answers with a ``Status`` object."""

    def __init__(self, code: int, reason: str, message: str,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "message": self.message, "reason": self.reason,
                                "code": self.code}
        if self.details:
            body["details"] = self.details
        return body


def _details(name: str | None, group: str, kind: str, causes: list[dict[str, str]] | None = None
             ) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": kind}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if causes:
        details["causes"] = causes
    return details


def not_found(plural: str, name: str, group: str = "") -> APIError:
    resource = f"{plural}.{group}" if group else plural
    return APIError(404, "NotFound", f'{resource} "{name}" not found', _details(name, group, plural))


def already_exists(plural: str, name: str, group: str = "") -> APIError:
    resource = f"{plural}.{group}" if group else plural
    return APIError(409, "AlreadyExists", f'{resource} "{name}" already exists',
                    _details(name, group, plural))


def conflict(plural: str, name: str, group: str = "") -> APIError:
    resource = f"{plural}.{group}" if group else plural
    return APIError(409, "Conflict",
                    f'Operation cannot be fulfilled on {resource} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again",
                    _details(name, group, plural))


def invalid(kind: str, name: str, group: str, causes: list[tuple[str, str, str]]) -> APIError:
    """422: causes are (field, type, message) like field.ErrorList."""
    qualified = f"{kind}.{group}" if group else kind
    text = "; ".join(f"{field}: {message}" for field, _, message in causes)
    if len(causes) > 1:
        text = "[" + ", ".join(f"{field}: {message}" for field, _, message in causes) + "]"
    return APIError(422, "Invalid", f'{qualified} "{name}" is invalid: {text}',
                    _details(name, group, kind,
                             [{"reason": t, "message": m, "field": f} for f, t, m in causes]))


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def gone(message: str) -> APIError:
    return APIError(410, "Expired", message)


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized")


def method_not_allowed(method: str) -> APIError:
    return APIError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                                             f"resource ({method})")


def no_such_path() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource")
