"""Measures one layer: forward and backward time, bytes saved for backward, output bytes.

Invariant: timings are medians over `repeats` timed runs after `warmup` untimed ones, each
run on fresh copies of the layer's inputs (so in-place layers never corrupt them); the
activation bytes come from one separate, untimed forward under saved_tensors_hooks, so the
hooks never slow the timed runs.

    timer = make_timer(torch.device("cpu"))
    m, out = measure_layer(run, make_args, params, timer, warmup=1, repeats=3, excluded=set())
"""

import statistics
import time
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Set, Tuple

import torch
import torch.fx


@dataclass
class MeasureOptions:
    device: str = "cpu"
    warmup: int = 2
    repeats: int = 5
    seed: int = 0
    verbose: bool = False  # one progress line per layer and batch size
    # The model file's make_batch(batch_size, seed) -> (input, target), when it has one:
    # the profile then measures on its input (token ids, say) instead of randn(B, *shape).
    make_batch: Optional[Callable] = None
    # `profile --loss`: the model's ModelEntry (pipescope_torch.torch_model), whose loss_fn and
    # target end the profile as one more layer, LOSS_LAYER; None: no loss layer.
    loss_entry: Optional[object] = None
    progress: Optional[Callable[[str], None]] = None


@dataclass
class LayerMeasurement:
    forward_ms: float
    backward_ms: float
    activation_bytes: int
    output_bytes: int
    # workspace_bytes' six values (pipescope_torch.workspace), measured on CUDA only.
    workspace: Optional[dict] = None
    # Split backward (zero-bubble schedules): the input-gradient pass I (autograd.grad with
    # respect to the layer's inputs, graph kept) and then the weight pass W (with respect to
    # its parameters), as PyTorch's stages run backward_one_chunk(full_backward=False) and
    # backward_weight_one_chunk. None when the layer has no output that needs grad.
    backward_input_ms: Optional[float] = None
    backward_weight_ms: Optional[float] = None
    # The part of activation_bytes that W still reads after I (SavedTensorMeter.
    # weight_grad_bytes); None when the layer has no output that needs grad.
    weight_grad_bytes: Optional[int] = None


def tensors_in(value) -> Iterator[torch.Tensor]:
    """Every tensor inside a (possibly nested) tuple / list / dict value."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors_in(v)


def storage_of(t: torch.Tensor) -> Tuple[int, int]:
    """(data_ptr, bytes) of the storage behind `t` (torch 2.x; 1.13 spelled it apart)."""
    if hasattr(t, "untyped_storage"):
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    s = t.storage()
    return s.data_ptr(), s.size() * t.element_size()


class SavedTensorMeter:
    """Sums the distinct storages autograd saves for backward inside its `with` block.

    Rule: a tensor whose storage belongs to a parameter or buffer of the model (an
    `excluded` data_ptr) is not counted: parameters are already in parameter_bytes, and
    buffers such as BatchNorm's running_mean are model state kept once, not per
    micro-batch. Views of a parameter (Linear saves weight.t()) share its storage, so
    they are excluded too. Storages are deduplicated by data_ptr and counted whole.

    weight_grad_bytes(outputs, params) then says which of those storages the weight pass W
    still reads after the input pass I: the saved tensors of the graph nodes that hand a
    gradient to a parameter (directly, or through views that save nothing: Linear's
    addmm/mm behind W.t()), found by walking the graph from the outputs and unpacking
    those nodes' saved tensors (the unpack hook records their storages). That is what
    torch.distributed.pipelining's split backward keeps for backward_weight_one_chunk:
    I runs every node, W only the nodes next to the weights. The output gradients those
    nodes get from I are not saved tensors and not counted (pipescope counts them apart,
    as transients held from I to W).
    """

    def __init__(self, excluded: Set[int]):
        self.excluded_ = excluded
        self.seen_: dict = {}
        self.recording_: Optional[set] = None
        self.hooks_ = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _pack(self, t: torch.Tensor):
        try:
            ptr, nbytes = storage_of(t)
        except Exception:  # sparse, quantized, ...: no plain storage; count the tensor once
            ptr, nbytes = ("tensor", id(t)), t.numel() * t.element_size()
        if ptr not in self.excluded_:
            self.seen_[ptr] = nbytes
        return ptr, t

    def _unpack(self, packed):
        ptr, t = packed
        if self.recording_ is not None:
            self.recording_.add(ptr)
        return t

    def __enter__(self):
        self.hooks_.__enter__()
        return self

    def __exit__(self, *exc):
        return self.hooks_.__exit__(*exc)

    @property
    def bytes(self) -> int:
        return sum(self.seen_.values())

    def weight_grad_bytes(self, outputs: List[torch.Tensor], params: List[torch.nn.Parameter]) -> int:
        """Bytes of the counted storages W reads (see the class comment); <= bytes."""
        trainable = {id(p) for p in params if p.requires_grad}
        reaches: dict = {}

        def saves_tensors(node) -> bool:
            return any(name.startswith("_raw_saved_") for name in dir(node))

        def reaches_parameter(node) -> bool:  # a parameter's accumulator, through nodes that save nothing
            if node is None:
                return False
            key = id(node)
            if key not in reaches:
                reaches[key] = False  # a graph has no cycles; this only guards the walk
                if hasattr(node, "variable"):
                    reaches[key] = id(node.variable) in trainable
                elif not saves_tensors(node):
                    reaches[key] = any(reaches_parameter(n) for n, _ in node.next_functions)
            return reaches[key]

        self.recording_ = set()
        try:
            seen, stack = set(), [t.grad_fn for t in outputs if t.grad_fn is not None]
            while stack:
                node = stack.pop()
                if node is None or id(node) in seen:
                    continue
                seen.add(id(node))
                if saves_tensors(node) and any(reaches_parameter(n) for n, _ in node.next_functions):
                    for name in dir(node):
                        if name.startswith("_saved_"):
                            try:
                                getattr(node, name)  # unpacks: _unpack records the storage
                            except RuntimeError:  # already freed (a graph run without retain_graph)
                                pass
                stack.extend(n for n, _ in node.next_functions if n is not None)
            used = self.recording_
        finally:
            self.recording_ = None
        return sum(self.seen_[ptr] for ptr in used if ptr in self.seen_)


class CpuTimer:
    """Wall time with perf_counter_ns; CPU ops are synchronous, so this is the op time."""

    def run(self, forward, backward) -> Tuple[float, float]:
        t0 = time.perf_counter_ns()
        out = forward()
        t1 = time.perf_counter_ns()
        if backward is not None:
            backward(out)
        t2 = time.perf_counter_ns()
        return (t1 - t0) / 1e6, (t2 - t1) / 1e6 if backward is not None else 0.0


class CudaTimer:
    """CUDA events on the current stream (backward ops run on their forward's stream)."""

    def __init__(self, device: torch.device):
        self.device_ = device

    def run(self, forward, backward) -> Tuple[float, float]:
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize(self.device_)  # input copies finished; GPU idle
        e0.record()
        out = forward()
        e1.record()
        if backward is not None:
            backward(out)
        e2.record()
        e2.synchronize()
        return e0.elapsed_time(e1), e1.elapsed_time(e2) if backward is not None else 0.0


def make_timer(device: torch.device):
    return CudaTimer(device) if device.type == "cuda" else CpuTimer()


def measure_layer(run: Callable[[tuple, dict], object],
                  make_args: Callable[[], Tuple[tuple, dict]],
                  params: List[torch.nn.Parameter],
                  timer, warmup: int, repeats: int,
                  excluded: Set[int]) -> Tuple[LayerMeasurement, object]:
    """Measures `run(*make_args())`; returns the measurement and one output (detached)."""
    args, kwargs = make_args()
    with SavedTensorMeter(excluded) as meter:
        out = run(args, kwargs)
    outputs = list(tensors_in(out))
    output_bytes = sum(t.numel() * t.element_size() for t in outputs)
    grads = [torch.ones_like(t) for t in outputs if t.requires_grad]
    weight_grad_bytes = meter.weight_grad_bytes([t for t in outputs if t.requires_grad], params) if grads else None
    reference = torch.fx.node.map_aggregate(
        out, lambda v: v.detach() if isinstance(v, torch.Tensor) else v)
    del out, outputs, args, kwargs

    def backward(value):
        torch.autograd.backward([t for t in tensors_in(value) if t.requires_grad], grads)

    forward_ms, backward_ms = [], []
    for i in range(warmup + repeats):
        for p in params:
            p.grad = None
        args, kwargs = make_args()
        f, b = timer.run(lambda: run(args, kwargs), backward if grads else None)
        if i >= warmup:
            forward_ms.append(f)
            backward_ms.append(b)
    for p in params:
        p.grad = None
    split = _split_backward_ms(run, make_args, params, grads, timer, warmup, repeats) if grads else (None, None)
    return LayerMeasurement(forward_ms=statistics.median(forward_ms),
                            backward_ms=statistics.median(backward_ms),
                            activation_bytes=meter.bytes,
                            output_bytes=output_bytes,
                            backward_input_ms=split[0], backward_weight_ms=split[1],
                            weight_grad_bytes=weight_grad_bytes), reference


def _split_backward_ms(run, make_args, params, grads, timer, warmup: int, repeats: int):
    """Medians of (I, W): the input-gradient pass, then the weight pass on the kept graph."""
    trainable = [p for p in params if p.requires_grad]
    i_ms, w_ms = [], []
    for i in range(warmup + repeats):
        args, kwargs = make_args()
        inputs = [t for t in list(tensors_in(args)) + list(tensors_in(kwargs)) if t.requires_grad]
        outs = [t for t in tensors_in(run(args, kwargs)) if t.requires_grad]

        def input_pass():
            if inputs:
                torch.autograd.grad(outs, inputs, grads, retain_graph=True, allow_unused=True)
            return outs

        def weight_pass(_):
            if trainable:
                torch.autograd.grad(outs, trainable, grads, allow_unused=True)

        a, b = timer.run(input_pass, weight_pass)
        if i >= warmup:
            i_ms.append(a)
            w_ms.append(b)
    return statistics.median(i_ms), statistics.median(w_ms)
