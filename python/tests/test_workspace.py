"""workspace_bytes from the bridge: on CPU nothing is measured and the profile's notes and
stderr say so; on CUDA each value is torch.cuda.max_memory_allocated() minus the bytes
allocated at the op's start. The CUDA path is checked here on CPU, with torch.cuda's
counters replaced by a fake allocator that a probe layer charges by hand, so every
expected number is known exactly."""

import json
import os
import subprocess

import pytest
import torch

import pipescope_torch.profiler as profiler
from helpers import EXAMPLES, load_and_check_profile, run_module
from pipescope_torch import MeasureOptions, profile_model, validate_profile
from pipescope_torch.workspace import (NOT_MEASURED_NOTE, WORKSPACE_KEYS, CudaMemoryMeter,
                                       measure_workspace)
from test_simulate import PIPESCOPE


class FakeAllocator:
    """Stands in for torch.cuda's allocator counters; layers charge it explicitly."""

    def __init__(self):
        self.current, self.peak, self.kept = 0, 0, 0

    def alloc(self, n):
        self.current += n
        self.peak = max(self.peak, self.current)

    def free(self, n):
        self.current -= n

    def memory_allocated(self, device=None):
        return self.current

    def max_memory_allocated(self, device=None):
        return self.peak

    def reset_peak_memory_stats(self, device=None):
        self.peak = self.current

    def synchronize(self, device=None):
        pass


@pytest.fixture
def fake(monkeypatch):
    f = FakeAllocator()
    for name in ("memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
                 "synchronize"):
        monkeypatch.setattr(torch.cuda, name, getattr(f, name))
    return f


class ProbeFn(torch.autograd.Function):
    """y = x * w. Forward takes 1000 bytes of scratch. Backward takes 500; with `keep` its
    first call (the input pass) keeps 64 bytes that the next call (the weight pass) frees
    after taking 700 - as a zero-bubble layer keeps state from I to W."""

    @staticmethod
    def forward(ctx, x, w, fake, keep):
        fake.alloc(1000)
        fake.free(1000)
        ctx.fake, ctx.keep = fake, keep
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        fake = ctx.fake
        if ctx.keep and fake.kept:
            fake.alloc(700)
            fake.free(700 + fake.kept)
            fake.kept = 0
        else:
            fake.alloc(500)
            fake.free(500 - (64 if ctx.keep else 0))
            fake.kept = 64 if ctx.keep else 0
        return dy * w, (dy * x).sum(0), None, None


class Probe(torch.nn.Module):
    def __init__(self, fake, keep=False):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))
        self.fake, self.keep = fake, keep

    def forward(self, x):
        if not torch.is_grad_enabled():  # re-materialisation's first pass: 300 bytes
            self.fake.alloc(300)
            self.fake.free(300)
            return x * self.w
        return ProbeFn.apply(x, self.w, self.fake, self.keep)


def test_cpu_profile_has_no_workspace_and_says_so(tmp_path):
    out = tmp_path / "mlp.json"
    r = run_module("profile", f"{EXAMPLES}/mlp.py:build_model", "--input-shape", "784",
                   "--batch-sizes", "1,2", "-o", str(out), "--warmup", "0", "--repeats", "1")
    assert r.returncode == 0, r.stderr
    p = load_and_check_profile(out, [1, 2])
    assert all("workspace_bytes" not in layer for layer in p["layers"])
    assert p["notes"] == [NOT_MEASURED_NOTE]
    assert "workspace_bytes not measured" in NOT_MEASURED_NOTE and "CUDA only" in NOT_MEASURED_NOTE
    assert NOT_MEASURED_NOTE in r.stderr


def test_cuda_path_takes_max_allocated_minus_the_start(fake):
    probe = Probe(fake, keep=True)
    x = torch.randn(3, 4)

    def make_args():
        return (x.clone().requires_grad_(True).clone(),), {}

    w = measure_workspace(lambda args, kwargs: probe(*args, **kwargs), make_args,
                          list(probe.parameters()), CudaMemoryMeter(torch.device("cpu")),
                          excluded=set())
    # input: the [3, 4] fp32 input, 48 bytes; forward: its scratch, 1000; forward without
    # grad: 300; input pass: 500 above its start; held to the weight pass: the output
    # gradient [3, 4] (48 bytes, the weight pass needs it) + the 64 kept; weight pass:
    # 700 above a start that includes the 64 it then frees.
    assert w == {"input": 48, "forward": 1000, "forward_no_grad": 300, "backward_input": 500,
                 "held_for_weight": 48 + 64, "backward_weight": 700}
    assert fake.current == 0  # everything charged was freed


def test_a_layer_without_parameters_has_no_weight_pass(fake):
    def make_args():
        return (torch.randn(2, 5).requires_grad_(True).clone(),), {}

    w = measure_workspace(lambda args, kwargs: torch.tanh(*args), make_args, [],
                          CudaMemoryMeter(torch.device("cpu")), excluded=set())
    # The fake sees no real tensor: only the input's 40 bytes are counted; nothing is
    # held for a weight pass that does not exist.
    assert w == {"input": 40, "forward": 0, "forward_no_grad": 0, "backward_input": 0,
                 "held_for_weight": 0, "backward_weight": 0}


def test_profile_with_the_cuda_meter_writes_workspace_bytes(fake, monkeypatch, tmp_path):
    monkeypatch.setattr(profiler, "make_memory_meter", lambda device: CudaMemoryMeter(device))
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), Probe(fake))
    p = profile_model(model, (4,), [1, 2], MeasureOptions(warmup=0, repeats=1), model_name="probe")
    assert "notes" not in p
    linear, probe = p["layers"]
    assert list(linear["workspace_bytes"]) == list(WORKSPACE_KEYS)
    # Linear reads the model input (no grad: no input pass); the fake sees none of its
    # tensors, so only its input (4 B x 4 bytes) and the output gradient it holds for the
    # weight pass (4 B x 4 bytes) are non-zero.
    assert linear["workspace_bytes"] == {"input": [16, 32], "forward": [0, 0],
                                         "forward_no_grad": [0, 0], "backward_input": [0, 0],
                                         "backward_weight": [0, 0], "held_for_weight": [16, 32]}
    assert probe["workspace_bytes"] == {"input": [16, 32], "forward": [1000, 1000],
                                        "forward_no_grad": [300, 300],
                                        "backward_input": [500, 500],
                                        "backward_weight": [500, 500],
                                        "held_for_weight": [16, 32]}
    validate_profile(p)
    if not os.access(PIPESCOPE, os.X_OK):
        pytest.skip(f"{PIPESCOPE} not built")
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(p))
    r = subprocess.run([PIPESCOPE, "simulate", "--profile", str(path), "-K", "2", "-M", "2",
                        "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    prediction = json.loads(r.stdout)
    # pipescope reads the field: the prediction counts transients, and its notes no
    # longer say that they are not counted.
    assert not any("transients are not counted" in n for n in prediction["notes"])
    assert all(st["transient_bytes"] > 0 for st in prediction["stages"])


@pytest.mark.parametrize("change, message", [
    (lambda w: w.pop("held_for_weight"), "workspace_bytes: expected the keys"),
    (lambda w: w.update(forward=[1]), "workspace_bytes.forward: expected 2 values, got 1"),
    (lambda w: w.update(input=[-1, 0]), "workspace_bytes.input: negative value"),
])
def test_validate_profile_names_a_bad_workspace_field(change, message):
    workspace = {k: [0, 0] for k in WORKSPACE_KEYS}
    change(workspace)
    p = {"format": "pipescope.profile", "version": 1, "model": "m",
         "device": {"name": "d", "memory_bytes": 1}, "batch_sizes": [1, 2],
         "layers": [{"name": "a", "forward_ms": [0, 0], "backward_ms": [0, 0],
                     "activation_bytes": [0, 0], "output_bytes": [0, 0], "parameter_bytes": 0,
                     "workspace_bytes": workspace}]}
    with pytest.raises(ValueError, match=f"layers\\[0\\].{message}"):
        validate_profile(p)


def test_the_cuda_path_runs_over_a_graph_with_in_place_and_batch_norm_layers(fake, monkeypatch):
    # The residual example (convolutions, BatchNorm, in-place ReLU, adds): every one of
    # its 23 layers gets all six keys at both batch sizes, and the profile validates.
    from pipescope_torch import load_model
    monkeypatch.setattr(profiler, "make_memory_meter", lambda device: CudaMemoryMeter(device))
    p = profile_model(load_model(f"{EXAMPLES}/resnet_block.py:build_model"), (3, 32, 32), [1, 2],
                      MeasureOptions(warmup=0, repeats=1))
    assert len(p["layers"]) == 23
    for layer in p["layers"]:
        assert list(layer["workspace_bytes"]) == list(WORKSPACE_KEYS), layer["name"]
    # stem.0 reads the model input: 3 x 32 x 32 fp32 = 12288 bytes per sample.
    assert p["layers"][0]["workspace_bytes"]["input"] == [12288, 24576]
    validate_profile(p)
