#!/usr/bin/env python3
"""The CPU peer for pipescope's executor: the same model step in PyTorch (torch
2.13 in the project's .venv, one thread). Builds the layers of a pipescope.model file (pre-LayerNorm
attention and MLP blocks, LayerNorm, linear, tanh-GELU), runs M micro-batches of
forward + backward with gradient accumulation (MSE loss, as pipescope run does), and
prints the median step time after one warm-up step.

    .venv/bin/python benchmarks/torch_peer.py --model models/gpt-tiny.json -M 8 --microbatch-size 4
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.heads, self.seq = heads, seq
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):  # x: [b * seq, hidden]
        b = x.shape[0] // self.seq
        h = x.shape[1]
        d = h // self.heads
        q, k, v = self.qkv(self.ln(x)).view(b, self.seq, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(d)
        p = torch.softmax(s.masked_fill(~self.mask, float("-inf")), dim=-1)
        o = (p @ v).permute(0, 2, 1, 3).reshape(b * self.seq, h)
        return x + self.proj(o)


class Mlp(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x)), approximate="tanh"))


class Gelu(nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


def build(spec):
    t = spec["type"]
    if t == "attention_block":
        return Attention(spec["hidden"], spec["heads"], spec.get("sequence", 1))
    if t == "mlp_block":
        return Mlp(spec["hidden"], spec["ffn"])
    if t == "layernorm":
        return nn.LayerNorm(spec["features"])
    if t == "linear":
        return nn.Linear(spec["in"], spec["out"])
    if t == "gelu":
        return Gelu()
    raise SystemExit(f"torch_peer: unknown layer type {t}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="models/gpt-tiny.json")
    ap.add_argument("-M", "--microbatches", type=int, default=8)
    ap.add_argument("--microbatch-size", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model_file = json.load(open(a.model))
    specs = [layer["spec"] for layer in model_file["layers"]]
    model = nn.Sequential(*[build(s) for s in specs])
    seq = specs[0].get("sequence", 1)
    first = specs[0]
    fin = first.get("hidden", first.get("in", first.get("features")))
    out = model(torch.zeros(seq, fin)).shape[1]
    b, M = a.microbatch_size, a.microbatches
    xs = [torch.rand(b * seq, fin) * 2 - 1 for _ in range(M)]
    ts = [torch.rand(b * seq, out) * 2 - 1 for _ in range(M)]
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        for x, t in zip(xs, ts):
            loss = F.mse_loss(model(x), t, reduction="sum") / (M * b * seq * out)
            loss.backward()
        times.append(time.perf_counter() - t0)
        model.zero_grad(set_to_none=False)
    step = statistics.median(times[1:] if len(times) > 1 else times)
    print(f"pytorch {torch.__version__} (1 thread): {model_file['name']}, M = {M}, micro-batch {b}: "
          f"step {step * 1e3:.2f} ms, {M * b / step:.2f} samples/s")


if __name__ == "__main__":
    main()
