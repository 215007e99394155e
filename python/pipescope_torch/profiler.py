"""Profiles a whole model: walks its LayerGraph once per batch size, measuring each layer.

Invariant: every layer is measured in isolation on the values the real forward pass gives
it (inputs from other layers arrive as tensors that require grad, as they do inside a
pipeline stage; the model input does not), and the returned profile has, for every layer,
exactly one value per batch size in each per-batch array. With `profile --loss` the last
layer, LOSS_LAYER (spec {"type": "loss"}), is the model's loss measured the same way on the
model's real output (which requires grad, as the last stage's output does) and its target.

    profile = profile_model(model, (3, 32, 32), [1, 2, 4], MeasureOptions(device="cpu"))
"""

import os
import statistics
import time
from dataclasses import dataclass
from typing import Dict, List, Sequence

import torch
import torch.fx

from pipescope_torch.errors import BridgeError, one_line
from pipescope_torch.graph import LAYER_OPS, LayerGraph, build_layer_graph, fetch_attr, is_layer
from pipescope_torch.measure import MeasureOptions, make_timer, measure_layer, storage_of
from pipescope_torch.profile_json import build_profile
from pipescope_torch.torch_model import LOSS_LAYER, LOSSES
from pipescope_torch.workspace import NOT_MEASURED_NOTE, make_memory_meter, measure_workspace


@dataclass
class LossLayer:
    """The profile's loss layer: no parameters, a spec that tells it from a module."""
    name: str
    spec: dict
    parameter_bytes: int = 0


def device_description(device: torch.device):
    """(name, memory_bytes) of the device the profile was measured on."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        return props.name, int(props.total_memory)
    name = "cpu"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return f"{name} ({torch.get_num_threads()} threads)", int(memory)


def _last_uses(graph: torch.fx.Graph) -> Dict[torch.fx.Node, int]:
    last = {}
    for i, node in enumerate(graph.nodes):
        for src in node.all_input_nodes:
            last[src] = i
    return last


def _fresh(value, needs_grad: bool):
    """A private copy of a layer input. A copy that needs grad is a non-leaf (clone of a
    leaf), so layers that work in place (ReLU(inplace=True)) may write to it."""
    def one(v):
        if not isinstance(v, torch.Tensor):
            return v
        copy = v.detach().clone()
        if needs_grad and copy.is_floating_point():
            return copy.requires_grad_(True).clone()
        return copy
    return torch.fx.node.map_aggregate(value, one)


def _runner(root: torch.nn.Module, node: torch.fx.Node):
    if node.op == "call_module":
        module = root.get_submodule(node.target)
        return lambda args, kwargs: module(*args, **kwargs)
    if node.op == "call_function":
        return lambda args, kwargs: node.target(*args, **kwargs)
    return lambda args, kwargs: getattr(args[0], node.target)(*args[1:], **kwargs)


def _layer_params(root: torch.nn.Module, node: torch.fx.Node) -> List[torch.nn.Parameter]:
    if node.op == "call_module":
        return list(root.get_submodule(node.target).parameters())
    values = [fetch_attr(root, n.target) for n in node.all_input_nodes if n.op == "get_attr"]
    return [v for v in values if isinstance(v, torch.nn.Parameter)]


def _placeholder_value(node: torch.fx.Node, x: torch.Tensor, first: bool, model_name: str):
    if first:
        return x
    if node.args:  # an optional forward argument: fx recorded its default
        return node.args[0]
    raise BridgeError(f"module {model_name} takes more than one input (argument "
                      f"'{node.target}'); only single-input models are supported")


def _measure_batch(lg: LayerGraph, x: torch.Tensor, options: MeasureOptions,
                   excluded, timer, meter, model_name: str, report) -> list:
    """One pass over the graph at one batch size; returns a measurement per layer (with
    its workspace when `meter` is a CUDA memory meter) and the model's output."""
    env, results, placeholders, output = {}, [], 0, None
    last = _last_uses(lg.graph)
    layer_of = {layer.node: layer for layer in lg.layers}
    for i, node in enumerate(lg.graph.nodes):
        if node.op == "placeholder":
            env[node] = _placeholder_value(node, x, placeholders == 0, model_name)
            placeholders += 1
        elif node.op == "get_attr":
            env[node] = fetch_attr(lg.root, node.target)
        elif node.op == "output":
            output = torch.fx.node.map_arg(node.args[0], lambda n: env[n])
        elif node.op in LAYER_OPS and not is_layer(node):  # builtin getattr: a lookup
            args = torch.fx.node.map_arg(node.args, lambda n: env[n])
            env[node] = node.target(*args)
        elif node.op in LAYER_OPS:
            layer = layer_of[node]

            def make_args(node=node):
                fresh = {src: env[src] if src.op == "get_attr"
                         else _fresh(env[src], needs_grad=src.op in LAYER_OPS)
                         for src in node.all_input_nodes}
                args = torch.fx.node.map_arg(node.args, lambda n: fresh[n])
                kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: fresh[n])
                return args, kwargs

            try:
                run, params = _runner(lg.root, node), _layer_params(lg.root, node)
                m, env[node] = measure_layer(run, make_args, params, timer,
                                             options.warmup, options.repeats, excluded)
                if meter is not None:
                    m.workspace = measure_workspace(run, make_args, params, meter, excluded)
            except BridgeError:
                raise
            except Exception as exc:
                shape = list(x.shape)
                raise BridgeError(f"layer '{layer.name}' failed on model input of shape "
                                  f"{shape}: {one_line(exc)}") from exc
            results.append(m)
            report(layer.name, m)
        for src in node.all_input_nodes:
            if last.get(src) == i:
                env.pop(src, None)
    return results, output


def shared_with_next(chain: list) -> None:
    """On a chain (layer l feeds l + 1 alone), the bytes layer l saves of its output that
    layer l + 1 saves again as its input: one forward keeps them once, so a stage holding
    both layers holds them once (pipescope subtracts them inside a stage; docs/formats.md)."""
    for a, b in zip(chain, chain[1:]):
        a.shared_with_next_bytes = min(a.saved_output_bytes, b.saved_input_bytes)


def _measure_loss(entry, output, target, options: MeasureOptions, excluded, timer, meter):
    """The loss layer: entry.loss_fn on a fresh copy of the model's output (requiring grad)
    and the target; its backward is the loss's gradient into the output."""
    def make_args():
        return (_fresh(output, needs_grad=True), target), {}

    def run(args, kwargs):
        return entry.loss_fn(*args)

    try:
        m, _ = measure_layer(run, make_args, [], timer, options.warmup, options.repeats, excluded)
        if meter is not None:
            m.workspace = measure_workspace(run, make_args, [], meter, excluded)
    except Exception as exc:
        raise BridgeError(f"layer '{LOSS_LAYER}' (--loss {entry.loss_name}) failed on the model's output: "
                          f"{one_line(exc)}") from exc
    return m


def _loss_edges(lg: LayerGraph):
    """The profile's edges with the loss layer after the layers that give the model's output."""
    edges = lg.profile_edges()
    if edges is None:
        return None
    out = next(n for n in lg.graph.nodes if n.op == "output")
    index = {layer.node: i for i, layer in enumerate(lg.layers)}
    producers = sorted(index[n] for n in out.all_input_nodes if n in index)
    return list(edges) + [(p, len(lg.layers)) for p in producers]


def optimizer_ms(params: List[torch.nn.Parameter], timer, warmup: int, repeats: int) -> float:
    """Median time of one torch.optim.Adam step over `params` (pipescope's optimizer: Adam
    with two moments per parameter), gradients present; 0 for a layer without parameters.
    The copies leave the model's own parameters untouched."""
    if not params:
        return 0.0
    copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
    for c in copies:
        c.grad = torch.randn_like(c)
    opt = torch.optim.Adam(copies, lr=1e-4)
    times = []
    for i in range(warmup + repeats):
        t, _ = timer.run(lambda: opt.step(), None)
        if i >= warmup:
            times.append(t)
    return statistics.median(times)


def profile_model(model: torch.nn.Module, input_shape: Sequence[int],
                  batch_sizes: Sequence[int], options: MeasureOptions = MeasureOptions(),
                  model_name: str = "model") -> dict:
    """Measures every layer at every batch size; returns the v1 profile as a dict."""
    progress = options.progress or (lambda msg: None)
    loss = options.loss_entry
    device = torch.device(options.device)
    model = model.to(device=device, dtype=torch.float32)
    model.train()
    lg = build_layer_graph(model)
    excluded = {storage_of(t)[0] for m in (model, lg.root)
                for t in list(m.parameters()) + list(m.buffers())}
    timer = make_timer(device)
    meter = make_memory_meter(device)
    progress(f"{model_name}: {len(lg.layers)} layers, "
             f"{len(lg.profile_edges() or [])} edges, device {device}")
    notes = []
    if meter is None:
        notes.append(NOT_MEASURED_NOTE)
        progress(NOT_MEASURED_NOTE)
    per_batch = []
    for b, batch in enumerate(batch_sizes):
        torch.manual_seed(options.seed)
        if options.make_batch is not None:
            x = options.make_batch(batch, options.seed)[0].to(device)
        else:
            x = torch.randn((batch, *input_shape), device=device)
        started = time.perf_counter()

        def report(name, m):
            if options.verbose:
                progress(f"  batch {batch}: {name}: forward {m.forward_ms:.3f} ms, backward "
                         f"{m.backward_ms:.3f} ms, saved {m.activation_bytes} B")

        results, output = _measure_batch(lg, x, options, excluded, timer, meter, type(model).__name__, report)
        if loss is not None:
            target = loss.target(output, batch, options.seed).to(device)
            results.append(_measure_loss(loss, output, target, options, excluded, timer, meter))
            report(LOSS_LAYER, results[-1])
        per_batch.append(results)
        progress(f"batch size {batch} ({b + 1}/{len(batch_sizes)}) done in "
                 f"{time.perf_counter() - started:.2f} s")
    opt_ms = [optimizer_ms(_layer_params(lg.root, layer.node), timer, options.warmup, options.repeats)
               for layer in lg.layers]
    layers, edges = lg.layers, lg.profile_edges()
    if loss is not None:
        edges = _loss_edges(lg)
    if edges is None:
        for results in per_batch:
            shared_with_next(results)
    if loss is not None:
        layers = layers + [LossLayer(LOSS_LAYER, {"type": "loss", "name": loss.loss_name,
                                                  "function": "the model file's loss_fn" if loss.user_loss
                                                  else f"torch.nn.functional.{LOSSES[loss.loss_name].__name__}"})]
        opt_ms = opt_ms + [0.0]
    name, memory = device_description(device)
    return build_profile(model=model_name, device_name=name, memory_bytes=memory,
                         backend=device.type, batch_sizes=list(batch_sizes),
                         layers=layers, per_batch=per_batch, edges=edges,
                         notes=notes, optimizer_ms=opt_ms)
