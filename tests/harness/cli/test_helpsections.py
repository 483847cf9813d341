"""``proxyfleet conformance --help`` reads like a manual's page: every option under one of the
headings a user thinks in, each with one short sentence and its default."""

from __future__ import annotations

import click
from click.testing import CliRunner

from proxyfleet.harness.cli.conformance import SECTIONS, conformance
from proxyfleet.harness.cli.helpsections import SectionedCommand

HEADINGS = ["Lab:", "Reconciler under test:", "Your proxy:", "Existing cluster:", "Reports and output:"]


def test_every_option_is_under_a_heading_in_the_order_users_set_them_up() -> None:
    assert isinstance(conformance, SectionedCommand)
    assert conformance.unsectioned() == []
    listed = [name for _, names in SECTIONS for name in names]
    assert len(listed) == len(set(listed))  # each option once
    text = CliRunner().invoke(conformance, ["--help"], terminal_width=120).output
    assert [line for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")] == HEADINGS
    assert "Other options" not in text


def test_each_option_says_what_it_is_in_one_sentence_with_its_default() -> None:
    context = click.Context(conformance)
    for param in conformance.get_params(context):
        assert isinstance(param, click.Option)
        assert param.help, param.name
        sentence = param.help
        if isinstance(param.type, click.Choice):  # the names it accepts may follow the sentence
            for choice in param.type.choices:
                sentence = sentence.replace(str(choice), "")
        # one sentence, short enough for one line beside the option on a 120-column terminal
        assert len(sentence) <= 110 and ". " not in sentence, (param.name, param.help)
    text = CliRunner().invoke(conformance, ["--help"], terminal_width=120).output
    assert "[default: 10;" in text and "[default: correct]" in text
    assert "default: each step's own, from its rollout" in text  # --converge-timeout: no one number
