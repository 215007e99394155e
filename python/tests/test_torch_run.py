"""`pipescope_torch run`: pipescope plans on torch.distributed.pipelining 2.13 (CPU, gloo).

Every run checks its first step's loss and gradients against one process (relative error
< 1e-5, fp32), and the measurement is schema-valid and read by `pipescope compare`. The
memory test states torch's own stash in bytes, computed by hand for a tiny MLP.
"""

import json
import os
import subprocess
import sys

import jsonschema
import pytest

from helpers import EXAMPLES, PYTHON_DIR
from pipescope_torch.plans import plan_from_prediction, predict, write_plan

REPO = os.path.dirname(PYTHON_DIR)
PIPESCOPE = os.environ.get("PIPESCOPE_BIN", os.path.join(REPO, "build", "bin", "pipescope"))
HAVE_PIPESCOPE = os.path.isfile(PIPESCOPE) and os.access(PIPESCOPE, os.X_OK)
needs_pipescope = pytest.mark.skipif(not HAVE_PIPESCOPE, reason=f"{PIPESCOPE} not built")

# 784 -> 64 -> 64 -> 10 with ReLUs: five children, so stages can be cut anywhere.
MLP = '''import torch.nn as nn
def build_model():
    return nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
'''


def setup_file(path, cls, split_points, stage_ranks, microbatches=4, microbatch_size=8, schedule=None,
               pipeline_size=2, csv=None):
    """A file with the constants `pipescope export --to torch` writes."""
    text = (f"PIPELINE_SIZE = {pipeline_size}\nDATA_PARALLEL_SIZE = 1\nN_MICROBATCHES = {microbatches}\n"
            f"MICROBATCH_SIZE = {microbatch_size}\n"
            f"SCHEDULE_CLASS = \"{cls}\"  # pipescope schedule \"{schedule or cls}\"\n"
            f"SPLIT_POINTS = {json.dumps(split_points)}\nSTAGE_RANKS = {stage_ranks}\nRECOMPUTE = False\n")
    if csv:
        text += f'SCHEDULE_CSV = """\\\n{csv}"""\n'
    path.write_text(text)
    return str(path)


def run(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "pipescope_torch", "run", *args], cwd=PYTHON_DIR,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def mlp(tmp_path):
    p = tmp_path / "mlp.py"
    p.write_text(MLP)
    return f"{p}:build_model"


def measurement_schema():
    with open(os.path.join(REPO, "schemas", "measurement.schema.json")) as f:
        return json.load(f)


# Per micro-batch of 8 samples, position 0 (Linear(784, 64) + ReLU) saves Linear's input view
# (8 x 784 fp32 = 25088 B) and ReLU's output (8 x 64 x 4 = 2048 B): 27136 B.
STASH_0 = 8 * 784 * 4 + 8 * 64 * 4


# Per micro-batch of 8 samples, position 1 (Linear(64, 64), ReLU, Linear(64, 10) and the loss)
# saves the first Linear's input (8 x 64 x 4 = 2048 B), the ReLU's output (2048 B; the last
# Linear saves the same tensor, counted once) and the MSE loss's output and target (2 x 8 x 10
# x 4 = 640 B): 4736 B.
STASH_1 = 8 * 64 * 4 + 8 * 64 * 4 + 2 * 8 * 10 * 4


@pytest.mark.parametrize("cls, in_flight", [("ScheduleGPipe", [4, 4]), ("Schedule1F1B", [2, 1])])
def test_torch_keeps_the_stash_the_schedule_implies(tmp_path, mlp, cls, in_flight):
    """In the steady state (the untimed memory step after the timed ones) PyTorch keeps exactly the
    micro-batches the schedule has in flight: GPipe all M = 4 on both positions, 1F1B K - s
    (2 on position 0, 1 on position 1), as pipescope's rule says (released at B).

    Step 0 (the checked step, which runs PyTorch's metadata-inference forward of micro-batch
    0 first) holds the same, kept apart in runtime's step0_peak_activation_bytes. It once
    measured one stash more on 1F1B's first position and 2048 B more on GPipe's: the
    tracker's own reference cycle (torch_worker.SavedBytes kept the saved tensor, whose
    grad_fn kept the inference's graph), not PyTorch's."""
    setup = setup_file(tmp_path / "setup.py", cls, ["2"], [0, 1])
    r = run("--setup", setup, "--model", mlp, "--input-shape", "784", "--json", "--steps", "1", "--warmup", "1")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    jsonschema.validate(m, measurement_schema())
    assert [s["peak_activation_bytes"] for s in m["stages"]] == [in_flight[0] * STASH_0, in_flight[1] * STASH_1]
    assert m["runtime"]["step0_peak_activation_bytes"] == [in_flight[0] * STASH_0, in_flight[1] * STASH_1]
    # Parameters, gradients and Adam's two moments: 4 x (784 x 64 + 64) x 4 B on position 0.
    assert m["stages"][0]["static_bytes"] == 4 * (784 * 64 + 64) * 4
    assert m["runtime"]["gradient_relative_error"] <= 1e-5
    # Every micro-batch runs one F and one B on each position: 2 x 2 x M = 16 ops.
    assert m["simulated_ops"] == 16


@pytest.mark.parametrize("cls, splits, ranks", [
    ("ScheduleInterleaved1F1B", ["1", "2", "3"], [0, 1, 0, 1]),
    ("ScheduleZBVZeroBubble", ["1", "2", "3"], [0, 1, 1, 0]),
    ("ScheduleLoopedBFS", ["1", "2", "3"], [0, 1, 0, 1]),
])
def test_multi_stage_classes_give_one_process_gradients(tmp_path, mlp, cls, splits, ranks):
    setup = setup_file(tmp_path / "setup.py", cls, splits, ranks)
    r = run("--setup", setup, "--model", mlp, "--input-shape", "784", "--json", "--steps", "1", "--warmup", "0")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["chunks"] == 2 and m["runtime"]["gradient_relative_error"] <= 1e-5
    kinds = {"ScheduleZBVZeroBubble": 3}  # F, I, W per micro-batch and stage
    per_op = kinds.get(cls, 2)
    assert m["simulated_ops"] == per_op * 4 * 4  # ops x stages x micro-batches


@needs_pipescope
@pytest.mark.parametrize("schedule, chunks", [("1f1b", 1), ("zb-auto", 1)])
def test_plan_export_run_compare(tmp_path, mlp, schedule, chunks):
    """plan -> `export --to torch` (run consumes it: --plan through export, or the file it
    wrote) -> measurement -> `pipescope compare`; zb-auto has no PyTorch class and runs its
    searched order through _PipelineScheduleRuntime's CSV."""
    profile = tmp_path / "profile.json"
    r = subprocess.run([sys.executable, "-m", "pipescope_torch", "profile", mlp, "--input-shape", "784",
                        "--batch-sizes", "4,8", "--warmup", "0", "--repeats", "1", "-o", str(profile)],
                       cwd=PYTHON_DIR, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    pred = predict(PIPESCOPE, str(profile), 2, 4, 8, schedule, chunks)
    plan = tmp_path / "plan.json"
    write_plan(str(plan), plan_from_prediction(pred, str(profile), str(tmp_path)))
    meas, trace = tmp_path / "meas.json", tmp_path / "trace.json"
    r = run("--plan", str(plan), "--model", mlp, "--input-shape", "784", "-o", str(meas), "--trace", str(trace),
            "--steps", "2", "--warmup", "0", "--pipescope", PIPESCOPE)
    assert r.returncode == 0, r.stderr
    m = json.loads(meas.read_text())
    jsonschema.validate(m, measurement_schema())
    assert m["schedule"] == schedule
    assert m["runtime"]["schedule_class"] == ("Schedule1F1B" if schedule == "1f1b" else "_PipelineScheduleRuntime")
    events = json.loads(trace.read_text())["traceEvents"]
    # The trace holds every timed step (2 here), each with the measurement's ops.
    op_cats = {"forward", "backward", "backward_input", "backward_weight"}
    assert sum(e["ph"] == "X" and e["cat"] in op_cats for e in events) == 2 * m["simulated_ops"]
    v = subprocess.run([PIPESCOPE, "validate", str(meas)], capture_output=True, text=True, timeout=60)
    assert v.returncode == 0, v.stderr  # pipescope's own measurement reader takes it
    pred_file = tmp_path / "pred.json"
    pred_file.write_text(json.dumps(pred))
    c = subprocess.run([PIPESCOPE, "compare", str(pred_file), str(meas), "--json"], capture_output=True,
                       text=True, timeout=60)
    assert c.returncode == 0, c.stderr
    json.loads(c.stdout)
    # The exported Python file is what run consumes too.
    exported = tmp_path / "pp_setup.py"
    e = subprocess.run([PIPESCOPE, "export", "--plan", str(plan), "--to", "torch", "-o", str(exported)],
                       capture_output=True, text=True, timeout=60)
    assert e.returncode == 0, e.stderr
    r = run("--setup", str(exported), "--model", mlp, "--input-shape", "784", "--json", "--steps", "1",
            "--warmup", "0")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runtime"]["gradient_relative_error"] <= 1e-5


def test_bad_inputs_exit_2_naming_the_file_and_field(tmp_path, mlp):
    cases = []
    wrong_split = setup_file(tmp_path / "a.py", "Schedule1F1B", ["fc9"], [0, 1])
    cases.append((["--setup", wrong_split, "--model", mlp, "--input-shape", "784"], "stages[1]: split point 'fc9'"))
    not_seq = setup_file(tmp_path / "b.py", "Schedule1F1B", ["conv2"], [0, 1])
    cases.append((["--setup", not_seq, "--model", f"{EXAMPLES}/resnet_block.py:build_model",
                   "--input-shape", "3,32,32"], "not an nn.Sequential"))
    too_many = setup_file(tmp_path / "c.py", "Schedule1F1B", ["1", "2", "3"], [0, 1, 2, 3], pipeline_size=4)
    cores = len(os.sched_getaffinity(0))
    if cores < 4:
        cases.append((["--setup", too_many, "--model", mlp, "--input-shape", "784"], "cores"))
    unknown = setup_file(tmp_path / "d.py", "ScheduleMagic", ["2"], [0, 1])
    cases.append((["--setup", unknown, "--model", mlp, "--input-shape", "784"], "SCHEDULE_CLASS: 'ScheduleMagic'"))
    ok = setup_file(tmp_path / "e.py", "Schedule1F1B", ["2"], [0, 1])
    cases.append((["--setup", ok, "--model", mlp, "--input-shape", "784", "--timeout", "0.5"],
                  "did not finish within 0.5 s"))
    for args, needle in cases:
        out = tmp_path / "never.json"
        r = run(*args, "-o", str(out))
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr, (needle, r.stderr)
        assert r.stderr.count("\n") == 1 or "error" in r.stderr.splitlines()[-1]
        assert not out.exists()
