"""Measured activation bytes equal the tensors torch keeps for backward (closed forms).

What torch saves (checked on torch 2.13.0 CPU, and before on 1.13.1: the same ops save the same):
- Linear(in, out) = addmm(bias, x, W.t()): saves x [B, in] to compute dW, and W.t() (a view
  of the parameter, excluded by the rule) only when x requires grad, to compute dx.
- ReLU saves its output [B, out] (the mask comes from result > 0).
- BatchNorm2d in training saves its input, weight, running_mean, running_var and two new
  per-channel tensors save_mean, save_invstd; weight and running stats are parameters /
  buffers, so B*C*H*W*4 + 2*C*4 bytes remain.
Every number below is 4 bytes per fp32 element times the element count.
"""

import pytest
import torch

from pipescope_torch import MeasureOptions, profile_model
from pipescope_torch.measure import SavedTensorMeter

BATCHES = [1, 3, 5]


def test_linear_relu_stack_keeps_exactly_inputs_and_relu_outputs():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4), torch.nn.ReLU())
    p = profile_model(model, (8,), BATCHES, MeasureOptions(warmup=0, repeats=1))
    got = [l["activation_bytes"] for l in p["layers"]]
    expected = [
        [4 * b * 8 for b in BATCHES],   # Linear(8,16): its input [B,8] (model input, no grad)
        [4 * b * 16 for b in BATCHES],  # ReLU: its output [B,16]
        [4 * b * 16 for b in BATCHES],  # Linear(16,4): its input [B,16]; W.t() excluded
        [4 * b * 4 for b in BATCHES],   # ReLU: its output [B,4]
    ]
    assert got == expected
    assert [l["output_bytes"] for l in p["layers"]] == [
        [4 * b * n for b in BATCHES] for n in (16, 16, 4, 4)]
    assert [l["parameter_bytes"] for l in p["layers"]] == [4 * (8 * 16 + 16), 0,
                                                           4 * (16 * 4 + 4), 0]


def test_without_the_parameter_rule_linear_also_keeps_the_weight():
    # The exclusion rule is what removes W: with nothing excluded, a Linear(16,4) whose
    # input requires grad keeps x [3,16] (192 B) plus W's whole storage [4,16] (256 B).
    fc = torch.nn.Linear(16, 4)
    x = torch.randn(3, 16, requires_grad=True)
    with SavedTensorMeter(excluded=set()) as meter:
        fc(x)
    assert meter.bytes == 4 * 3 * 16 + 4 * 4 * 16


def test_a_tensor_saved_twice_is_counted_once():
    # x * x saves x as both operands: one storage, 4 * 6 * 7 = 168 bytes.
    x = torch.randn(6, 7, requires_grad=True)
    with SavedTensorMeter(excluded=set()) as meter:
        x * x
    assert meter.bytes == 168


@pytest.mark.parametrize("batch", [2, 4])
def test_batchnorm_keeps_input_and_two_per_channel_statistics(batch):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 6, 1), torch.nn.BatchNorm2d(6))
    p = profile_model(model, (3, 5, 5), [batch], MeasureOptions(warmup=0, repeats=1))
    # input [B,6,5,5] + save_mean [6] + save_invstd [6]; weight and running stats excluded.
    assert p["layers"][1]["activation_bytes"] == [4 * batch * 6 * 5 * 5 + 2 * 4 * 6]


@pytest.mark.parametrize("bias", [True, False])
def test_weight_grad_bytes_of_linear_is_its_input(bias):
    # W of Linear(in, out) computes dW = dY^T x: of the stash it reads only x [B, in]
    # (4 B in bytes); dY is the output gradient I hands over (a transient, not a saved
    # tensor). ReLU and GELU give no parameter a gradient: W reads nothing of their stash.
    # A LayerNorm's W reads everything it saved (x, mean, rstd: dgamma = dy * x_hat).
    model = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=bias), torch.nn.ReLU(), torch.nn.LayerNorm(16),
                                torch.nn.Linear(16, 4, bias=bias), torch.nn.GELU())
    p = profile_model(model, (8,), BATCHES, MeasureOptions(warmup=0, repeats=1))
    got = [l["weight_grad_bytes"] for l in p["layers"]]
    assert got == [
        [4 * b * 8 for b in BATCHES],             # Linear(8, 16): x [B, 8]
        [0 for b in BATCHES],                     # ReLU
        [4 * b * 16 + 2 * 4 * b for b in BATCHES],  # LayerNorm(16): x [B, 16], mean and rstd [B, 1]
        [4 * b * 16 for b in BATCHES],            # Linear(16, 4): x [B, 16]
        [0 for b in BATCHES],                     # GELU
    ]
    for layer in p["layers"]:
        assert all(w <= a for w, a in zip(layer["weight_grad_bytes"], layer["activation_bytes"])), layer["name"]
