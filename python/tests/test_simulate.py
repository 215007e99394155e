"""The C++ simulator accepts what the bridge writes: `pipescope simulate` on a produced
profile (a chain and a graph with skip edges) exits 0 and prints JSON."""

import json
import os
import subprocess

import pytest

from helpers import EXAMPLES, PYTHON_DIR
from pipescope_torch.cli import main

PIPESCOPE = os.environ.get("PIPESCOPE_BIN",
                           os.path.join(os.path.dirname(PYTHON_DIR), "build", "bin", "pipescope"))


@pytest.mark.skipif(not os.path.isfile(PIPESCOPE) or not os.access(PIPESCOPE, os.X_OK),
                    reason=f"{PIPESCOPE} not built (cmake build of the C++ project; "
                           "or set PIPESCOPE_BIN)")
@pytest.mark.parametrize("model, shape", [("mlp.py", "784"), ("resnet_block.py", "3,32,32")])
def test_pipescope_simulate_accepts_the_profile(tmp_path, model, shape):
    out = tmp_path / "profile.json"
    assert main(["profile", f"{EXAMPLES}/{model}:build_model", "--input-shape", shape,
                 "--batch-sizes", "1,2,4", "-o", str(out), "--warmup", "0",
                 "--repeats", "1"]) == 0
    r = subprocess.run([PIPESCOPE, "simulate", "--profile", str(out), "--stages", "2",
                        "--microbatches", "4", "--schedule", "1f1b", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
