"""`profile --loss`: the model's loss as the last layer of a profile, and `run` of a plan cut from it.

The loss layer exists only with --loss; its bytes follow what autograd saves for the loss's
backward (closed forms below, on the MLP 784-64-64-10 of test_torch_run); pipescope reads
and simulates it like any layer, the simulator's cut runs on PyTorch with the loss as the
last stage's loss_fn (gradients equal one process's), and a last stage that holds only the
loss is refused (exit 2, naming the stage).
"""

import json
import os
import subprocess
import sys

import pytest

from helpers import PIPESCOPE, PYTHON_DIR, load_and_check_profile, run_module, run_pipescope
from pipescope_torch.plans import plan_from_prediction, predict, write_plan
from pipescope_torch.torch_model import ModelEntry

HAVE_PIPESCOPE = os.path.isfile(PIPESCOPE) and os.access(PIPESCOPE, os.X_OK)
needs_pipescope = pytest.mark.skipif(not HAVE_PIPESCOPE, reason=f"{PIPESCOPE} not built")

MLP = '''import torch.nn as nn
def build_model():
    return nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
'''
SIZES = [4, 8]
FAST = ["--warmup", "0", "--repeats", "1"]


@pytest.fixture
def mlp(tmp_path):
    p = tmp_path / "mlp.py"
    p.write_text(MLP)
    return f"{p}:build_model"


def profile(tmp_path, mlp, *loss):
    out = tmp_path / f"profile{'_' + loss[-1] if loss else ''}.json"
    r = run_module("profile", mlp, "--input-shape", "784", "--batch-sizes", ",".join(map(str, SIZES)),
                   "-o", str(out), *FAST, *loss)
    assert r.returncode == 0, r.stderr
    return out, load_and_check_profile(out, SIZES)


def test_the_loss_layer_exists_only_with_loss_and_holds_what_autograd_saves(tmp_path, mlp):
    _, plain = profile(tmp_path, mlp)
    assert [l["name"] for l in plain["layers"]] == ["0", "1", "2", "3", "4"]
    assert not any("spec" in l for l in plain["layers"])

    _, ce = profile(tmp_path, mlp, "--loss", "cross_entropy")
    assert [l["name"] for l in ce["layers"]] == ["0", "1", "2", "3", "4", "loss"]
    bytes_of = lambda l: (l["activation_bytes"], l["output_bytes"], l["parameter_bytes"])  # noqa: E731
    assert [bytes_of(l) for l in ce["layers"][:5]] == [bytes_of(l) for l in plain["layers"]]
    loss = ce["layers"][-1]
    assert loss["spec"] == {"type": "loss", "name": "cross_entropy",
                            "function": "torch.nn.functional.cross_entropy"}
    assert loss["output_bytes"] == [4, 4]  # the fp32 scalar
    assert loss["parameter_bytes"] == 0 and loss["optimizer_ms"] == 0
    # cross_entropy on logits [B, 10] fp32 is log_softmax then nll_loss: autograd saves
    # log_softmax's output (B x 10 x 4 B), the int64 class targets (B x 8 B) and nll_loss's
    # total_weight (an fp32 scalar, 4 B): 196 B at B = 4, 388 B at B = 8.
    assert loss["activation_bytes"] == [b * 10 * 4 + b * 8 + 4 for b in SIZES]
    # No parameter: the weight pass reads nothing.
    assert loss["weight_grad_bytes"] == [0, 0]
    assert all(t > 0 for t in loss["forward_ms"] + loss["backward_ms"])

    _, mse = profile(tmp_path, mlp, "--loss", "mse")
    # mse_loss saves its input and its target, both [B, 10] fp32: 2 x B x 10 x 4 B.
    assert mse["layers"][-1]["activation_bytes"] == [2 * b * 10 * 4 for b in SIZES]
    assert mse["layers"][-1]["output_bytes"] == [4, 4]


def test_an_unknown_loss_exits_2_naming_the_flag(tmp_path, mlp):
    out = tmp_path / "never.json"
    r = run_module("profile", mlp, "--input-shape", "784", "--batch-sizes", "4", "-o", str(out), *FAST,
                   "--loss", "hinge")
    assert r.returncode == 2 and "--loss 'hinge' must be one of cross_entropy, mse" in r.stderr, r.stderr
    assert not out.exists()


def test_a_model_files_loss_fn_is_the_loss_measured_and_run(tmp_path):
    """One fact: a model's loss is its file's loss_fn when it has one (the Llama example's
    causal-LM cross-entropy), whatever --loss names; else the built-in --loss names."""
    import torch

    p = tmp_path / "own.py"
    p.write_text(MLP + "def loss_fn(output, target):\n    return output.sum() * 0 + 7\n")
    for name in ("mse", "cross_entropy"):
        entry = ModelEntry.load(f"{p}:build_model", [784], name)
        assert float(entry.loss_fn(torch.zeros(2, 10), torch.zeros(2, 10))) == 7.0


@needs_pipescope
def test_a_plan_with_the_loss_layer_runs_on_pytorch(tmp_path, mlp):
    path, p = profile(tmp_path, mlp, "--loss", "cross_entropy")
    assert "ok" in run_pipescope("validate", path)
    run_pipescope("simulate", "--profile", path, "-K", "2", "-M", "4", "--microbatch-size", "8")
    # The simulator's cut (plans.py) under --partition uniform: 6 layers in 2 stages of 3, the
    # loss layer (6 of 6) ending the last stage's range beside two modules. Any cut the
    # simulator makes keeps the loss with its producer (planner/partition.h); a hand-made
    # plan with the loss alone on the last stage is refused by the run (below).
    pred = predict(PIPESCOPE, str(path), 2, 4, 8, "1f1b", extra=["--partition", "uniform"])
    plan = plan_from_prediction(pred, str(path), str(tmp_path))
    assert [s["layers"] for s in plan["stages"]] == [[0, 3], [3, 6]]
    plan_file = tmp_path / "plan.json"
    write_plan(str(plan_file), plan)
    r = subprocess.run([sys.executable, "-m", "pipescope_torch", "run", "--plan", str(plan_file), "--model", mlp,
                        "--input-shape", "784", "--json", "--steps", "1", "--warmup", "0", "--pipescope", PIPESCOPE],
                       cwd=PYTHON_DIR, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["runtime"]["gradient_relative_error"] <= 1e-5
    # The measurement's ranges are the plan's, the loss layer inside the last one.
    assert [s["layers"] for s in m["stages"]] == [s["layers"] for s in plan["stages"]]

    # A last stage holding only the loss has no module to run: refused before any rank starts.
    plan["stages"] = [{"layers": [0, 5], "devices": [0]}, {"layers": [5, 6], "devices": [1]}]
    write_plan(str(plan_file), plan)
    out = tmp_path / "never.json"
    r = subprocess.run([sys.executable, "-m", "pipescope_torch", "run", "--plan", str(plan_file), "--model", mlp,
                        "--input-shape", "784", "-o", str(out), "--pipescope", PIPESCOPE],
                       cwd=PYTHON_DIR, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "stages[1].layers: the last stage holds only the loss layer 'loss'" in r.stderr
    assert not out.exists()


def test_run_takes_the_loss_the_profile_names(tmp_path, mlp):
    """A plan's profile whose loss layer says cross_entropy makes run's loss (and its target)
    the cross-entropy on class indices, for a model file without its own loss_fn."""
    from pipescope_torch.torch_setup import _loss_layer

    prof = {"layers": [{"name": "0"}, {"name": "loss", "spec": {"type": "loss", "name": "cross_entropy"}}]}
    (tmp_path / "p.json").write_text(json.dumps(prof))
    assert _loss_layer(str(tmp_path / "plan.json"), {"profile": "p.json"}) == (1, "cross_entropy")
    entry = ModelEntry.load(mlp, [784], "cross_entropy")
    model = entry.build()
    x, y = entry.batch(model, 8, 1)
    assert y.dtype.is_floating_point is False and list(y.shape) == [8] and int(y.max()) < 10


def test_the_llama_examples_loss_layer(tmp_path):
    """The Llama example's loss (its file's loss_fn: cross-entropy over logits reshaped to
    [B·S, V], S = 64, V = 1024) at B = 2 saves log_softmax's output 2·64·1024·4 = 524288 B, the
    int64 labels 2·64·8 = 1024 B and nll_loss's total weight, 4 B: 525316 B. (At B = 1
    make_batch's labels are a contiguous view of the 65-token ids, whose whole storage,
    520 B, is what the profile counts.)"""
    out = tmp_path / "llama.json"
    r = run_module("profile", f"{os.path.join(PYTHON_DIR, 'examples', 'llama.py')}:build_model",
                   "--batch-sizes", "2", "--threads", "1", "-o", str(out), *FAST, "--loss", "cross_entropy")
    assert r.returncode == 0, r.stderr
    p = load_and_check_profile(out, [2])
    assert [l["name"] for l in p["layers"]][-2:] == ["head", "loss"]
    loss = p["layers"][-1]
    assert loss["spec"]["function"] == "the model file's loss_fn"
    assert loss["activation_bytes"] == [2 * 64 * 1024 * 4 + 2 * 64 * 8 + 4]
    assert loss["output_bytes"] == [4]
