"""Peak saved-activation bytes per rank: pipescope's prediction against what
torch.distributed.pipelining holds in the steady state, every runnable schedule on three models.

Verify, then measure: profiles each model with pipescope_torch (its loss as the last layer),
predicts each schedule at K = 2 with `pipescope simulate` (the simulator's cut, and with
--runtime torch-2.13-gloo its memory rules: the graph torch keeps from I to W), runs the same
plan with `pipescope_torch run` (gradients checked against one process) and compares each
rank's measured steady-state peak of saved tensors (`peak_activation_bytes`) with the
predicted one. Memory does not depend on the machine's timing noise, so this runs on a busy
machine too.

    .venv/bin/python benchmarks/torch_memory.py [--models small-mlp,llama,mlp-512]
        [--schedules gpipe,1f1b,interleaved,zb-h1,zb-v] [--runtime torch-2.13-gloo] [--torch-csv] [--markdown]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pipescope_torch.plans import plan_from_prediction, predict, write_plan  # noqa: E402
from torch_calibrate import MODELS, SCHEDULES  # noqa: E402  the same models and schedules as the timing benchmark


def bridge(args):
    return subprocess.run([sys.executable, "-m", "pipescope_torch", *args], capture_output=True, text=True,
                          timeout=900, cwd=os.path.join(REPO, "python"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pipescope", default=os.path.join(REPO, "build", "bin", "pipescope"))
    ap.add_argument("--models", default=",".join(m[0] for m in MODELS))
    ap.add_argument("--schedules", default=",".join(s for s, _ in SCHEDULES))
    ap.add_argument("--runtime", default="torch-2.13-gloo", help="the runtime file whose memory rules predict "
                    "(\"none\": the ops alone)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--torch-csv", action="store_true", help="run pipescope's own op order through torch's CSV "
                    "runtime instead of PyTorch's schedule class (whose zero-bubble orders are not pipescope's)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--keep", help="folder to keep every file in")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="pipescope_memory_")
    os.makedirs(work, exist_ok=True)
    runtime = [] if args.runtime == "none" else ["--runtime", args.runtime]
    rows, errors = [], []
    for name, spec, shape, loss, mb, M in MODELS:
        if name not in args.models.split(","):
            continue
        profile = os.path.join(work, f"{name}.profile.json")
        shape_args = ["--input-shape", shape] if shape else []
        if not os.path.exists(profile):
            r = bridge(["profile", spec, *shape_args, "--batch-sizes", str(mb), "--threads", "1", "--loss", loss,
                        "--warmup", "1", "--repeats", "1", "-o", profile])
            if r.returncode != 0:
                raise SystemExit(f"profile {name}: {r.stderr.strip()}")
        for schedule, chunks in SCHEDULES:
            if schedule not in args.schedules.split(","):
                continue
            pred = predict(args.pipescope, profile, 2, M, mb, schedule, chunks)
            plan = os.path.join(work, f"{name}.{schedule}.plan.json")
            write_plan(plan, plan_from_prediction(pred, profile, work))
            p = subprocess.run([args.pipescope, "simulate", "--plan", plan, "--json", *runtime], capture_output=True,
                               text=True)
            if p.returncode != 0:
                raise SystemExit(f"pipescope simulate --plan {plan}: {p.stderr.strip()}")
            predicted = [s["peak_activation_bytes"] for s in json.loads(p.stdout)["stages"]]
            out = os.path.join(work, f"{name}.{schedule}.measurement.json")
            r = bridge(["run", "--plan", plan, "--model", spec, *shape_args, "-o", out, "--steps", str(args.steps),
                        "--warmup", "1", "--pipescope", args.pipescope, *(["--torch-csv"] if args.torch_csv else [])])
            if r.returncode != 0:
                rows.append((name, schedule, predicted, None, r.stderr.strip().splitlines()[-1]))
                continue
            with open(out) as f:
                measured = [s["peak_activation_bytes"] for s in json.load(f)["stages"]]
            err = [(p_ - m_) / m_ if m_ else 0.0 for p_, m_ in zip(predicted, measured)]
            errors += [abs(e) for e in err]
            rows.append((name, schedule, predicted, measured, err))
    sep = " | " if args.markdown else "  "
    head = ["model", "schedule", "predicted B (per rank)", "measured B", "error"]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|---|---|---:|---:|---:|")
    else:
        print(sep.join(head))
    for name, schedule, predicted, measured, err in rows:
        cells = [name, schedule, " / ".join(map(str, predicted))]
        if measured is None:
            cells += ["refused", err]
        else:
            cells += [" / ".join(map(str, measured)), " / ".join(f"{100 * e:+.1f}%" for e in err)]
        print(("| " + " | ".join(cells) + " |") if args.markdown else sep.join(cells))
    if errors:
        print(f"\n{len(errors)} ranks: median |error| {100 * statistics.median(errors):.1f}%, worst "
              f"{100 * max(errors):.1f}%, within 5%: {sum(e <= 0.05 for e in errors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
