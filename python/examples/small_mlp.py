"""Example model with small ops: a 9-layer MLP (64 wide) whose layers take tens of
microseconds, so that a runtime's own costs (per action, per message, per step) stand out
beside them; `pipescope calibrate` fits those costs on a model like this one
(docs/runtime-costs.md).

    python3 -m pipescope_torch profile examples/small_mlp.py:build_model --input-shape 64 --loss mse -o small.json
"""

import torch.nn as nn


def build_model(width: int = 64) -> nn.Module:
    layers = [nn.Linear(width, width)]
    for _ in range(4):
        layers += [nn.ReLU(), nn.Linear(width, width)]
    return nn.Sequential(*layers)
