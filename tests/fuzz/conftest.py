"""In the suite the fuzz properties run a bounded, fixed set of examples (``derandomize``): a CI
run never fails on a case another run did not see. ``bench/bench_fuzz.py`` explores with fresh
random examples instead."""

from hypothesis import settings

settings.register_profile("suite", derandomize=True, database=None)
settings.load_profile("suite")
