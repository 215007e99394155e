"""The model side of `pipescope_torch run`: the user's model, its batch and loss, and the cut.

Invariant: a model is split only as an nn.Sequential whose children are the profile's layers
(the profiler names them the same way), so stage s is exactly children[first_s:end_s] of the
plan; a model file may define `make_batch(batch_size, seed) -> (input, target)` and
`loss_fn(output, target)` beside its builder, else the input is `randn(B, *input_shape)` and
the loss the one LOSSES names (the mean squared error unless a profile's loss layer says
otherwise), with a target of its kind. The model's loss is this one fact: `profile --loss`
measures it as the layer named LOSS_LAYER, and `run` gives it to the schedule as `loss_fn`.

    entry = ModelEntry.load("examples/mlp.py:build_model", [64])
    modules = stage_modules(entry.build(), setup)   # one nn.Sequential per stage
"""

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import torch

from pipescope_torch.errors import BridgeError
from pipescope_torch.loader import load_callable


# The built-in losses by the name `profile --loss` takes, each with the target it needs for
# an output: class indices over dim 1 for the cross-entropy, a tensor like the output for MSE.
LOSSES = {
    "cross_entropy": torch.nn.functional.cross_entropy,
    "mse": torch.nn.functional.mse_loss,
}
DEFAULT_LOSS = "mse"
LOSS_LAYER = "loss"  # the profile layer that is the loss (spec {"type": "loss"})


def loss_target(name: str, output_shape, generator) -> torch.Tensor:
    """A random target of the kind the loss `name` takes for an output of `output_shape`."""
    shape = list(output_shape)
    if name == "cross_entropy":
        return torch.randint(0, shape[1], [shape[0]] + shape[2:], generator=generator)
    return torch.randn(*shape, generator=generator)


@dataclass
class ModelEntry:
    spec: str
    input_shape: List[int]
    factory: Callable
    make_batch: Optional[Callable]
    user_loss: Optional[Callable]
    loss_name: str = DEFAULT_LOSS

    @staticmethod
    def load(spec: str, input_shape: List[int], loss_name: Optional[str] = None) -> "ModelEntry":
        factory, module = load_callable(spec)
        if loss_name is not None and loss_name not in LOSSES:
            raise BridgeError(f"--loss {loss_name!r} must be one of {', '.join(LOSSES)}")
        return ModelEntry(spec, list(input_shape), factory, getattr(module, "make_batch", None),
                          getattr(module, "loss_fn", None), loss_name or DEFAULT_LOSS)

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
        return x, loss_target(self.loss_name, [batch_size, *out_shape], gen)

    def target(self, output: torch.Tensor, batch_size: int, seed: int) -> torch.Tensor:
        """The target of a batch whose model output is `output` (the profile's loss layer)."""
        if self.make_batch is not None:
            return self.make_batch(batch_size, seed)[1]
        return loss_target(self.loss_name, output.shape, torch.Generator().manual_seed(seed))

    def loss_fn(self, output, target):
        if self.user_loss is not None:
            return self.user_loss(output, target)
        return LOSSES[self.loss_name](output, target)


def stage_cuts(model: torch.nn.Module, setup) -> List[Tuple[int, int]]:
    """Each stage's children [first, end): the plan's split points, checked against the model."""
    if not isinstance(model, torch.nn.Sequential):
        raise BridgeError(f"{setup.source}: the model is a {type(model).__name__}, not an nn.Sequential: "
                          "pipescope_torch run cuts a Sequential at the plan's split points (wrap the "
                          "model's layers in an nn.Sequential whose children are the profile's layers)")
    children = list(model.named_children())
    names = [n for n, _ in children]
    _refuse_a_loss_only_stage(setup, names)
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
        loss = 1 if setup.loss_layer is not None else 0  # the loss layer ends the last stage
        if setup.layer_ranges[-1][1] != len(children) + loss:
            with_loss = " and the loss layer" if loss else ""
            raise BridgeError(f"{setup.source}: stages[{setup.stages - 1}].layers: the plan has "
                              f"{setup.layer_ranges[-1][1]} layers, the model {len(children)} children{with_loss}")
        for s, (first, end) in enumerate(setup.layer_ranges):
            if [first, end] != [cuts[s], cuts[s + 1] + (loss if s == setup.stages - 1 else 0)]:
                raise BridgeError(f"{setup.source}: stages[{s}].layers: [{first}, {end}) but split points "
                                  f"give [{cuts[s]}, {cuts[s + 1]})")
    return list(zip(cuts, cuts[1:]))


def _refuse_a_loss_only_stage(setup, names: List[str]) -> None:
    """The loss layer is the schedule's loss_fn on the last stage, not a module: a last stage
    holding only it would have no module to run (PyTorch's stage needs one)."""
    last = setup.stages - 1
    only_loss = setup.split_points and setup.split_points[-1] == LOSS_LAYER and LOSS_LAYER not in names
    if setup.loss_layer is not None and setup.layer_ranges:
        only_loss = only_loss or setup.layer_ranges[-1][0] >= setup.loss_layer
    if only_loss:
        raise BridgeError(f"{setup.source}: stages[{last}].layers: the last stage holds only the loss layer "
                          f"'{LOSS_LAYER}', which is the schedule's loss_fn after the last stage's modules, not a "
                          "module; a stage needs at least one of the model's layers (move the loss into "
                          f"stage {last - 1}'s range, or plan one stage fewer)")


def stage_ranges(model: torch.nn.Module, setup) -> List[Tuple[int, int]]:
    """Each stage's [first, end) in the plan's layers: stage_cuts, with the loss layer (when
    the plan's profile has one) at the end of the last stage."""
    cuts = stage_cuts(model, setup)
    if setup.loss_layer is not None:
        cuts[-1] = (cuts[-1][0], cuts[-1][1] + 1)
    return cuts


def stage_modules(model: torch.nn.Module, setup) -> List[torch.nn.Sequential]:
    """The plan's stages as nn.Sequential pieces of the model's children (names kept)."""
    children = list(model.named_children())
    return [torch.nn.Sequential(OrderedDict(children[a:b])) for a, b in stage_cuts(model, setup)]
