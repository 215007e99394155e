"""Measures one layer: forward and backward time, bytes saved for backward, output bytes.

Invariant: timings are medians over `repeats` timed runs after `warmup` untimed ones, each
run on fresh copies of the layer's inputs (so in-place layers never corrupt them); the
activation bytes come from one separate, untimed forward under saved_tensors_hooks, so the
hooks never slow the timed runs. The split backward (I, W) is timed and its bytes counted
by calling torch.distributed.pipelining's own stage_backward_input / stage_backward_weight
on the layer (torch_split_backward), so the profile's I and W are the work torch runs.

    timer = make_timer(torch.device("cpu"))
    m, out = measure_layer(run, make_args, params, timer, warmup=1, repeats=3, excluded=set())
"""

import contextlib
import statistics
import time
import warnings
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
    # Split backward (zero-bubble schedules): the input pass I and the weight pass W as torch
    # 2.13's stages run them on this layer (torch_split_backward); None when the layer has
    # no output that needs grad.
    backward_input_ms: Optional[float] = None
    backward_weight_ms: Optional[float] = None
    # The part of activation_bytes that W reads after I: the saved tensors torch's W unpacks
    # (SavedTensorMeter.reads); None when the layer has no output that needs grad.
    weight_grad_bytes: Optional[int] = None
    # The gradients torch's I keeps for W (its param groups' "grads": for a Linear its output
    # gradient, for a block also the gradients at its inner weight ops), distinct storages;
    # None when the layer has no output that needs grad.
    held_for_weight_bytes: Optional[int] = None
    # Of activation_bytes, the storages that are the layer's own inputs and outputs: a chain's
    # layer l+1 that saves its input saves the very tensor layer l may have saved as its
    # output (a ReLU's result is the next Linear's input), which one forward keeps once.
    saved_input_bytes: int = 0
    saved_output_bytes: int = 0
    # min(saved_output_bytes of this layer, saved_input_bytes of the next), set by the
    # profiler on a chain (profiler.shared_with_next); None elsewhere.
    shared_with_next_bytes: Optional[int] = None


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

    reads(fn) then says which of those storages a backward pass run by fn unpacks (the
    unpack hook records them): measure_layer runs torch's W under it after torch's I, so
    weight_grad_bytes is what torch's W reads of the stash, not a guess from the graph's
    shape (a Linear's W reads its input x; a LayerNorm's x, mean and rstd; a ReLU's nothing).
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

    def bytes_of(self, tensors) -> int:
        """The bytes of the counted storages behind `tensors` (each storage once)."""
        ptrs = set()
        for t in tensors:
            try:
                ptrs.add(storage_of(t)[0])
            except Exception:  # no plain storage: not one of the counted ones
                pass
        return sum(self.seen_[p] for p in ptrs if p in self.seen_)

    def reads(self, fn: Callable[[], object]) -> int:
        """Runs fn(); returns the bytes of the counted storages it unpacked (<= bytes)."""
        self.recording_ = set()
        try:
            fn()
            used = self.recording_
        finally:
            self.recording_ = None
        return sum(self.seen_[ptr] for ptr in used if ptr in self.seen_)


class TorchSplitBackward:
    """One layer's split backward exactly as torch 2.13's PipelineStage runs it: I is
    stage_backward_input(outputs, output grads, inputs, parameters), which walks the graph in
    Python (construct_reverse_graph, get_param_groups), computes the input gradients with the
    graph kept and returns param groups holding the gradients at the nodes next to the
    weights; W is stage_backward_weight(parameters, param groups), which starts from those
    gradients instead of the outputs (stage.py backward_maybe_with_nosync). torch's own
    functions are called, not copied.

    Two kinds of layer get what torch does there, not a split:
    - inputs that need no grad (the model's first layer): only stage 0 has them, and there
      torch's I does nothing and its W runs stage_backward, the whole backward
      (stage.py backward_one_chunk: `if not self.is_first`; backward_weight_one_chunk:
      `stage_index != 0` else "full"), since stage_backward_input would find no param group
      and W would compute no weight gradient. So `input_pass` is None (I = 0 ms) and
      `weight_pass` is stage_backward.
    - no parameter that needs grad (ReLU, add, the loss): I returns no param group and
      torch's W runs no autograd at all, so `weight_pass` is None (W = 0 ms): timing the
      empty Python call would charge each such layer a call overhead that a stage pays once
      for all its layers (the runtime file's op_us.W).
    torch's I detaches its outputs in place, which a view refuses; a view output is handed
    over as a clone (its backward passes the gradient through).

        split = TorchSplitBackward(outputs, grads, inputs, params)
        groups = split.input_pass()           # when not None
        split.weight_pass(groups)             # when not None
    """

    def __init__(self, outputs: List[torch.Tensor], grads: List[torch.Tensor],
                 inputs: List[torch.Tensor], params: List[torch.nn.Parameter]):
        from torch.distributed.pipelining import _backward  # torch's own split backward
        self.backward_ = _backward
        self.outputs_ = [t.clone() if t._is_view() else t for t in outputs]
        self.grads_ = grads
        self.inputs_ = [t for t in inputs if all(t is not p for p in params)]  # a get_attr parameter is no stage input
        self.params_ = params
        needs_input_grad = any(t.requires_grad for t in self.inputs_)
        trainable = any(p.requires_grad for p in params)
        self.input_pass = self._input_pass if needs_input_grad else None
        if not needs_input_grad:
            self.weight_pass = self._whole_backward
        else:
            self.weight_pass = self._weight_pass if trainable else None

    def _input_pass(self):
        _, groups = self.backward_.stage_backward_input(
            self.outputs_, self.grads_, [t for t in self.inputs_ if t.requires_grad], iter(self.params_))
        return groups

    def _weight_pass(self, groups):
        self.backward_.stage_backward_weight(iter(self.params_), groups)

    def _whole_backward(self, _groups=None):
        self.backward_.stage_backward(self.outputs_, self.grads_, self.inputs_)


@contextlib.contextmanager
def quiet_non_leaf_grad():
    """Silences torch's warning about .grad on a non-leaf, which torch's I would print once
    per profile: torch's I reads and sets .grad on the inputs, and the profile's inputs are
    non-leaf clones (so in-place layers may write to them). Entered around a whole
    measurement loop, outside the timed calls."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The .grad attribute of a Tensor that is not a leaf")
        yield


def held_for_weight_bytes(groups) -> int:
    """Distinct storages of the gradients torch's I left in its param groups for W."""
    seen = {}
    for group in groups or []:
        for grads in group.get("grads") or []:
            for g in grads:
                if isinstance(g, torch.Tensor):
                    ptr, nbytes = storage_of(g)
                    seen[ptr] = nbytes
    return sum(seen.values())


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
    saved_input_bytes = meter.bytes_of(tensors_in((args, kwargs)))
    saved_output_bytes = meter.bytes_of(outputs)
    grads = [torch.ones_like(t) for t in outputs if t.requires_grad]
    reference = torch.fx.node.map_aggregate(
        out, lambda v: v.detach() if isinstance(v, torch.Tensor) else v)
    weight_grad_bytes = held = None
    if grads:
        split = TorchSplitBackward([t for t in outputs if t.requires_grad], grads,
                                   list(tensors_in((args, kwargs))), params)
        with quiet_non_leaf_grad():
            groups = split.input_pass() if split.input_pass is not None else []
        held = held_for_weight_bytes(groups)
        weight_grad_bytes = meter.reads(lambda: split.weight_pass(groups)) if split.weight_pass is not None else 0
        del split, groups
    for p in params:
        p.grad = None
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
    split = _split_backward_ms(run, make_args, params, timer, warmup, repeats) if grads else (None, None)
    return LayerMeasurement(forward_ms=statistics.median(forward_ms),
                            backward_ms=statistics.median(backward_ms),
                            activation_bytes=meter.bytes,
                            output_bytes=output_bytes,
                            backward_input_ms=split[0], backward_weight_ms=split[1],
                            weight_grad_bytes=weight_grad_bytes,
                            held_for_weight_bytes=held, saved_input_bytes=saved_input_bytes,
                            saved_output_bytes=saved_output_bytes), reference


def _split_backward_ms(run, make_args, params, timer, warmup: int, repeats: int):
    """Medians of (I, W) as torch runs them (TorchSplitBackward); a pass torch does not run
    on this layer is 0 ms."""
    i_ms, w_ms = [], []
    with quiet_non_leaf_grad():
        for i in range(warmup + repeats):
            for p in params:
                p.grad = None
            args, kwargs = make_args()
            outs = [t for t in tensors_in(run(args, kwargs)) if t.requires_grad]
            split = TorchSplitBackward(outs, [torch.ones_like(t) for t in outs],
                                       list(tensors_in((args, kwargs))), params)
            input_pass = split.input_pass or (lambda: [])
            a, b = timer.run(input_pass, split.weight_pass)
            if i >= warmup:
                i_ms.append(a if split.input_pass is not None else 0.0)
                w_ms.append(b)
    for p in params:
        p.grad = None
    return statistics.median(i_ms), statistics.median(w_ms)
