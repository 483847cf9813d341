"""Label selectors (``a=b,c!=d,e in (x,y),!f``) and field selectors (``metadata.name=x``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxyfleet.simulators.controlplane.errors import bad_request

Predicate = Callable[[dict[str, Any]], bool]
_SET = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*$")

# The fields each kind supports in field selectors, besides metadata.name / metadata.namespace.
FIELD_SELECTORS: dict[str, tuple[str, ...]] = {
    "events": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"),
    "nodes": ("spec.unschedulable",),
    "pods": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
}


def _split_terms(text: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        terms.append(current)
    return terms


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # in, notin, =, !=, exists, !exists
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "in":
            return value in self.values
        if self.operator == "notin":
            return value not in self.values
        if self.operator == "=":
            return value in self.values
        if self.operator == "!=":
            return value not in self.values
        if self.operator == "exists":
            return self.key in labels
        return self.key not in labels


def parse_label_selector(text: str) -> list[Requirement]:
    requirements = []
    for term in _split_terms(text):
        if match := _SET.match(term):
            values = frozenset(v.strip() for v in match.group(3).split(","))
            requirements.append(Requirement(match.group(1), match.group(2), values))
        elif match := _EQUALITY.match(term):
            key, op, value = match.groups()
            requirements.append(Requirement(key, "!=" if op == "!=" else "=", frozenset({value})))
        elif match := _EXISTS.match(term):
            requirements.append(Requirement(match.group(2), "!exists" if match.group(1) else "exists"))
        else:
            raise bad_request(f"unable to parse requirement: found '{term.strip()}', expected: "
                              "identifier")
    return requirements


def label_selector(text: str | None) -> Predicate:
    if not text:
        return lambda obj: True
    requirements = parse_label_selector(text)

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(r.matches(labels) for r in requirements)

    return matches


def field_value(obj: dict[str, Any], path: str) -> str:
    """The text a field selector compares for ``path`` (``spec.nodeName``) of ``obj``; "" if unset."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict) and path == "source":
        return str(value.get("component", ""))
    return str(value)


@dataclass(frozen=True)
class FieldSelector:
    """A parsed ``fieldSelector``: called with an object, whether it matches every term."""

    checks: tuple[tuple[str, bool, str], ...] = ()  # (field, negated, value)

    def __call__(self, obj: dict[str, Any]) -> bool:
        return all((field_value(obj, key) != value) if negate else (field_value(obj, key) == value)
                   for key, negate, value in self.checks)

    @property
    def equalities(self) -> dict[str, str]:
        """The terms that fix a field's value (``field=value``): what an index can look up."""
        return {key: value for key, negate, value in self.checks if not negate}


def field_selector(text: str | None, plural: str) -> FieldSelector:
    """Parse a ``fieldSelector`` for ``plural``, refusing a field the real API server does not
    select on in its own words."""
    if not text:
        return FieldSelector()
    allowed = ("metadata.name", "metadata.namespace", *FIELD_SELECTORS.get(plural, ()))
    checks: list[tuple[str, bool, str]] = []
    for term in _split_terms(text):
        match = _EQUALITY.match(term) or re.match(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*(.*)$", term)
        if match is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        key, op, value = match.group(1), match.group(2), match.group(3).strip()
        if key not in allowed:
            raise bad_request(f'"{key}" is not a known field selector: only "'
                              + '", "'.join(allowed) + '"')
        checks.append((key, op == "!=", value))
    return FieldSelector(tuple(checks))
