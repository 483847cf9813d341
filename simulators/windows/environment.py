"""Windows environment blocks: case-insensitive names that keep the case they were set with."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, MutableMapping

_REFERENCE = re.compile(r"%([^%]+)%")


class EnvironmentBlock(MutableMapping[str, str]):
    """A process environment as Windows keeps it: ``Path`` and ``PATH`` are the same variable."""

    def __init__(self, initial: Mapping[str, str] | None = None) -> None:
        self._data: dict[str, tuple[str, str]] = {}
        if initial:
            for name, value in initial.items():
                self[name] = value

    def __getitem__(self, name: str) -> str:
        return self._data[name.lower()][1]

    def __setitem__(self, name: str, value: str) -> None:
        existing = self._data.get(name.lower())
        self._data[name.lower()] = (existing[0] if existing else name, value)

    def __delitem__(self, name: str) -> None:
        del self._data[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._data.values())

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._data

    def copy(self) -> EnvironmentBlock:
        block = EnvironmentBlock()
        block._data = dict(self._data)  # every process and session starts from one: no re-keying
        return block

    def as_dict(self) -> dict[str, str]:
        return dict(self.items())


def expand_references(value: str, environment: Mapping[str, str]) -> str:
    """Expand ``%NAME%`` like ``ExpandEnvironmentStrings``; unknown names stay as written."""
    if "%" not in value:  # most values reference nothing
        return value
    block = environment if isinstance(environment, EnvironmentBlock) else EnvironmentBlock(environment)
    return _REFERENCE.sub(lambda m: block.get(m.group(1), m.group(0)), value)
