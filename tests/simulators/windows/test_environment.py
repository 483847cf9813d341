"""Windows environment blocks: names case-insensitive but kept as first written, and %NAME%
expansion like ExpandEnvironmentStrings."""

from __future__ import annotations

from proxyfleet.simulators.windows.environment import EnvironmentBlock, expand_references


def test_names_are_case_insensitive_and_keep_their_spelling() -> None:
    block = EnvironmentBlock({"Path": "C:\\Windows"})
    block["HTTPS_PROXY"] = "http://a:1"
    block["https_proxy"] = "http://b:1"  # the same variable on Windows
    assert len(block) == 2 and block["HTTPS_Proxy"] == "http://b:1"
    assert "PATH" in block and block.as_dict()["Path"] == "C:\\Windows"
    del block["path"]
    assert "Path" not in block and block.copy() == block


def test_references_expand_and_unknown_names_stay() -> None:
    env = {"SystemRoot": "C:\\Windows", "USERPROFILE": "C:\\Users\\Administrator"}
    assert expand_references("%systemroot%\\System32;%NOPE%", env) == "C:\\Windows\\System32;%NOPE%"
    assert expand_references("%USERPROFILE%\\.proxyfleet", env) == "C:\\Users\\Administrator\\.proxyfleet"
