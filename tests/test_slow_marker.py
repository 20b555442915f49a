"""The ``slow`` marker: skipped in the default run, run with ``--runslow`` or
TENSORIX_RUN_SLOW=1 (tests/conftest.py)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = "tests/numerics/test_mx_fast.py::test_jit_rne_encoder_exhaustive_e4m3"


def _collect(*args, env=None):
    """The outcome pytest reports for the slow probe without running it (``--co`` lists it;
    ``-rs`` with ``--setup-plan`` shows the skip)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                        "--setup-plan", "-rs", PROBE, *args], capture_output=True, text=True,
                       cwd=ROOT, env=dict(os.environ, **(env or {})), timeout=300)
    return r.stdout


def test_slow_tests_are_skipped_by_default():
    out = _collect(env={"TENSORIX_RUN_SLOW": "0"})
    assert "slow: run with --runslow" in out, out[-2000:]


def test_runslow_and_the_environment_switch_run_them():
    for args, env in ((("--runslow",), {"TENSORIX_RUN_SLOW": "0"}),
                      ((), {"TENSORIX_RUN_SLOW": "1"})):
        out = _collect(*args, env=env)
        assert "slow: run with --runslow" not in out, out[-2000:]
        assert "test_jit_rne_encoder_exhaustive_e4m3" in out, out[-2000:]
