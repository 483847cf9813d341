"""The test tree mirrors the source tree: each module of the package has a test module of the same
name under ``tests/`` (so a module's tests are where a newcomer looks for them)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "harness", "simulators")


def test_every_module_has_a_test_module_of_its_name() -> None:
    modules = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
               if p.name != "__init__.py" and "__pycache__" not in p.parts]
    assert len(modules) > 100  # the package is where this test thinks it is
    missing = [str(m.relative_to(ROOT)) for m in modules
               if not (ROOT / "tests" / m.parent.relative_to(ROOT) / f"test_{m.name}").exists()]
    assert missing == []
