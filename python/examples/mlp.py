"""Example model: a 3-layer MLP as an nn.Sequential (profiled as a chain, one layer per child).

    python3 -m pipescope_torch profile examples/mlp.py:build_model --input-shape 784 -o mlp.json
"""

import torch.nn as nn


def build_model(hidden: int = 512) -> nn.Module:
    return nn.Sequential(
        nn.Linear(784, hidden), nn.ReLU(),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, 10),
    )
