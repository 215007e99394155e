"""The trace `pipescope_torch run --trace` writes for `pipescope calibrate` (docs/torch-run.md,
"The trace `calibrate` reads"): every timed step of every rank, each span inside its rank's step,
the spans under a step never overlapping, and the p2p and loss counts the schedule implies.

The MLP 784-64-64-10 of test_torch_run.py, K = 2 (cut before module 2), M = 4 micro-batches of 8,
1 warm-up + 2 timed steps.
"""

import json
from collections import defaultdict

import pytest

from test_torch_run import MLP, run, setup_file

M, MICROBATCH, STEPS = 4, 8, 2
OPS = {"forward", "backward", "backward_input", "backward_weight"}
# The cut before module 2 puts Linear(784, 64) + ReLU on stage 0: it sends its [8, 64] fp32
# output (8 x 64 x 4 = 2048 B) per micro-batch forward and receives a gradient of the same shape.
MESSAGE_BYTES = MICROBATCH * 64 * 4
NS = 1e-3  # one nanosecond in the trace's microseconds: ts and dur are ns / 1e3, rounded as floats


@pytest.fixture
def mlp(tmp_path):
    p = tmp_path / "mlp.py"
    p.write_text(MLP)
    return f"{p}:build_model"


def traced_run(tmp_path, mlp, cls, *extra, splits=("2",), ranks=(0, 1)):
    setup = setup_file(tmp_path / "setup.py", cls, list(splits), list(ranks), microbatches=M,
                       microbatch_size=MICROBATCH)
    meas, trace = tmp_path / "meas.json", tmp_path / "trace.json"
    r = run("--setup", setup, "--model", mlp, "--input-shape", "784", "-o", str(meas), "--trace", str(trace),
            "--steps", str(STEPS), "--warmup", "1", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(meas.read_text()), json.loads(trace.read_text())


def by_rank_and_step(trace):
    """{(rank, step): (the step span, [the other spans in start order])}."""
    steps, inner = {}, defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] != "X":
            continue
        assert e["pid"] == 0 and e["dur"] >= 0
        key = (e["tid"], e["args"]["step"])
        if e["cat"] == "step":
            assert key not in steps, f"two step spans for rank {key[0]} step {key[1]}"
            steps[key] = e
        else:
            inner[key].append(e)
    return {k: (steps[k], sorted(inner[k], key=lambda e: e["ts"])) for k in steps}, set(inner) - set(steps)


def check_steps_and_nesting(spans, orphans, where):
    """Both ranks, every timed step (0-based after the warm-up), no span outside its rank's step,
    and one level under a step: no two spans overlap (an op holds no p2p, loss or other op)."""
    assert sorted(spans) == [(r, s) for r in range(2) for s in range(STEPS)], where
    assert not orphans, where
    assert min(step["ts"] for step, _ in spans.values()) == 0.0  # t0: the earliest timed step's start
    for (rank, n), (step, inner) in spans.items():
        at = f"{where} rank {rank} step {n}"
        end = step["ts"] + step["dur"]
        for e in inner:
            assert step["ts"] - NS <= e["ts"] and e["ts"] + e["dur"] <= end + NS, (at, e)
        for a, b in zip(inner, inner[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + NS, (at, a, b)
        assert sum(e["dur"] for e in inner) <= step["dur"] + NS * len(inner), at


def categories(inner):
    cats = defaultdict(list)
    for e in inner:
        cats[e["cat"]].append(e)
    return cats


@pytest.mark.parametrize("cls", ["Schedule1F1B", "ScheduleGPipe"])
def test_trace_holds_every_step_and_its_spans(tmp_path, mlp, cls):
    m, trace = traced_run(tmp_path, mlp, cls)
    spans, orphans = by_rank_and_step(trace)
    check_steps_and_nesting(spans, orphans, cls)
    for (rank, n), (step, inner) in spans.items():
        where = f"{cls} rank {rank} step {n}"
        cats = categories(inner)
        # Every micro-batch runs one F and one B on each rank's one stage: 2 M ops.
        assert sorted((e["cat"], e["args"]["microbatch"]) for e in cats["forward"] + cats["backward"]) == \
            sorted([("forward", mb) for mb in range(M)] + [("backward", mb) for mb in range(M)]), where
        assert all(e["args"]["stage"] == rank for e in cats["forward"] + cats["backward"])
        # The loss runs once per micro-batch on the last stage (rank 1), never on rank 0.
        if rank == 1:
            assert sorted(e["args"]["microbatch"] for e in cats["loss"]) == list(range(M)), where
            assert all(e["args"]["stage"] == 1 for e in cats["loss"])
        else:
            assert cats["loss"] == [], where
        # Rank 0 sends M activations and receives M gradients, rank 1 the reverse: M messages of
        # 2048 B each way, 8192 B per step.
        issues = cats["p2p_issue"]
        assert sum(e["args"]["sends"] for e in issues) == M, where
        assert sum(e["args"]["recvs"] for e in issues) == M, where
        assert sum(e["args"]["send_bytes"] for e in issues) == M * MESSAGE_BYTES == 8192, where
        assert sum(e["args"]["recv_bytes"] for e in issues) == M * MESSAGE_BYTES, where
        # The first message of a step is micro-batch 0's activation: a send on rank 0, a recv on rank 1.
        assert (issues[0]["args"]["sends"], issues[0]["args"]["recvs"]) == ((1, 0) if rank == 0 else (0, 1)), where
        # Both classes wait on each batch they post exactly once (schedules.py: every
        # _batch_p2p result goes to one _wait_batch_p2p), so waits and posts pair up.
        assert len(cats["p2p_wait"]) == len(issues), where
        assert all(e["args"] == {"step": n} for e in cats["p2p_wait"]), where
        # Adam steps once and the grads are zeroed once, after the schedule.
        assert len(cats["optimizer"]) == len(cats["zero_grad"]) == 1, where
        assert cats["optimizer"][0]["ts"] >= max(e["ts"] + e["dur"] for e in issues) - NS, where
        assert set(cats) <= OPS | {"loss", "p2p_issue", "p2p_wait", "optimizer", "zero_grad"}, where
    info = trace["otherData"]
    assert info["steps"] == STEPS and info["detail"] is True
    # The measurement is unchanged: the median step's ops (2 ranks x 2 M) and its time.
    assert m["simulated_ops"] == 2 * 2 * M
    assert m["runtime"]["step_times_ms"][info["median_step"]] == m["step_time_ms"]


def test_no_trace_detail_keeps_only_steps_and_ops(tmp_path, mlp):
    """The hidden --no-trace-detail (to measure the wrappers' cost) leaves the ops and steps only;
    the measurement keeps its keys and op count."""
    m, trace = traced_run(tmp_path, mlp, "Schedule1F1B", "--no-trace-detail")
    cats = {e["cat"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert cats == {"step", "forward", "backward"}
    assert trace["otherData"]["detail"] is False
    assert m["simulated_ops"] == 2 * 2 * M


def test_zbv_trace_splits_backward_and_skips_the_local_hop(tmp_path, mlp):
    """ScheduleZBVZeroBubble with 4 stages (cuts before modules 1, 2, 3) on ranks [0, 1, 1, 0]:
    rank 0 holds stages 0 and 3, so the loss (M per step) is on rank 0 and none on rank 1; each
    stage runs F, I and W per micro-batch (3 M ops per stage, 6 M per rank). Every cut carries a
    [8, 64] fp32 tensor (2048 B), but stages 1 and 2 share rank 1 and hand it over without p2p:
    rank 0 sends stage 0's M activations and stage 3's M input gradients and receives as many,
    2 M x 2048 = 16384 B each way per step, and so does rank 1."""
    _, trace = traced_run(tmp_path, mlp, "ScheduleZBVZeroBubble", splits=("1", "2", "3"), ranks=(0, 1, 1, 0))
    spans, orphans = by_rank_and_step(trace)
    check_steps_and_nesting(spans, orphans, "ScheduleZBVZeroBubble")
    for (rank, n), (step, inner) in spans.items():
        where = f"rank {rank} step {n}"
        cats = categories(inner)
        mine = (0, 3) if rank == 0 else (1, 2)
        for kind in ("forward", "backward_input", "backward_weight"):
            assert sorted((e["args"]["stage"], e["args"]["microbatch"]) for e in cats[kind]) == \
                [(s, mb) for s in mine for mb in range(M)], (where, kind)
        assert cats["backward"] == [], where
        assert len(cats["loss"]) == (M if rank == 0 else 0), where
        issues = cats["p2p_issue"]
        assert sum(e["args"]["sends"] for e in issues) == sum(e["args"]["recvs"] for e in issues) == 2 * M, where
        assert sum(e["args"]["send_bytes"] for e in issues) == 2 * M * MESSAGE_BYTES == 16384, where
        assert sum(e["args"]["recv_bytes"] for e in issues) == 2 * M * MESSAGE_BYTES, where


@pytest.mark.parametrize("schedule, chunks", [("gpipe", 1), ("interleaved", 2)])
def test_kineto_traces_of_a_run_calibrate_like_its_own_trace(tmp_path, mlp, schedule, chunks):
    """`run --kineto DIR` writes torch.profiler's trace per rank beside the bridge's own, and
    `pipescope calibrate` reads both: the same timed steps and the same op and message
    spans (GPipe's `Forward <mb>` / `Backward <mb>` and the runtime classes' `PP:` actions,
    c10d::send / recv_ cpu_ops). Both fits pass the noise check or neither is judged: a
    refusal for noise on this machine skips the test, naming it; any other refusal fails."""
    from test_torch_run import HAVE_PIPESCOPE, PIPESCOPE
    from pipescope_torch.plans import plan_from_prediction, predict, write_plan
    import subprocess
    import sys
    if not HAVE_PIPESCOPE:
        pytest.skip(f"{PIPESCOPE} not built")
    from helpers import PYTHON_DIR
    profile = tmp_path / "profile.json"
    r = subprocess.run([sys.executable, "-m", "pipescope_torch", "profile", mlp, "--input-shape", "784",
                        "--batch-sizes", "8", "--warmup", "0", "--repeats", "1", "-o", str(profile)],
                       cwd=PYTHON_DIR, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    plan = tmp_path / "plan.json"
    pred = predict(PIPESCOPE, str(profile), 2, M, MICROBATCH, schedule, chunks)
    write_plan(str(plan), plan_from_prediction(pred, str(profile), str(tmp_path)))
    kineto = tmp_path / "kineto"
    kineto.mkdir()
    steps = 6
    meas, trace = tmp_path / "meas.json", tmp_path / "trace.json"
    r = run("--plan", str(plan), "--model", mlp, "--input-shape", "784", "-o", str(meas), "--trace", str(trace),
            "--kineto", str(kineto), "--steps", str(steps), "--warmup", "1", "--pipescope", PIPESCOPE)
    assert r.returncode == 0, r.stderr
    fits = {}
    for name, traces in (("bridge", [str(trace)]), ("kineto", [str(kineto / "rank0.json"), str(kineto / "rank1.json")])):
        args = [PIPESCOPE, "calibrate", "--plan", str(plan), "--json", "-o", str(tmp_path / f"{name}.runtime.json")]
        for t in traces:
            args += ["--trace", t]
        c = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if c.returncode == 2 and "too noisy to fit" in c.stderr:
            pytest.skip(f"the run was too noisy to fit on this machine ({name}): {c.stderr.strip()}")
        assert c.returncode == 0, f"{name}: {c.stderr}"
        fits[name] = json.loads(c.stdout)
    terms = {name: {t["name"]: t for t in fit["terms"]} for name, fit in fits.items()}
    for name, fit in fits.items():
        kept = len(fit["step_ms"])
        assert steps - steps // 4 <= kept <= steps, f"{name}: {kept} of {steps} steps fitted"
    per_step = {name: terms[name]["op_us.F"]["samples"] / len(fits[name]["step_ms"]) for name in fits}
    # Every forward of every micro-batch and chunk on both ranks, in each reading.
    assert per_step["bridge"] == per_step["kineto"] == 2 * M * chunks
