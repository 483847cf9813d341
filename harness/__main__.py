"""``python -m proxyfleet.harness`` is the ``proxyfleet`` command."""

from proxyfleet.harness.cli import main

main(prog_name="proxyfleet")
