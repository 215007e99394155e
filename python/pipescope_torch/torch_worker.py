"""One pipeline rank of `pipescope_torch run`: builds its stages of the model, runs the plan's
schedule with torch.distributed.pipelining over gloo, and writes what it measured.

Invariant: every rank builds the same model from the same seed and the same whole batch, so
the stages are the plan's cut of one model; step 0 is the checked step (gradients before any
optimizer update); the timed steps follow the warm-up; one untimed step after them measures
the peak saved-activation bytes of the steady state (step 0 also runs PyTorch's shape
inference, whose peak is kept apart as `peak_saved_bytes_step0`); every time is `time.perf_counter_ns()`
(CLOCK_MONOTONIC: one clock for all ranks of the machine).
"""

import json
import os
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
import torch.distributed as dist

from pipescope_torch.torch_model import ModelEntry, stage_modules, stage_ranges
from pipescope_torch.torch_setup import RUNTIME_CLASS, TorchSetup
from pipescope_torch.torch_spans import SpanRecorder


@dataclass
class WorkerConfig:
    setup: TorchSetup
    model_spec: str
    input_shape: List[int]
    seed: int
    steps: int
    warmup: int
    optimizer: str          # adam | sgd | none
    store: str              # file for gloo's rendezvous
    outdir: str             # where each rank writes rank{r}.json (+ grads{r}.pt)
    trace_detail: bool = True  # loss, p2p, optimizer and zero_grad spans besides the ops
    kineto_dir: Optional[str] = None  # torch.profiler's Chrome trace of the timed steps: <dir>/rank<r>.json


class SavedBytes:
    """Live bytes of the tensors autograd saves for backward, and their peak.

    Each saved tensor counts its own extent (numel x element size; one extent counted once
    however many ops save it), parameters and buffers left out. Not whole storages, as the
    profiler counts them: PyTorch's schedules cut the batch into micro-batch views of one
    storage, and a stage keeps only the views of the micro-batches it has not run backward
    for. A saved tensor stays counted until autograd drops it (its holder object dies), so
    the peak is what the rank really stashed at once. A holder keeps the tensor detached,
    so that it never keeps its own graph alive (pack below).
    """

    def __init__(self, excluded_ptrs):
        self.excluded = excluded_ptrs
        self.refs: Dict[tuple, int] = {}
        self.live = 0
        self.peak = 0

    def hooks(self):
        tracker = self

        class Holder:
            __slots__ = ("tensor", "key", "__weakref__")

            def __init__(self, t, key):
                self.tensor, self.key = t, key

            def __del__(self):
                if self.key is not None:
                    tracker._release(self.key)

        def pack(t):
            ptr = t.untyped_storage().data_ptr()
            if ptr in tracker.excluded or t.device.type == "meta":
                return Holder(t, None)
            key = (ptr, t.storage_offset(), t.numel(), t.element_size())
            count = tracker.refs.get(key, 0)
            if count == 0:
                tracker.live += t.numel() * t.element_size()
                tracker.peak = max(tracker.peak, tracker.live)
            tracker.refs[key] = count + 1
            # Detached: a tensor saved by the op that made it (a ReLU's result) carries that
            # op's grad_fn, and a holder keeping it would close a cycle node -> holder ->
            # tensor -> node that only the graph's release breaks. A full backward releases
            # every node it runs; torch's split backward leaves the nodes W does not visit to
            # die with the graph, which the cycle kept alive: the measurement itself leaked
            # (each step's ReLU results on a zero-bubble last stage). The storage is the same.
            return Holder(t.detach(), key)

        def unpack(h):
            return h.tensor

        return torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    def _release(self, key):
        count = self.refs.get(key, 0) - 1
        if count <= 0:
            self.refs.pop(key, None)
            self.live -= key[2] * key[3]
        else:
            self.refs[key] = count


def _build_schedule(setup: TorchSetup, stages, loss_fn, outdir: str, rank: int):
    from torch.distributed.pipelining import schedules

    if setup.schedule_class == RUNTIME_CLASS:
        schedule = schedules._PipelineScheduleRuntime(stages, n_microbatches=setup.n_microbatches, loss_fn=loss_fn)
        path = os.path.join(outdir, f"schedule{rank}.csv")
        with open(path, "w") as f:
            f.write("".join(",".join(row) + "\n" for row in setup.schedule_csv))
        schedule._load_csv(path, format="compute_only")
        return schedule
    cls = getattr(schedules, setup.schedule_class)
    single = issubclass(cls, schedules.PipelineScheduleSingle)
    return cls(stages[0] if single else stages, n_microbatches=setup.n_microbatches, loss_fn=loss_fn)


def _make_optimizer(kind: str, params):
    if kind == "adam":
        return torch.optim.Adam(params, lr=1e-4)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=1e-4)
    return None


def _state_bytes(optimizer) -> int:
    if optimizer is None:
        return 0
    total = 0
    for state in optimizer.state.values():
        for v in state.values():
            if torch.is_tensor(v) and v.dim() > 0:
                total += v.numel() * v.element_size()
    return total


def _kineto_profiler(cfg: WorkerConfig):
    """torch.profiler over the timed steps (shapes recorded: calibrate reads a message's bytes
    from them), started; None without cfg.kineto_dir. Its ProfilerStep#N spans are the timed
    steps: it waits out all but the last warm-up step, which is its own warm-up."""
    if not cfg.kineto_dir:
        return None
    from torch.profiler import ProfilerActivity, profile, schedule

    warm = 1 if cfg.warmup >= 1 else 0
    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                   schedule=schedule(wait=cfg.warmup - warm, warmup=warm, active=cfg.steps, repeat=1))
    prof.start()
    return prof


def run_rank(rank: int, cfg: WorkerConfig) -> None:
    """The body of one spawned process (torch.multiprocessing)."""
    phase = "setup"
    try:
        torch.set_num_threads(1)
        setup = cfg.setup
        dist.init_process_group("gloo", init_method=f"file://{cfg.store}", rank=rank,
                                world_size=setup.pipeline_size)
        entry = ModelEntry.load(cfg.model_spec, cfg.input_shape, setup.loss_name)
        torch.manual_seed(cfg.seed)
        model = entry.build()
        mine = [s for s, r in enumerate(setup.stage_ranks) if r == rank]
        modules = stage_modules(model, setup)
        from torch.distributed.pipelining import PipelineStage

        stages, params = [], []
        for s in mine:
            submod = modules[s]
            params += list(submod.parameters())
            if setup.recompute:
                from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
                submod = checkpoint_wrapper(submod)
            stages.append(PipelineStage(submod, s, setup.stages, torch.device("cpu")))
        recorder = SpanRecorder(cfg.trace_detail)
        for st in stages:
            recorder.wrap_stage(st)
        phase = "schedule"
        schedule = _build_schedule(setup, stages, entry.loss_fn, cfg.outdir, rank)
        recorder.wrap_schedule(schedule)
        x, y = entry.batch(model, setup.batch_size, cfg.seed + 1)
        has_first, has_last = 0 in mine, setup.stages - 1 in mine

        def step(losses):
            args = (x,) if has_first else ()
            kwargs = {"target": y, "losses": losses} if has_last else {}
            schedule.step(*args, **kwargs)

        phase = "step 0"
        excluded = {p.untyped_storage().data_ptr() for p in model.parameters()}
        excluded |= {b.untyped_storage().data_ptr() for b in model.buffers()}
        first = SavedBytes(excluded)
        losses: List[torch.Tensor] = []
        with first.hooks():
            step(losses)
        grads = OrderedDict((name, p.grad.detach().clone()) for s in mine
                            for name, p in modules[s].named_parameters() if p.grad is not None)
        torch.save({"grads": grads, "losses": [float(l.detach()) for l in losses]},
                   os.path.join(cfg.outdir, f"grads{rank}.pt"))
        optimizer = _make_optimizer(cfg.optimizer, params)
        param_bytes = sum(p.numel() * p.element_size() for p in params)

        def train_step():
            step([])
            if optimizer is not None:
                with recorder.span("optimizer"):
                    optimizer.step()
            with recorder.span("zero_grad"):
                for p in params:
                    p.grad = None

        if optimizer is not None:
            optimizer.step()
        for p in params:
            p.grad = None
        timed = []
        kineto = _kineto_profiler(cfg)
        for i in range(cfg.warmup + cfg.steps):
            phase = f"step {i + 1}"
            recorder.enabled = i >= cfg.warmup
            recorder.clear()
            dist.barrier()
            start = time.perf_counter_ns()
            train_step()
            end = time.perf_counter_ns()
            if kineto is not None:
                kineto.step()
            if recorder.enabled:
                timed.append({"start_ns": start, "end_ns": end,
                              "ops": [[o.stage, o.kind, o.microbatch, o.start_ns, o.end_ns] for o in recorder.ops],
                              "spans": [list(sp) for sp in recorder.spans]})
        if kineto is not None:
            phase = "torch.profiler export"
            kineto.stop()
            kineto.export_chrome_trace(os.path.join(cfg.kineto_dir, f"rank{rank}.json"))
        # The steady state's memory: one more step, untimed, under the saved-tensor hooks (one
        # Python call per saved tensor, so the timed steps run without them).
        phase = f"step {cfg.warmup + cfg.steps + 1} (memory)"
        recorder.enabled = False
        steady = SavedBytes(excluded)
        dist.barrier()
        with steady.hooks():
            train_step()
        dist.barrier()
        cuts = stage_ranges(model, setup)
        out = {"rank": rank, "stages": mine, "ranges": [list(cuts[s]) for s in mine], "steps": timed,
               "peak_saved_bytes": steady.peak, "peak_saved_bytes_step0": first.peak,
               "weight_bytes": param_bytes, "gradient_bytes": param_bytes,
               "optimizer_bytes": _state_bytes(optimizer), "threads": torch.get_num_threads()}
        with open(os.path.join(cfg.outdir, f"rank{rank}.json"), "w") as f:
            json.dump(out, f)
        dist.destroy_process_group()
    except BaseException as exc:  # reported to the parent, which names the rank and the phase
        with open(os.path.join(cfg.outdir, f"error{rank}.json"), "w") as f:
            json.dump({"rank": rank, "phase": phase, "error": f"{type(exc).__name__}: {exc}".strip(),
                       "traceback": traceback.format_exc()}, f)
        raise
