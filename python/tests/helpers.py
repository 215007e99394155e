"""Shared test helpers: run the CLI, and check a profile's structure independently of the
package's own validate_profile (so a bug there cannot hide a bad file)."""

import json
import os
import subprocess
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)
# The C++ binary the tests drive (PIPESCOPE_BIN names another build).
PIPESCOPE = os.environ.get("PIPESCOPE_BIN", os.path.join(REPO, "build", "bin", "pipescope"))
EXAMPLES = os.path.join(PYTHON_DIR, "examples")
REQUIRED_LAYER_KEYS = {"name", "forward_ms", "backward_ms", "activation_bytes",
                       "output_bytes", "parameter_bytes"}


def run_module(*args):
    """`python3 -m pipescope_torch ARGS` in a fresh interpreter; returns CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "pipescope_torch", *args], cwd=PYTHON_DIR,
                          capture_output=True, text=True, timeout=120)


def load_and_check_profile(path, batch_sizes):
    """Loads `path` and asserts it is a well-formed pipescope v1 profile."""
    with open(path, encoding="utf-8") as f:
        p = json.load(f)
    assert p["format"] == "pipescope.profile" and p["version"] == 1
    assert isinstance(p["model"], str) and p["model"]
    assert isinstance(p["device"]["name"], str) and p["device"]["memory_bytes"] > 0
    assert p["backend"] == "cpu" and p["dtype"] == "fp32"
    assert p["batch_sizes"] == list(batch_sizes)
    n = len(batch_sizes)
    names = [layer["name"] for layer in p["layers"]]
    assert len(names) == len(set(names)) > 0, "layer names must be unique"
    for layer in p["layers"]:
        assert REQUIRED_LAYER_KEYS <= set(layer)
        for key in ("forward_ms", "backward_ms", "activation_bytes", "output_bytes"):
            assert len(layer[key]) == n, f"{layer['name']}.{key}: one value per batch size"
            assert all(v >= 0 for v in layer[key]), f"{layer['name']}.{key}: negative"
        for key in ("activation_bytes", "output_bytes"):
            assert all(isinstance(v, int) for v in layer[key])
        assert isinstance(layer["parameter_bytes"], int) and layer["parameter_bytes"] >= 0
    edges = [tuple(e) for e in p.get("edges", [])]
    assert len(edges) == len(set(edges)), "duplicate edge"
    for a, b in edges:
        assert 0 <= a < b < len(names), f"edge {a}->{b} must go forward (topological order)"
    return p


def run_pipescope(*args):
    """`pipescope ARGS`, asserted to exit 0; returns its stdout."""
    r = subprocess.run([PIPESCOPE, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"pipescope {' '.join(map(str, args))}: {r.stderr}"
    return r.stdout


def moe_profile(profile_path, folder, experts=64, topk=2):
    """A copy of `profile_path` in `folder` whose decoder blocks state `experts` experts
    (top-`topk`): a layout with ep > 1 needs an MoE model, and pipescope refuses ep on a
    dense one as Megatron-LM's arguments.py does. Returns the copy's path."""
    with open(profile_path, encoding="utf-8") as f:
        profile = json.load(f)
    for layer in profile["layers"]:
        spec = layer.get("spec", {})
        if spec.get("type") in ("transformer_block", "hf_decoder_layer"):
            spec.update(experts=experts, moe_topk=topk)
    out = os.path.join(str(folder), "moe-profile.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(profile, f)
    return out
