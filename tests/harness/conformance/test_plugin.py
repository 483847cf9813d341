"""The pytest plugin (entry point ``pytest11``): a user's own scenario in a few lines, with the lab
and judge as fixtures, and its checks carried in the test report."""

import json
import re
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

README = Path(__file__).parents[3] / "README.md"


def readme_scenario() -> str:
    section = README.read_text().split("### Writing a scenario", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "the README shows a scenario"
    return block.group(1)

USER_SCENARIO = '''
import pytest
from proxyfleet.harness.lab import DEFAULT_NO_PROXY


@pytest.mark.workflow("my-workflow")
async def test_my_proxy(conformance):
    lab = conformance.lab
    await conformance.step("join", lambda: conformance.add_instances(conformance.nodes))

    async def add():
        await conformance.set_trusted_ca([lab.mitm_ca_pem])
        await conformance.set_proxy(lab.proxy_url, DEFAULT_NO_PROXY)

    results = await conformance.step("proxy added", add)
    assert {r.check for r in results} >= {"registry-env", "pull-internet", "reboots"}
    conformance.assert_passed()


@pytest.mark.workflow("my-workflow")
async def test_a_wrong_expectation_fails(conformance):
    await conformance.step("join", lambda: conformance.add_instances(conformance.nodes))
    lab = conformance.lab
    # the proxy intercepts TLS, but nobody made its CA trusted: pulls through it must fail
    await conformance.step("proxy without its CA",
                           lambda: conformance.set_proxy(lab.proxy_url, DEFAULT_NO_PROXY, trusted_ca=None))
    conformance.assert_passed()
'''


@pytest.mark.slow
def test_user_scenarios_and_the_readme_example_run_with_the_plugin_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_SCENARIO, test_readme=readme_scenario())
    result = pytester.runpytest_subprocess("--proxyfleet-nodes=1", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto",
                                           "-o", "asyncio_default_fixture_loop_scope=function", "--junitxml=out.xml")
    result.assert_outcomes(passed=2, failed=1)  # the README's scenario passes as written
    result.stdout.fnmatch_lines(["*127.10.0.1: pull-internet after 'proxy without its CA'*"])
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "out.xml").getroot().iter("testcase")}
    properties = {p.get("name"): p.get("value") for p in cases["test_my_proxy"].iter("property")}
    data = json.loads(properties["proxyfleet"] or "{}")
    assert data["workflow"] == "my-workflow" and data["nodes"] == 1
    assert {c["check"] for c in data["checks"]} >= {"registry-env", "certificates", "pull-internet", "node-ready"}
    assert all(c["status"] == "passed" for c in data["checks"])


def test_worksteal_blocks_spread_the_long_scenarios() -> None:
    from proxyfleet.harness.conformance.plugin import worksteal_order

    # Twelve scenarios (weights = rollouts, longest first) on four workers: worksteal hands out
    # contiguous blocks of three. Each block gets one of the four longest, none two.
    weights = [5, 4, 4, 3, 3, 3, 2, 2, 1, 1, 1, 0]
    names = [f"s{i}" for i in range(len(weights))]
    ordered = worksteal_order(names, 4, lambda name: weights[int(name[1:])])
    assert sorted(ordered) == sorted(names)
    blocks = [ordered[i:i + 3] for i in range(0, 12, 3)]
    assert [sum(1 for n in block if int(n[1:]) < 4) for block in blocks] == [1, 1, 1, 1]
    loads = [sum(weights[int(n[1:])] for n in block) for block in blocks]
    assert max(loads) - min(loads) <= 1
    # uneven counts follow worksteal's sizes (remaining // workers left): 2, 2, 3, 3 for ten
    ten = worksteal_order(names[:10], 4, lambda name: weights[int(name[1:])])
    assert ten[0] == "s0" and ten[2] == "s1" and ten[4] == "s2" and ten[7] == "s3"


LOOP_SCOPE = ("-o", "asyncio_default_fixture_loop_scope=function")
CLUSTER_AND_LAB = '''
import pytest


@pytest.mark.workflow("runtime-add")
def test_on_the_lab():
    pass


@pytest.mark.cluster
@pytest.mark.workflow("runtime-add")
def test_on_a_cluster(cluster_conformance):
    pass
'''


def test_cluster_scenarios_run_only_against_a_cluster_and_lab_scenarios_only_on_the_lab(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_both=CLUSTER_AND_LAB)
    on_lab = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "-v", *LOOP_SCOPE)
    on_lab.assert_outcomes(passed=1, deselected=1)
    on_lab.stdout.fnmatch_lines(["*test_on_the_lab PASSED*"])
    target = pytester.path / "cluster.json"
    target.write_text(json.dumps({"format": "something else"}))
    on_cluster = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "-v", *LOOP_SCOPE,
                                              f"--proxyfleet-cluster={target}")
    # only the cluster's scenario is collected; a run file it cannot read is an error, not a pass
    on_cluster.assert_outcomes(errors=1, deselected=1)
    on_cluster.stdout.fnmatch_lines(["*not a proxyfleet-cluster-run/v1 file*"])


def test_a_state_directory_others_can_write_is_refused_before_any_lab_starts(pytester: pytest.Pytester) -> None:
    # `proxyfleet conformance --keep DIR` hands DIR to the plugin as --proxyfleet-state-dir
    pytester.makepyfile(test_lab=CLUSTER_AND_LAB)
    shared = pytester.path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=auto", *LOOP_SCOPE,
                                          f"--proxyfleet-state-dir={shared}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --proxyfleet-state-dir {shared} is owned by *, mode 0777: others can "
                                 "write it*"])
    assert list(shared.iterdir()) == []
    missing = pytester.path / "keep" / "labs"
    made = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=auto", *LOOP_SCOPE,
                                        f"--proxyfleet-state-dir={missing}")
    made.assert_outcomes(passed=1, deselected=1)
    assert stat.S_IMODE(missing.stat().st_mode) == 0o700
