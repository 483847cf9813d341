"""``python -m harness`` is the ``proxyfleet`` command."""

from harness.cli import main

main(prog_name="proxyfleet")
