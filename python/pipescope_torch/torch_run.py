"""`pipescope_torch run`: a pipescope plan executed by torch.distributed.pipelining on CPU.

Describe, then run: the plan's export (TorchSetup) says the cut, the schedule class and the
micro-batches; one spawned process per pipeline rank (gloo, one intra-op thread each) runs
it; the parent checks the first step's loss and gradients against one process running the
same mini-batch, and writes a pipescope.measurement (+ Chrome trace) from the timed steps.
Invariant: nothing waits forever (every run has a deadline after which all ranks are
killed), and the output files are complete or untouched.

    result = run_plan(RunRequest(setup, "examples/mlp.py:build_model", [64], steps=5))
"""

import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from pipescope_torch.errors import BridgeError

EXIT_RUN_FAILED = 3

# Known to hang or fail on gloo in torch 2.13 (checked on this machine; the list is what
# `run` refuses up front, with the reason, instead of waiting for a timeout).
GLOO_REFUSALS: Dict[str, str] = {}


class RunFailed(Exception):
    """A rank failed while running (exit 3): names the rank, the phase and the error."""


@dataclass
class RunRequest:
    setup: object
    model_spec: str
    input_shape: List[int]
    steps: int = 5
    warmup: int = 2
    seed: int = 0
    optimizer: str = "adam"
    timeout_s: float = 300.0
    check_gradients: bool = True
    tolerance: float = 1e-5
    allow_oversubscribe: bool = False
    model_name: str = ""
    progress: object = None
    trace_detail: bool = True   # loss, p2p, optimizer and zero_grad spans (off only to measure their cost)
    kineto_dir: Optional[str] = None  # torch.profiler traces of the timed steps, <dir>/rank<r>.json


@dataclass
class RunResult:
    measurement: dict
    trace: dict
    gradient_error: Optional[float] = None
    loss_error: Optional[float] = None
    step_ms: List[float] = field(default_factory=list)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def check_request(req: RunRequest) -> None:
    setup = req.setup
    if req.steps < 1:
        raise BridgeError(f"--steps {req.steps} must be 1 or more")
    if req.warmup < 0:
        raise BridgeError(f"--warmup {req.warmup} must be 0 or more")
    if req.timeout_s <= 0:
        raise BridgeError(f"--timeout {req.timeout_s} must be positive")
    if req.optimizer not in ("adam", "sgd", "none"):
        raise BridgeError(f"--optimizer {req.optimizer!r} must be adam, sgd or none")
    cores = _cores()
    if setup.pipeline_size > cores and not req.allow_oversubscribe:
        raise BridgeError(f"{setup.source}: {setup.pipeline_size} pipeline ranks need {setup.pipeline_size} "
                          f"cores (one intra-op thread each), this machine gives {cores}; pass "
                          "--oversubscribe to run anyway (then the times say little)")
    if setup.schedule_class in GLOO_REFUSALS:
        raise BridgeError(f"{setup.source}: schedule {setup.schedule_class}: {GLOO_REFUSALS[setup.schedule_class]}")


def check_model(req: RunRequest) -> None:
    """The model builds, is a Sequential and the plan's cut fits it (before any process starts)."""
    import torch

    from pipescope_torch.torch_model import ModelEntry, stage_cuts

    entry = ModelEntry.load(req.model_spec, req.input_shape, req.setup.loss_name)
    if entry.make_batch is None and not req.input_shape:
        raise BridgeError("--input-shape is needed (the model file defines no make_batch(batch_size, seed))")
    torch.manual_seed(req.seed)
    try:
        model = entry.build()
    except BridgeError:
        raise
    except Exception as exc:
        raise BridgeError(f"building {req.model_spec} raised {type(exc).__name__}: {exc}") from None
    stage_cuts(model, req.setup)


def _spawn_and_wait(req: RunRequest, outdir: str) -> None:
    import torch.multiprocessing as mp

    from pipescope_torch.torch_worker import WorkerConfig, run_rank

    cfg = WorkerConfig(setup=req.setup, model_spec=req.model_spec, input_shape=req.input_shape, seed=req.seed,
                       steps=req.steps, warmup=req.warmup, optimizer=req.optimizer,
                       store=os.path.join(outdir, "store"), outdir=outdir, trace_detail=req.trace_detail,
                       kineto_dir=req.kineto_dir)
    ctx = mp.start_processes(run_rank, args=(cfg,), nprocs=req.setup.pipeline_size, join=False,
                             start_method="spawn")
    deadline = time.monotonic() + req.timeout_s
    try:
        while True:
            try:
                if ctx.join(timeout=0.2):
                    return
            except mp.ProcessRaisedException:
                raise RunFailed(_first_error(outdir) or "a rank raised") from None
            except mp.ProcessExitedException as exc:
                raise RunFailed(_first_error(outdir) or f"rank {exc.error_index} exited with {exc.exit_code}") from None
            if time.monotonic() > deadline:
                raise TimeoutError
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
        for p in ctx.processes:
            p.join(5)


def _first_error(outdir: str) -> Optional[str]:
    errors = []
    for name in sorted(os.listdir(outdir)):
        if name.startswith("error") and name.endswith(".json"):
            with open(os.path.join(outdir, name)) as f:
                errors.append(json.load(f))
    if not errors:
        return None
    # The first rank to fail is the cause; the others usually fail waiting on it.
    e = min(errors, key=lambda e: (e["phase"] != "schedule", e["rank"]))
    return f"rank {e['rank']} ({e['phase']}): {e['error']}"


def _reference(req: RunRequest):
    """Loss per micro-batch and gradients of one process over the same mini-batch.

    PyTorch's schedules (scale_grads=True) divide the accumulated gradients by the number of
    micro-batches: the reference is the gradient of the mean of the micro-batch losses.
    """
    import torch

    from pipescope_torch.torch_model import ModelEntry

    torch.set_num_threads(1)
    entry = ModelEntry.load(req.model_spec, req.input_shape, req.setup.loss_name)
    torch.manual_seed(req.seed)
    model = entry.build()
    x, y = entry.batch(model, req.setup.batch_size, req.seed + 1)
    m = req.setup.n_microbatches
    losses = []
    for xm, ym in zip(x.tensor_split(m), y.tensor_split(m)):
        loss = entry.loss_fn(model(xm), ym)
        (loss / m).backward()
        losses.append(float(loss.detach()))
    return losses, {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


def check_gradients(req: RunRequest, outdir: str):
    """(largest relative gradient error, largest relative loss error) against one process."""
    import torch

    losses_ref, grads_ref = _reference(req)
    grads, losses = {}, []
    for r in range(req.setup.pipeline_size):
        got = torch.load(os.path.join(outdir, f"grads{r}.pt"))
        grads.update(got["grads"])
        losses += got["losses"]
    missing = sorted(set(grads_ref) - set(grads))
    if missing:
        raise RunFailed(f"no gradient came back for {', '.join(missing[:4])}")
    worst = 0.0
    for name, ref in grads_ref.items():
        scale = float(ref.abs().max())
        diff = float((grads[name] - ref).abs().max())
        worst = max(worst, diff / scale if scale > 0 else diff)
    loss_err = max((abs(a - b) / max(abs(b), 1e-30) for a, b in zip(losses, losses_ref)), default=0.0)
    if len(losses) != len(losses_ref):
        raise RunFailed(f"{len(losses)} micro-batch losses came back, expected {len(losses_ref)}")
    return worst, loss_err


def run_plan(req: RunRequest) -> RunResult:
    from pipescope_torch.torch_measurement import build_measurement

    check_request(req)
    check_model(req)
    say = req.progress or (lambda msg: None)
    with tempfile.TemporaryDirectory(prefix="pipescope_torch_run_") as outdir:
        say(f"{req.setup.schedule_class}: {req.setup.pipeline_size} ranks x {req.setup.chunks} stage(s), "
            f"{req.setup.n_microbatches} micro-batches of {req.setup.microbatch_size}, "
            f"{req.warmup} warm-up + {req.steps} timed steps (gloo, CPU)")
        try:
            _spawn_and_wait(req, outdir)
        except TimeoutError:
            raise BridgeError(f"{req.setup.source}: schedule {req.setup.schedule_class} did not finish within "
                              f"{req.timeout_s:g} s on gloo (ranks killed); PyTorch cannot run it here "
                              "(a known gloo hang in batched p2p is pytorch/pytorch#152938)") from None
        except RunFailed as exc:
            text = str(exc)
            if "(setup)" in text or "(schedule)" in text:
                raise BridgeError(f"{req.setup.source}: PyTorch cannot run schedule {req.setup.schedule_class} "
                                  f"here: {text}") from None
            raise
        ranks = []
        for r in range(req.setup.pipeline_size):
            with open(os.path.join(outdir, f"rank{r}.json")) as f:
                ranks.append(json.load(f))
        grad_err = loss_err = None
        if req.check_gradients:
            grad_err, loss_err = check_gradients(req, outdir)
            say(f"gradients vs one process: largest relative error {grad_err:.2e} (losses {loss_err:.2e})")
            if grad_err > req.tolerance or loss_err > req.tolerance:
                raise RunFailed(f"pipelined gradients differ from one process's: relative error {grad_err:.3e}, "
                                f"losses {loss_err:.3e} (tolerance {req.tolerance:g})")
    measurement, trace, step_ms = build_measurement(req, ranks, grad_err)
    say(f"step {measurement['step_time_ms']:.3f} ms (median of {len(step_ms)}), "
        f"bubble {measurement['bubble_fraction']:.3f}")
    return RunResult(measurement, trace, grad_err, loss_err, step_ms)
