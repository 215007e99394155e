"""pipescope_torch: measure a PyTorch model layer by layer into a pipescope v1 profile.

Invariant: the profile it writes has one layer per graph node (a Sequential child, or a
torch.fx call_module / call_function / call_method node), layers in topological order,
every per-layer array holding one entry per batch size.

    from pipescope_torch import load_model, profile_model
    profile = profile_model(load_model("examples/mlp.py:build_model"), (784,), [1, 2, 4])
"""

from pipescope_torch.errors import BridgeError
from pipescope_torch.graph import LayerGraph, build_layer_graph
from pipescope_torch.loader import load_model
from pipescope_torch.measure import MeasureOptions
from pipescope_torch.profile_json import validate_profile, write_profile_atomically
from pipescope_torch.profiler import profile_model

__all__ = [
    "BridgeError",
    "LayerGraph",
    "MeasureOptions",
    "build_layer_graph",
    "load_model",
    "profile_model",
    "validate_profile",
    "write_profile_atomically",
]
