"""What one rank of `pipescope_torch run` spent each timed step on: its ops and, with detail on,
the loss, every p2p post and wait, the optimizer step and the zeroing of the gradients.

Invariant: inside a step the spans of one rank never overlap (one level below the step: an op
contains no other span, p2p issue and wait are never inside an op), every time is
`time.perf_counter_ns()`, and nothing is recorded while `enabled` is false (warm-up, step 0,
the memory step). The wrappers go on the stage and schedule instances and on the module
globals torch 2.13's schedules look up at call time (`schedules._batch_p2p`,
`schedules._wait_batch_p2p`); each rank is its own process, so nothing is restored.

    rec = SpanRecorder(detail=True); rec.wrap_stage(stage); rec.wrap_schedule(schedule)
"""

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import List


@dataclass
class OpRecord:
    stage: int
    kind: str   # F, B, I, W
    microbatch: int
    start_ns: int
    end_ns: int


def p2p_counts(p2p_ops) -> dict:
    """sends, recvs and their tensor bytes in a list of dist.P2POp (what `_batch_p2p` posts)."""
    import torch.distributed as dist

    out = {"sends": 0, "recvs": 0, "send_bytes": 0, "recv_bytes": 0}
    for p in p2p_ops:
        key = "send" if p.op is dist.isend else "recv"
        out[key + "s"] += 1
        out[key + "_bytes"] += p.tensor.numel() * p.tensor.element_size()
    return out


class SpanRecorder:
    """Times each stage's forward, backward, input- and weight-gradient calls (always), and with
    `detail` the loss, the p2p posts and waits (`spans`, each [category, start_ns, end_ns, args]).

    PyTorch's schedules drive a stage only through forward_one_chunk, backward_one_chunk
    (full_backward=False is the input pass I) and backward_weight_one_chunk (W); they compute
    the loss in `_PipelineSchedule._maybe_compute_loss` after forward_one_chunk returns, post
    every send and receive through `_batch_p2p` (`_sorted_batch_p2p` calls it per peer) and
    wait through `_wait_batch_p2p` (torch/distributed/pipelining/schedules.py, 2.13). A post or
    wait of an empty list does nothing and is not recorded.
    """

    def __init__(self, detail: bool = True):
        self.detail = detail
        self.enabled = False
        self.ops: List[OpRecord] = []
        self.spans: List[list] = []

    def clear(self) -> None:
        self.ops.clear()
        self.spans.clear()

    @contextmanager
    def span(self, category: str, **args):
        """A span of the step's own work (optimizer, zero_grad): recorded with detail on."""
        start = time.perf_counter_ns()
        yield
        if self.enabled and self.detail:
            self.spans.append([category, start, time.perf_counter_ns(), args])

    def wrap_stage(self, stage) -> None:
        fwd, bwd, wgt = stage.forward_one_chunk, stage.backward_one_chunk, stage.backward_weight_one_chunk
        index = stage.stage_index

        def timed(kind, mb, fn, *args, **kwargs):
            start = time.perf_counter_ns()
            out = fn(*args, **kwargs)
            if self.enabled:
                self.ops.append(OpRecord(index, kind, mb, start, time.perf_counter_ns()))
            return out

        def forward_one_chunk(fwd_chunk_id, *args, **kwargs):
            return timed("F", fwd_chunk_id, fwd, fwd_chunk_id, *args, **kwargs)

        def backward_one_chunk(bwd_chunk_id, loss=None, full_backward=True, last_backward=False):
            return timed("B" if full_backward else "I", bwd_chunk_id, bwd, bwd_chunk_id, loss=loss,
                         full_backward=full_backward, last_backward=last_backward)

        def backward_weight_one_chunk(bwd_chunk_id, last_backward=False):
            return timed("W", bwd_chunk_id, wgt, bwd_chunk_id, last_backward=last_backward)

        stage.forward_one_chunk = forward_one_chunk
        stage.backward_one_chunk = backward_one_chunk
        stage.backward_weight_one_chunk = backward_weight_one_chunk

    def wrap_schedule(self, schedule) -> None:
        """The loss on `schedule` and the p2p helpers of its module; nothing without detail."""
        if not self.detail:
            return
        from torch.distributed.pipelining import schedules

        compute = schedule._maybe_compute_loss
        spans = self.spans

        def _maybe_compute_loss(stage, output, target_mbs, mb_index, loss_kwargs=None):
            start = time.perf_counter_ns()
            out = compute(stage, output, target_mbs, mb_index, loss_kwargs)
            # torch computes a loss only on the last stage when the schedule has a loss_fn.
            if self.enabled and stage.is_last and schedule._loss_fn is not None:
                spans.append(["loss", start, time.perf_counter_ns(),
                              {"stage": stage.stage_index, "microbatch": mb_index}])
            return out

        schedule._maybe_compute_loss = _maybe_compute_loss
        if getattr(schedules._batch_p2p, "_pipescope_wrapped", False):
            return  # a second schedule in this process: the module is wrapped already
        post, wait = schedules._batch_p2p, schedules._wait_batch_p2p

        def _batch_p2p(p2p_ops, desc=None):
            start = time.perf_counter_ns()
            works = post(p2p_ops, desc=desc)
            if self.enabled and p2p_ops:
                end = time.perf_counter_ns()
                spans.append(["p2p_issue", start, end, p2p_counts(p2p_ops)])
            return works

        def _wait_batch_p2p(work):
            start = time.perf_counter_ns()
            out = wait(work)
            if self.enabled and work:
                spans.append(["p2p_wait", start, time.perf_counter_ns(), {}])
            return out

        _batch_p2p._pipescope_wrapped = True
        schedules._batch_p2p = _batch_p2p
        schedules._wait_batch_p2p = _wait_batch_p2p
