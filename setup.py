"""Packaging: the repository's top-level folders install under one import namespace,
``proxyfleet`` (``core/`` is ``proxyfleet.core``, ``harness/`` is ``proxyfleet.harness``, …), so
nothing proxyfleet installs can clash with another distribution's top-level names. Everything
else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

# examples/ holds no Python: the vendor proxies' configurations, shipped so that `proxyfleet config
# init --proxy squid` can write them beside a run file (package data, see pyproject.toml)
FOLDERS = ("core", "harness", "simulators", "scenarios", "examples")

setup(
    packages=[f"proxyfleet.{package}" for package in find_namespace_packages(include=[f"{f}*" for f in FOLDERS])],
    package_dir={f"proxyfleet.{folder}": folder for folder in FOLDERS},
)
