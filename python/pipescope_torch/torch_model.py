"""The model side of `pipescope_torch run`: the user's model, its batch and loss, and the cut.

Invariant: a model is split only as an nn.Sequential whose children are the profile's layers
(the profiler names them the same way), so stage s is exactly children[first_s:end_s] of the
plan; a model file may define `make_batch(batch_size, seed) -> (input, target)` and
`loss_fn(output, target)` beside its builder, else the input is `randn(B, *input_shape)`, the
target `randn` of the output's shape and the loss the mean squared error.

    entry = ModelEntry.load("examples/mlp.py:build_model", [64])
    modules = stage_modules(entry.build(), setup)   # one nn.Sequential per stage
"""

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import torch

from pipescope_torch.errors import BridgeError
from pipescope_torch.loader import load_callable


@dataclass
class ModelEntry:
    spec: str
    input_shape: List[int]
    factory: Callable
    make_batch: Optional[Callable]
    user_loss: Optional[Callable]

    @staticmethod
    def load(spec: str, input_shape: List[int]) -> "ModelEntry":
        factory, module = load_callable(spec)
        return ModelEntry(spec, list(input_shape), factory, getattr(module, "make_batch", None),
                          getattr(module, "loss_fn", None))

    def build(self) -> torch.nn.Module:
        model = self.factory()
        if not isinstance(model, torch.nn.Module):
            raise BridgeError(f"{self.spec} returned {type(model).__name__}, expected a torch.nn.Module")
        return model

    def batch(self, model: torch.nn.Module, batch_size: int, seed: int):
        """(input, target) of the whole step's batch, the same on every rank."""
        if self.make_batch is not None:
            return self.make_batch(batch_size, seed)
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(batch_size, *self.input_shape, generator=gen)
        with torch.no_grad():
            out_shape = model(x[:1]).shape[1:]
        return x, torch.randn(batch_size, *out_shape, generator=gen)

    def loss_fn(self, output, target):
        if self.user_loss is not None:
            return self.user_loss(output, target)
        return torch.nn.functional.mse_loss(output, target)


def stage_cuts(model: torch.nn.Module, setup) -> List[Tuple[int, int]]:
    """Each stage's children [first, end): the plan's split points, checked against the model."""
    if not isinstance(model, torch.nn.Sequential):
        raise BridgeError(f"{setup.source}: the model is a {type(model).__name__}, not an nn.Sequential: "
                          "pipescope_torch run cuts a Sequential at the plan's split points (wrap the "
                          "model's layers in an nn.Sequential whose children are the profile's layers)")
    children = list(model.named_children())
    names = [n for n, _ in children]
    cuts = [0]
    for i, point in enumerate(setup.split_points):
        if point not in names:
            raise BridgeError(f"{setup.source}: stages[{i + 1}]: split point {point!r} is not a child of the "
                              f"model (its children: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})")
        cuts.append(names.index(point))
    cuts.append(len(children))
    if any(b <= a for a, b in zip(cuts, cuts[1:])):
        raise BridgeError(f"{setup.source}: split points {setup.split_points} do not cut the model's "
                          f"{len(children)} children into {setup.stages} non-empty stages in order")
    if setup.layer_ranges:
        if setup.layer_ranges[-1][1] != len(children):
            raise BridgeError(f"{setup.source}: stages[{setup.stages - 1}].layers: the plan has "
                              f"{setup.layer_ranges[-1][1]} layers, the model {len(children)} children")
        for s, (first, end) in enumerate(setup.layer_ranges):
            if [first, end] != [cuts[s], cuts[s + 1]]:
                raise BridgeError(f"{setup.source}: stages[{s}].layers: [{first}, {end}) but split points "
                                  f"give [{cuts[s]}, {cuts[s + 1]})")
    return list(zip(cuts, cuts[1:]))


def stage_modules(model: torch.nn.Module, setup) -> List[torch.nn.Sequential]:
    """The plan's stages as nn.Sequential pieces of the model's children (names kept)."""
    children = list(model.named_children())
    return [torch.nn.Sequential(OrderedDict(children[a:b])) for a, b in stage_cuts(model, setup)]
