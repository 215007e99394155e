"""What the ranks of `pipescope_torch run` measured, as a pipescope.measurement and a Chrome trace
of every timed step (its contract: docs/torch-run.md, "The trace `calibrate` reads").

Invariant: the file has the keys and meanings of the executor's measurement (core/report.cpp's
report_to_json; schemas/measurement.schema.json), so `pipescope compare` and the GUI's compare
tab read it unchanged: a step is from the earliest rank's start to the latest rank's end
(after a barrier), the reported step is the median timed step, and the timeline, busy times
and bubble are that step's; per position, static bytes are the parameters, gradients and
optimizer state as allocated, and peak activations the most bytes autograd held saved at once
in an untimed step after the timed ones (the steady state; step 0, with PyTorch's shape inference, the worker
keeps that peak apart).
"""

import platform
import statistics
from typing import List

# pipescope's op categories (core/report.h's TimelineEvent) for PyTorch's computation types.
CATEGORY = {"F": "forward", "B": "backward", "I": "backward_input", "W": "backward_weight"}


def _step_spans(ranks: List[dict]) -> List[int]:
    n = len(ranks[0]["steps"])
    return [max(r["steps"][i]["end_ns"] for r in ranks) - min(r["steps"][i]["start_ns"] for r in ranks)
            for i in range(n)]


def _stage_report(rank: dict, step: dict, step_ns: int) -> dict:
    busy = sum(end - start for _, _, _, start, end in step["ops"])
    static = rank["weight_bytes"] + rank["gradient_bytes"] + rank["optimizer_bytes"]
    ranges = sorted(rank["ranges"])
    out = {"index": rank["rank"], "layers": [ranges[0][0], ranges[-1][1]] if len(ranges) == 1 else ranges[0],
           "hardware_devices": [rank["rank"]], "busy_ms": busy / 1e6,
           "bubble_fraction": 1.0 - busy / step_ns if step_ns > 0 else 0.0,
           "static_bytes": static, "weight_bytes": rank["weight_bytes"], "gradient_bytes": rank["gradient_bytes"],
           "optimizer_bytes": rank["optimizer_bytes"], "peak_activation_bytes": rank["peak_saved_bytes"],
           "transient_bytes": 0, "peak_memory_bytes": static + rank["peak_saved_bytes"], "fits": True}
    if len(ranges) > 1:
        out["chunk_layers"] = ranges
    return out, busy


def _event(rank: int, cat: str, name: str, start: int, end: int, t0: int, args: dict) -> dict:
    return {"ph": "X", "pid": 0, "tid": rank, "name": name, "cat": cat, "ts": (start - t0) / 1e3,
            "dur": (end - start) / 1e3, "args": args}


def _trace(ranks: List[dict], index: int, name: str, detail: bool) -> dict:
    """Every timed step of every rank; the contract is docs/torch-run.md's "The trace `calibrate` reads"."""
    t0 = min(r["steps"][0]["start_ns"] for r in ranks)
    events = [{"ph": "M", "pid": 0, "name": "process_name", "args": {"name": f"pipescope_torch {name}"}}]
    for r in ranks:
        events.append({"ph": "M", "pid": 0, "tid": r["rank"], "name": "thread_name",
                       "args": {"name": f"device {r['rank']}"}})
        events.append({"ph": "M", "pid": 0, "tid": r["rank"], "name": "thread_sort_index",
                       "args": {"sort_index": r["rank"]}})
    spans = []
    for r in ranks:
        rank = r["rank"]
        for n, step in enumerate(r["steps"]):
            spans.append(_event(rank, "step", f"step {n}", step["start_ns"], step["end_ns"], t0, {"step": n}))
            for stage, kind, mb, start, end in step["ops"]:
                cat = CATEGORY[kind]
                spans.append(_event(rank, cat, f"{cat} mb{mb} s{stage}", start, end, t0,
                                    {"stage": stage, "microbatch": mb, "step": n}))
            for cat, start, end, args in step.get("spans", []):
                label = f"loss mb{args['microbatch']}" if cat == "loss" else cat
                spans.append(_event(rank, cat, label, start, end, t0, {**args, "step": n}))
    # Per track in start order, a step before the spans it contains.
    events += sorted(spans, key=lambda e: (e["tid"], e["ts"], e["cat"] != "step"))
    return {"displayTimeUnit": "ms", "traceEvents": events,
            "otherData": {"format": "pipescope_torch.trace", "version": 2, "steps": len(ranks[0]["steps"]),
                          "median_step": index, "detail": detail}}


def build_measurement(req, ranks: List[dict], gradient_error):
    """(measurement dict, Chrome trace dict, every timed step in ms)."""
    import torch

    setup = req.setup
    ranks = sorted(ranks, key=lambda r: r["rank"])
    spans = _step_spans(ranks)
    median = statistics.median_low(spans)
    index = spans.index(median)
    stages, busy_total, ops = [], 0, 0
    for r in ranks:
        report, busy = _stage_report(r, r["steps"][index], median)
        stages.append(report)
        busy_total += busy
        ops += len(r["steps"][index]["ops"])
    notes = [
        f"measured by pipescope_torch run on torch {torch.__version__} (torch.distributed.pipelining "
        f"{setup.schedule_class}, gloo, CPU {platform.processor() or platform.machine()}, one intra-op thread "
        f"per rank): step time is the median of {len(spans)} timed steps after {req.warmup} warm-up",
        f"optimizer {req.optimizer}: its state is what it allocated; its step is inside the timed step",
        "peak memory: parameters, gradients, optimizer state and the most bytes autograd held saved at once "
        "(saved_tensors_hooks, each saved tensor's extent, parameters excluded) in an untimed step after the "
        "timed ones, the steady state (step 0, which runs PyTorch's shape inference, is not in it); p2p buffers and "
        "transients not counted",
    ]
    if gradient_error is not None:
        notes.append(f"gradients equal one process's: largest relative error {gradient_error:.2e}")
    step_ms = [s / 1e6 for s in spans]
    measurement = {
        "format": "pipescope.measurement", "version": 1, "model": req.model_name, "schedule": setup.schedule,
        "devices": setup.pipeline_size, "chunks": setup.chunks, "microbatches": setup.n_microbatches,
        "microbatch_size": setup.microbatch_size, "batch_size": setup.batch_size, "recompute": setup.recompute,
        "memory_limit_bytes": 0, "step_time_ms": median / 1e6,
        "throughput_samples_per_s": setup.batch_size / (median / 1e9) if median > 0 else 0.0,
        "bubble_fraction": 1.0 - busy_total / (setup.pipeline_size * median) if median > 0 else 0.0,
        "simulated_ops": ops, "peak_memory_bytes": max(s["peak_memory_bytes"] for s in stages), "fits": True,
        "stages": stages, "notes": notes,
        "runtime": {"framework": "torch.distributed.pipelining", "torch": torch.__version__,
                    "schedule_class": setup.schedule_class, "backend": "gloo", "threads_per_rank": 1,
                    "optimizer": req.optimizer, "step_times_ms": step_ms,
                    "step0_peak_activation_bytes": [r["peak_saved_bytes_step0"] for r in ranks],
                    "gradient_relative_error": gradient_error},
    }
    return measurement, _trace(ranks, index, setup.schedule, req.trace_detail), step_ms
