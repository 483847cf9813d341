"""Language semantics: values, operators, variables, errors and exit codes."""

from __future__ import annotations

import json

import pytest

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.powershell.budgets import Budget
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
from proxyfleet.simulators.windows.session import Session
from tests.support import ps


@pytest.mark.parametrize(("script", "expected"), [
    ("1 + 2 * 3", "7"),
    ("'a' + 1", "a1"),
    ("7 / 2", "3.5"),
    ("6 / 2", "3"),
    ("'ab' * 3", "ababab"),
    ("(1,2,3).Count", "3"),
    ("@(1,2) + 3 -join ','", "1,2,3"),
    ("'HTTP_Proxy' -eq 'http_proxy'", "True"),
    ("'HTTP_Proxy' -ceq 'http_proxy'", "False"),
    ("1,2,3,2 -eq 2 -join '+'", "2+2"),
    ("'quay.io' -like '*.io'", "True"),
    ("'a.b.c' -split '\\.' -join '|'", "a|b|c"),
    ("'x=1' -replace '(\\w)=(\\d)', '$2=$1'", "1=x"),
    ("'127.0.0.1' -match '^(?<first>\\d+)\\.'; $Matches.first", "True\n127"),
    ("$null -eq $x", "True"),
    ("[int]'42' + 1", "43"),
    ("[string]$null -eq ''", "True"),
    ("'{0}-{1}' -f 'a', 5", "a-5"),
    ("$h = @{ Key = 'v' }; $h.key; $h['KEY']", "v\nv"),
    ("\"sum $(1 + 1) and $env:NOPE.\"", "sum 2 and ."),
    ("'a,b,,c'.Split(',').Count", "4"),
    ("' x '.Trim().ToUpper()", "X"),
    ("if (0) { 'yes' } elseif ('') { 'empty' } else { 'no' }", "no"),
    ("foreach ($i in 1..3) { $i * 10 }", "10\n20\n30"),
    ("$list = @(); $list += 'a'; $list += 'b'; $list.Count", "2"),
    ("(Get-Service kubelet).Status -eq 'Running'", "True"),
    ("[Convert]::ToBase64String([Text.Encoding]::UTF8.GetBytes('hé'))", "aMOp"),
    ("[Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('aMOp'))", "hé"),
    ("try { throw 'boom' } catch { \"caught: $($_.Exception.Message)\" }", "caught: boom"),
    ("[void](1 + 1); 'after'", "after"),
    ("$null = 'discarded'; 'kept'", "kept"),
])
async def test_expressions(machine: WindowsMachine, script: str, expected: str) -> None:
    result = await ps(machine, script)
    assert result.stderr == ""
    assert result.stdout.replace("\r\n", "\n").strip("\n") == expected
    assert result.exit_code == 0


async def test_unknown_command_is_not_recognized_and_exit_code_is_one(machine: WindowsMachine) -> None:
    result = await ps(machine, "Get-Nothing -Now")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Get-Nothing : The term 'Get-Nothing' is not recognized as the name of a cmdlet, function, "
        "script file, or operable program.")
    assert "+ ~~~~~~~~~~~" in result.stderr
    assert "CategoryInfo          : ObjectNotFound: (Get-Nothing:String) [], CommandNotFoundException" \
        in result.stderr


async def test_statement_terminating_error_lets_the_script_continue(machine: WindowsMachine) -> None:
    result = await ps(machine, "nope; 'still running'")
    assert "still running" in result.stdout
    assert result.exit_code == 0  # the last statement succeeded


async def test_error_action_preference_stop_halts_the_script(machine: WindowsMachine) -> None:
    result = await ps(machine, "$ErrorActionPreference = 'Stop'; Get-Item C:\\nope; 'not reached'")
    assert "not reached" not in result.stdout
    assert "Cannot find path 'C:\\nope' because it does not exist." in result.stderr
    assert result.exit_code == 1


async def test_error_action_parameter(machine: WindowsMachine) -> None:
    quiet = await ps(machine, "Get-Item C:\\nope -ErrorAction SilentlyContinue; $?")
    assert quiet.stderr == "" and quiet.stdout.strip() == "False"
    caught = await ps(machine, "try { Get-Item C:\\nope -ErrorAction Stop } catch { 'caught' }")
    assert caught.stdout.strip() == "caught" and caught.stderr == ""


async def test_exit_code_comes_from_exit(machine: WindowsMachine) -> None:
    assert (await ps(machine, "exit 7")).exit_code == 7
    assert (await ps(machine, "'x'; exit")).exit_code == 0


async def test_throw_is_reported_with_position(machine: WindowsMachine) -> None:
    result = await ps(machine, "'before'\nthrow \"bad thing\"")
    assert result.exit_code == 1
    assert result.stdout.strip() == "before"
    assert result.stderr.startswith("bad thing\nAt line:2 char:1\n+ throw \"bad thing\"\n")


async def test_bad_parameter_uses_parameter_binding_wording(machine: WindowsMachine) -> None:
    result = await ps(machine, "Get-Service -Bogus")
    assert result.stderr.startswith(
        "Get-Service : A parameter cannot be found that matches parameter name 'Bogus'.")
    assert "NamedParameterNotFound,Microsoft.PowerShell.Commands.GetServiceCommand" in result.stderr
    ambiguous = await ps(machine, "Get-ChildItem -F x")
    assert "the parameter name 'F' is ambiguous. Possible matches include: -Filter -Force -File." \
        in ambiguous.stderr
    extra = await ps(machine, "Get-Date a b")
    assert "A positional parameter cannot be found that accepts argument 'a'." in extra.stderr
    choice = await ps(machine, "Get-Content C:\\x -Encoding Klingon")
    assert "does not belong to the set" in choice.stderr


async def test_unknown_type_and_method(machine: WindowsMachine) -> None:
    result = await ps(machine, "[Nope.Type]::Go()")
    assert result.stderr.startswith("Unable to find type [Nope.Type].")
    method = await ps(machine, "'x'.Frobnicate()")
    assert method.stderr.startswith(
        "Method invocation failed because [System.String] does not contain a method named 'Frobnicate'.")
    null = await ps(machine, "$nothing.Trim()")
    assert null.stderr.startswith("You cannot call a method on a null-valued expression.")


async def test_dotnet_exceptions_are_wrapped_like_powershell(machine: WindowsMachine) -> None:
    result = await ps(machine, "[Convert]::FromBase64String('not base64!')")
    assert result.stderr.startswith(
        'Exception calling "FromBase64String" with "1" argument(s): "The input is not a valid Base-64 string')


async def test_variables_persist_in_a_runspace(machine: WindowsMachine) -> None:
    interpreter = Interpreter(Session(machine))
    await interpreter.run("$counter = 41")
    assert (await interpreter.run("$counter + 1")).stdout.strip() == "42"


async def test_read_only_variables(machine: WindowsMachine) -> None:
    result = await ps(machine, "$true = 1")
    assert "Cannot overwrite variable true because it is read-only or constant." in result.stderr


async def test_convert_to_json_uses_windows_powershell_5_escapes(machine: WindowsMachine) -> None:
    result = await ps(machine, "@{ 'q' = \"it's <a&b>\" } | ConvertTo-Json -Compress")
    assert result.stdout.strip() == '{"q":"it\\u0027s \\u003ca\\u0026b\\u003e"}'
    assert json.loads(result.stdout) == {"q": "it's <a&b>"}
    pretty = await ps(machine, "[ordered]@{ a = 1; b = @(1, 2) } | ConvertTo-Json")
    assert '"a":  1' in pretty.stdout
    assert json.loads(pretty.stdout) == {"a": 1, "b": [1, 2]}


async def test_convert_from_json_makes_objects(machine: WindowsMachine) -> None:
    result = await ps(machine, "$o = '{\"a\": {\"b\": [1, 2]}}' | ConvertFrom-Json; $o.a.b[1]")
    assert result.stdout.strip() == "2"
    bad = await ps(machine, "'{nope' | ConvertFrom-Json")
    assert "Invalid JSON primitive" in bad.stderr


async def test_pipeline_cmdlets(machine: WindowsMachine) -> None:
    script = ("Get-Service | Where-Object { $_.Name -like 'k*' } | Sort-Object Name -Descending | "
              "ForEach-Object { $_.Name } ")
    assert (await ps(machine, script)).stdout.split() == ["kubelet", "kube-proxy"]
    simplified = await ps(machine, "Get-Service | Where-Object Name -EQ 'sshd' | Select-Object -ExpandProperty DisplayName")
    assert simplified.stdout.strip() == "OpenSSH SSH Server"
    member = await ps(machine, "Get-Service containerd, sshd | ForEach-Object Name")
    assert member.stdout.split() == ["containerd", "sshd"]
    selected = await ps(machine, "Get-Service kubelet | Select-Object Name, Status | ConvertTo-Json -Compress")
    assert json.loads(selected.stdout) == {"Name": "kubelet", "Status": 4}


async def test_step_budget_stops_runaway_scripts(machine: WindowsMachine) -> None:
    result = await Interpreter(Session(machine), budget=Budget(steps=1000)).run("foreach ($i in 1..5000) { $i }")
    assert result.exit_code == 1
    assert "limit of 1000 statements" in result.stderr


async def test_out_string_and_redirection_to_file(machine: WindowsMachine) -> None:
    await ps(machine, "Get-Service kubelet > C:\\k\\svc.txt")
    raw = machine.filesystem.read_bytes("C:\\k\\svc.txt")
    assert raw.startswith(b"\xff\xfe")  # Windows PowerShell 5.1 writes UTF-16LE for '>'
    assert "kubelet" in raw.decode("utf-16")
    text = await ps(machine, "(Get-Service sshd | Out-String).Contains('OpenSSH SSH Server')")
    assert text.stdout.strip() == "True"
