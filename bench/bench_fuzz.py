"""The fuzz properties of ``tests/fuzz`` run long: many more examples than the suite's bounded
run, a fresh random seed each time, and the rate of each property.

    python bench/bench_fuzz.py --examples 20000

Prints one JSON line per property (examples, seconds, examples per second) and exits 1 on the
first falsifying example, which Hypothesis prints minimised.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20000, help="Examples per property.")
    options = parser.parse_args()
    os.environ["PROXYFLEET_FUZZ_EXAMPLES"] = str(options.examples)  # read when the properties are defined

    from tests.fuzz import test_api_fuzz, test_inputs_fuzz, test_powershell_fuzz

    properties = [
        ("powershell parser", test_powershell_fuzz.test_the_parser_accepts_or_refuses_with_a_parse_error),
        ("powershell interpreter", test_powershell_fuzz.test_the_interpreter_answers_everything_in_powershells_words),
        ("cmd.exe", test_powershell_fuzz.test_cmd_answers_everything_in_cmds_words),
        ("API server requests", test_api_fuzz.test_every_request_gets_a_kubernetes_answer),
        ("Proxy files", test_inputs_fuzz.test_proxy_files),
        ("install-configs", test_inputs_fuzz.test_install_configs),
        ("CA bundles", test_inputs_fuzz.test_ca_bundles),
    ]
    for name, prop in properties:
        started = time.monotonic()
        prop()  # raises with the minimised falsifying example
        seconds = time.monotonic() - started
        print(json.dumps({"property": name, "examples": options.examples, "seconds": round(seconds, 1),
                          "per_second": round(options.examples / seconds)}), flush=True)


if __name__ == "__main__":
    main()
