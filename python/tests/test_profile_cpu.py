"""End-to-end CPU profiles: a Sequential chain and fx graphs with skip connections come out
as valid pipescope v1 profiles whose layer lists, edges and byte counts match closed forms;
the split backward (I, W) is torch's own and computes autograd's gradients."""

import json
import math
import os
import random
import textwrap

import pytest
import torch

from helpers import EXAMPLES, load_and_check_profile, run_module, run_pipescope
from pipescope_torch import MeasureOptions, build_layer_graph, profile_model
from pipescope_torch.cli import main
from pipescope_torch.measure import CpuTimer, TorchSplitBackward, measure_layer, quiet_non_leaf_grad, storage_of
from pipescope_torch.profile_json import write_profile_atomically

FAST = ["--warmup", "1", "--repeats", "2"]

SKIP_MODEL = textwrap.dedent("""
    import torch.nn as nn

    class Skip(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)

        def forward(self, x):
            h = self.act(self.fc1(x))
            return self.fc2(h) + h

    def build_model():
        return Skip()
""")


def test_sequential_mlp_profiles_as_a_chain(tmp_path):
    out = tmp_path / "mlp.json"
    r = run_module("profile", f"{EXAMPLES}/mlp.py:build_model", "--input-shape", "784",
                   "--batch-sizes", "1,2,4", "-o", str(out), *FAST)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "", "progress belongs on stderr"
    assert "wrote" in r.stderr
    p = load_and_check_profile(out, [1, 2, 4])
    # One layer per Sequential child, named as the children are; a chain has no "edges".
    assert [l["name"] for l in p["layers"]] == ["0", "1", "2", "3", "4"]
    assert "edges" not in p
    assert p["model"] == "mlp"
    # parameter_bytes = 4 * (in*out + out) for Linear(in, out), 0 for ReLU.
    assert [l["parameter_bytes"] for l in p["layers"]] == [
        4 * (784 * 512 + 512), 0, 4 * (512 * 512 + 512), 0, 4 * (512 * 10 + 10)]
    # output_bytes = 4 * B * features of each layer's output.
    for layer, width in zip(p["layers"], [512, 512, 512, 512, 10]):
        assert layer["output_bytes"] == [4 * b * width for b in (1, 2, 4)]
    # Written atomically: no temporary file is left beside the output.
    assert os.listdir(tmp_path) == ["mlp.json"]


def test_skip_connection_model_gets_forward_edges(tmp_path):
    model_file = tmp_path / "skip.py"
    model_file.write_text(SKIP_MODEL)
    out = tmp_path / "skip.json"
    assert main(["profile", f"{model_file}:build_model", "--input-shape", "8",
                 "--batch-sizes", "1,3", "-o", str(out), *FAST]) == 0
    p = load_and_check_profile(out, [1, 3])
    # fx nodes fc1, act, fc2, add; `h` (act) feeds both fc2 and the add: edges 1->2 and 1->3.
    assert [l["name"] for l in p["layers"]] == ["fc1", "act", "fc2", "add"]
    assert p["edges"] == [[0, 1], [1, 2], [1, 3], [2, 3]]
    # add saves nothing for backward (its gradient is the identity on both inputs).
    assert p["layers"][3]["activation_bytes"] == [0, 0]
    assert p["layers"][3]["output_bytes"] == [4 * 1 * 8, 4 * 3 * 8]


def test_resnet_example_profile_is_valid_and_accounts_every_parameter_once(tmp_path):
    out = tmp_path / "resnet.json"
    assert main(["profile", f"{EXAMPLES}/resnet_block.py:build_model",
                 "--input-shape", "3,32,32", "--batch-sizes", "1,2", "-o", str(out), *FAST]) == 0
    p = load_and_check_profile(out, [1, 2])
    edges = p["edges"]
    assert any(b - a > 1 for a, b in edges), "the residual adds must give skip edges"
    # Only the first layer reads the model input alone; every other layer has a producer.
    targets = {b for _, b in edges}
    assert [i for i in range(len(p["layers"])) if i not in targets] == [0]
    # Each parameter belongs to exactly one layer, so the layer sums equal the model's total.
    import importlib.util
    spec = importlib.util.spec_from_file_location("rb", f"{EXAMPLES}/resnet_block.py")
    rb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rb)
    total = sum(q.numel() * 4 for q in rb.build_model().parameters())
    assert sum(l["parameter_bytes"] for l in p["layers"]) == total


def test_profile_model_api_matches_the_layer_graph():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    g = build_layer_graph(model)
    assert [l.name for l in g.layers] == ["0", "1"] and g.profile_edges() is None
    p = profile_model(model, (4,), [2], MeasureOptions(warmup=0, repeats=1), model_name="t")
    # Tanh saves its output [2, 4] fp32 = 32 bytes (its gradient is 1 - tanh^2).
    assert p["layers"][1]["activation_bytes"] == [32]
    assert p["model"] == "t" and len(p["layers"]) == 2


def test_shape_lookups_are_not_layers_but_keep_their_edges():
    class Flat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.fc = torch.nn.Conv2d(1, 2, 1), torch.nn.Linear(18, 2)

        def forward(self, x):
            y = self.conv(x)
            return self.fc(y.view(y.shape[0], -1))

    g = build_layer_graph(Flat())
    # fx nodes: conv, getattr(y, "shape"), getitem(shape, 0), view(y, n), fc. The getattr
    # lookup is skipped; getitem reads conv's output through it, so the edge 0->1 remains.
    assert [l.name for l in g.layers] == ["conv", "getitem", "view", "fc"]
    assert g.profile_edges() == [(0, 1), (0, 2), (1, 2), (2, 3)]
    p = profile_model(Flat(), (1, 3, 3), [2], MeasureOptions(warmup=0, repeats=1))
    assert p["layers"][1]["output_bytes"] == [0]  # an int, not a tensor
    assert p["layers"][2]["output_bytes"] == [4 * 2 * 18]


def test_importable_module_name_loads_like_a_file():
    # python/ is on sys.path (conftest), so the example is importable as examples.mlp.
    from pipescope_torch import load_model
    model = load_model("examples.mlp:build_model")
    assert type(model).__name__ == "Sequential" and len(model) == 5


# --- The split backward as torch 2.13 runs it (measure.TorchSplitBackward) ---

def _fresh_input(x):
    """A non-leaf input that needs grad, as the profiler hands a layer another layer's output."""
    return x.detach().clone().requires_grad_(True).clone()


def _measure(layer, x, needs_grad=True):
    params = list(layer.parameters())
    excluded = {storage_of(p)[0] for p in params}

    def make_args():
        return ((_fresh_input(x) if needs_grad else x.clone(),), {})

    m, _ = measure_layer(lambda args, kwargs: layer(*args, **kwargs), make_args, params,
                         CpuTimer(), warmup=1, repeats=2, excluded=excluded)
    return m


def _split_grads(layer, x, needs_grad=True):
    """(input grad, parameter grads) after torch's I then W on `layer`."""
    for p in layer.parameters():
        p.grad = None
    inp = _fresh_input(x) if needs_grad else x.clone()
    out = layer(inp)
    split = TorchSplitBackward([out], [torch.ones_like(out)], [inp], list(layer.parameters()))
    with quiet_non_leaf_grad():
        groups = split.input_pass() if split.input_pass is not None else []
        if split.weight_pass is not None:
            split.weight_pass(groups)
        return inp.grad, [p.grad.clone() for p in layer.parameters()]


def _plain_grads(layer, x, needs_grad=True):
    """(input grad, parameter grads) of one plain autograd backward on a leaf copy of x."""
    for p in layer.parameters():
        p.grad = None
    inp = x.detach().clone().requires_grad_(needs_grad)
    out = layer(inp)
    out.backward(torch.ones_like(out))
    return inp.grad, [p.grad.clone() for p in layer.parameters()]


BLOCKS = {
    "linear": lambda: torch.nn.Linear(8, 16),
    "mlp_block": lambda: torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)),
    "layernorm": lambda: torch.nn.LayerNorm(8),
}


@pytest.mark.parametrize("name", sorted(BLOCKS))
@pytest.mark.parametrize("needs_grad", [True, False])
def test_torch_split_backward_computes_autograds_gradients(name, needs_grad):
    # The profile times torch's I and W; they must compute what one plain backward does
    # (else the profile would time a wrong computation): every input and parameter
    # gradient equal to within 1e-6. needs_grad=False is the model's first layer, where
    # torch's I does nothing and W runs the whole backward.
    torch.manual_seed(1)
    layer, x = BLOCKS[name](), torch.randn(4, 8)
    split_dx, split_dw = _split_grads(layer, x, needs_grad)
    plain_dx, plain_dw = _plain_grads(layer, x, needs_grad)
    if needs_grad:
        assert torch.allclose(split_dx, plain_dx, atol=1e-6, rtol=0)
    else:
        assert split_dx is None and plain_dx is None
    assert len(split_dw) == len(plain_dw) == len(list(layer.parameters())) > 0
    for a, b in zip(split_dw, plain_dw):
        assert torch.allclose(a, b, atol=1e-6, rtol=0)


def test_linear_with_an_input_that_needs_grad_has_both_passes():
    # Linear(8, 16) on x [4, 8] that needs grad: I computes dx, W computes dW and db; both
    # run, so both take time (> 0 ms). W reads x of the stash: 4 B * 4 * 8 = 128 bytes;
    # torch's I keeps one param group whose gradient is the output gradient: 4 * 4 * 16 = 256.
    torch.manual_seed(2)
    m = _measure(torch.nn.Linear(8, 16), torch.randn(4, 8))
    assert m.backward_input_ms > 0 and m.backward_weight_ms > 0
    assert m.weight_grad_bytes == 4 * 4 * 8
    assert m.held_for_weight_bytes == 4 * 4 * 16


def test_a_block_keeps_the_gradient_at_each_weight_op_from_i_to_w():
    # Linear(8, 32) -> GELU -> Linear(32, 8) as one layer, B = 4: torch's I keeps a param
    # group per Linear, holding the gradient at each Linear's output: 4 * 4 * (32 + 8) = 640
    # bytes, more than the output gradient alone (128). W reads x [4, 8] and GELU's output
    # [4, 32] (the second Linear's input), not GELU's saved input: 4 * 4 * (8 + 32) = 640 of
    # the 4 * 4 * (8 + 32 + 32) = 1152 stashed.
    torch.manual_seed(3)
    m = _measure(BLOCKS["mlp_block"](), torch.randn(4, 8))
    assert m.activation_bytes == 1152
    assert m.held_for_weight_bytes == 640
    assert m.weight_grad_bytes == 640


def test_first_layer_input_pass_is_empty_and_weight_pass_is_the_whole_backward():
    # The model input needs no grad: torch's stage 0 runs no I (0 ms, exactly) and its W is
    # stage_backward, the whole backward, which reads the whole stash (x: 4 * 4 * 8 = 128).
    torch.manual_seed(4)
    m = _measure(torch.nn.Linear(8, 16), torch.randn(4, 8), needs_grad=False)
    assert m.backward_input_ms == 0.0 and m.backward_weight_ms > 0
    assert m.weight_grad_bytes == m.activation_bytes == 128
    assert m.held_for_weight_bytes == 0


def test_a_layer_without_parameters_has_a_zero_weight_pass():
    # ReLU: torch's I returns no param group and its W runs no autograd, so W is 0 ms by
    # definition (not a timed empty call: that fixed Python cost is the stage's, once, in
    # the runtime file's op_us.W), reads nothing and is handed nothing.
    torch.manual_seed(5)
    m = _measure(torch.nn.ReLU(), torch.randn(4, 8))
    assert m.backward_input_ms > 0
    assert m.backward_weight_ms == 0.0
    assert m.weight_grad_bytes == 0 and m.held_for_weight_bytes == 0


@pytest.mark.parametrize("seed", range(4))
def test_linear_relu_chain_measures_both_passes_per_layer(seed, tmp_path):
    # Property over random chains Linear+ReLU (depth 1-3, widths 2-16, B in {1, 3}): every
    # layer gets finite I and W; every Linear but the first has I > 0 and W > 0, the first
    # has I = 0 (torch's stage 0); every ReLU W = 0; held_for_weight_bytes of a Linear is its
    # output gradient, 4 * B * out. The profile passes pipescope's own reader.
    rng = random.Random(seed)
    widths = [rng.randint(2, 16) for _ in range(rng.randint(1, 3) + 1)]
    mods = []
    for a, b in zip(widths, widths[1:]):
        mods += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    batches = [1, 3]
    p = profile_model(torch.nn.Sequential(*mods), (widths[0],), batches,
                      MeasureOptions(warmup=0, repeats=1), model_name="chain")
    for i, layer in enumerate(p["layers"]):
        where = f"seed {seed}, widths {widths}, layer {i}"
        i_ms, w_ms = layer["backward_input_ms"], layer["backward_weight_ms"]
        assert all(math.isfinite(v) and v >= 0 for v in i_ms + w_ms), where
        if i % 2 == 1:
            assert w_ms == [0.0, 0.0] and all(v > 0 for v in i_ms), where
            continue
        assert all(v > 0 for v in w_ms), where
        assert (i_ms == [0.0, 0.0]) if i == 0 else all(v > 0 for v in i_ms), where
        out = widths[i // 2 + 1]
        assert layer["held_for_weight_bytes"] == ([0, 0] if i == 0 else [4 * b * out for b in batches]), where
    path = tmp_path / "chain.json"
    write_profile_atomically(str(path), p)
    run_pipescope("validate", path)


def test_a_chain_says_what_a_layer_saves_that_the_next_saves_again(tmp_path):
    # Linear(8,8) -> ReLU -> Linear(8,8) -> Tanh at batch 2: the ReLU saves its result
    # [2, 8] fp32 = 64 B, which the second Linear saves again as its input; the first
    # Linear saves its own input (a fresh tensor) and the second Linear its input, not its
    # output, so only the ReLU shares.
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.Tanh())
    p = profile_model(model, (8,), [2], MeasureOptions(warmup=0, repeats=1), model_name="t")
    layers = p["layers"]
    assert [l.get("shared_with_next_bytes") for l in layers] == [None, [64], None, None]
    assert [l["activation_bytes"] for l in layers] == [[64], [64], [64], [64]]
    # pipescope counts it once inside a stage (one stage: 4 x 64 - 64 = 192 B) and on each
    # side of a cut between the two (stages [0, 2) and [2, 4): 64 + 64 and 64 + 64).
    path = tmp_path / "chain.json"
    write_profile_atomically(str(path), p)
    one = json.loads(run_pipescope("simulate", "--profile", path, "-K", "1", "-M", "1", "--microbatch-size", "2",
                                   "--json"))
    two = json.loads(run_pipescope("simulate", "--profile", path, "-K", "2", "-M", "1", "--microbatch-size", "2",
                                   "--partition", "uniform", "--json"))
    assert [r["peak_activation_bytes"] for r in one["stages"]] == [192]
    assert [r["peak_activation_bytes"] for r in two["stages"]] == [128, 128]


def test_a_graph_profile_shares_nothing(tmp_path):
    # With edges (a skip connection) what a layer shares is not one next layer's: not written.
    model_file = tmp_path / "skip.py"
    model_file.write_text(SKIP_MODEL)
    out = tmp_path / "skip.json"
    assert main(["profile", f"{model_file}:build_model", "--input-shape", "8", "--batch-sizes", "2",
                 "-o", str(out), *FAST]) == 0
    p = load_and_check_profile(out, [2])
    assert "edges" in p
    assert all("shared_with_next_bytes" not in l for l in p["layers"])
