"""A layer's within-op workspace on CUDA: the allocator's peak above each op's start.

Invariant: every number is `torch.cuda.max_memory_allocated() - torch.cuda.memory_allocated()`
around one op (the peak statistics reset at its start), taken with the tensors a pipeline
stage holds around that op alive (the layer's input for forward; the stash, the output
and its gradient for backward), and written under the six keys of the C++ profiler's
`workspace_bytes` (core/profile.h, docs/memory.md), so core/op_rules.h adds them up the
same way. On CPU the PyTorch allocator keeps no such statistics: nothing is measured.

    meter = make_memory_meter(torch.device("cuda"))     # None on CPU
    bytes_by_key = measure_workspace(run, make_args, params, meter, excluded)
"""

from typing import Callable, Dict, List, Optional, Set, Tuple

import torch

from pipescope_torch.measure import storage_of, tensors_in
from pipescope_torch.profile_json import WORKSPACE_KEYS

NOT_MEASURED_NOTE = ("workspace_bytes not measured: the bridge measures a layer's within-op "
                     "workspace on CUDA only (torch.cuda.max_memory_allocated around each op); "
                     "predictions from this profile count weights, optimizer state and the "
                     "stash, not transients")


class CudaMemoryMeter:
    """The CUDA caching allocator's counters on one device (allocated bytes, not reserved)."""

    def __init__(self, device: torch.device):
        self.device_ = device

    def allocated(self) -> int:
        torch.cuda.synchronize(self.device_)
        return int(torch.cuda.memory_allocated(self.device_))

    def peak_above(self, fn: Callable[[], object]) -> Tuple[object, int]:
        """Runs fn(); returns its result and the most bytes allocated above its start."""
        start = self.allocated()
        torch.cuda.reset_peak_memory_stats(self.device_)
        result = fn()
        torch.cuda.synchronize(self.device_)
        return result, int(torch.cuda.max_memory_allocated(self.device_)) - start


def make_memory_meter(device: torch.device) -> Optional[CudaMemoryMeter]:
    return CudaMemoryMeter(device) if device.type == "cuda" else None


def _bytes_of(tensors: List[torch.Tensor], excluded: Set[int]) -> int:
    """Distinct storages of `tensors`, parameters' and buffers' (`excluded`) left out."""
    seen = {}
    for t in tensors:
        ptr, nbytes = storage_of(t)
        if ptr not in excluded:
            seen[ptr] = nbytes
    return sum(seen.values())


def measure_workspace(run: Callable[[tuple, dict], object],
                      make_args: Callable[[], Tuple[tuple, dict]],
                      params: List[torch.nn.Parameter], meter: CudaMemoryMeter,
                      excluded: Set[int]) -> Dict[str, int]:
    """The six workspace_bytes values of one layer at one batch size.

    Backward is split as zero-bubble schedules split it: backward_input is
    torch.autograd.grad of the outputs with respect to the layer's inputs (the graph kept),
    backward_weight the same with respect to its parameters; the output gradient is held
    from the one to the other, so held_for_weight counts it (and whatever else the input
    pass leaves allocated). A layer without parameters has no weight pass and holds nothing
    for it. Parameter gradients come back as new tensors, so they count in backward_weight.
    """
    w = dict.fromkeys(WORKSPACE_KEYS, 0)
    args, kwargs = make_args()
    inputs = [t for t in tensors_in((args, kwargs)) if storage_of(t)[0] not in excluded]
    w["input"] = _bytes_of(inputs, excluded)
    out, w["forward"] = meter.peak_above(lambda: run(args, kwargs))
    fresh_args, fresh_kwargs = make_args()
    with torch.no_grad():
        _, w["forward_no_grad"] = meter.peak_above(lambda: run(fresh_args, fresh_kwargs))
    del fresh_args, fresh_kwargs
    outputs = [t for t in tensors_in(out) if t.requires_grad]
    if not outputs:
        return w
    grads = [torch.ones_like(t) for t in outputs]
    grad_bytes = sum(g.numel() * g.element_size() for g in grads)
    wrt_inputs = [t for t in inputs if t.requires_grad]
    wrt_params = [p for p in params if p.requires_grad]
    start = meter.allocated()
    if wrt_inputs:
        dx, w["backward_input"] = meter.peak_above(lambda: torch.autograd.grad(
            outputs, wrt_inputs, grads, retain_graph=True, allow_unused=True))
        del dx
    if not wrt_params:  # no weight pass: only what the input pass left above its start
        w["held_for_weight"] = max(0, meter.allocated() - start)
        return w
    # The output gradient stays for the weight pass: held beside what the input pass left.
    w["held_for_weight"] = max(0, meter.allocated() - (start - grad_bytes))
    dw, w["backward_weight"] = meter.peak_above(lambda: torch.autograd.grad(
        outputs, wrt_params, grads, allow_unused=True))
    del dw
    return w
