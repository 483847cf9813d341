"""Conformance: judge any reconciler by what the nodes and the traffic show (DESIGN.md §1).

``judge.Conformance`` drives a scenario's steps and records a ``CheckResult`` per node and
check; ``report`` turns a run's results into JSON, JUnit XML and HTML.
"""

from proxyfleet.harness.conformance.evidence import Step
from proxyfleet.harness.conformance.judge import Conformance
from proxyfleet.harness.conformance.results import CHECK_FAMILIES, CheckResult, ScenarioResult

__all__ = ["CHECK_FAMILIES", "CheckResult", "Conformance", "ScenarioResult", "Step"]
