"""Packaging: the repository's top-level folders install under one import namespace,
``proxyfleet`` (``core/`` is ``proxyfleet.core``, ``harness/`` is ``proxyfleet.harness``, …), so
nothing proxyfleet installs can clash with another distribution's top-level names. Everything
else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

FOLDERS = ("core", "harness", "simulators", "scenarios")

setup(
    packages=[f"proxyfleet.{package}" for package in find_namespace_packages(include=[f"{f}*" for f in FOLDERS])],
    package_dir={f"proxyfleet.{folder}": folder for folder in FOLDERS},
)
