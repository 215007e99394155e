"""End-to-end CPU profiles: a Sequential chain and fx graphs with skip connections come out
as valid pipescope v1 profiles whose layer lists, edges and byte counts match closed forms."""

import os
import textwrap

import torch

from helpers import EXAMPLES, load_and_check_profile, run_module
from pipescope_torch import MeasureOptions, build_layer_graph, profile_model
from pipescope_torch.cli import main

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
