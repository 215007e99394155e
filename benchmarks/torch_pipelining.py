"""How close pipescope's prediction is to torch.distributed.pipelining on this machine.

Verify, then measure: profiles a model with pipescope_torch (one thread), predicts each
runnable schedule at K = 2 with `pipescope simulate` (the cut the simulator chooses), runs the
same plan on PyTorch 2.13 over gloo (gradients checked against one process first), and prints
predicted vs measured step time with the error per schedule, the median and the worst.
With --loss NAME the profile's last layer is the model's loss (`pipescope_torch profile
--loss`), and a last column gives the error of the same plan predicted without it (the
profile less its loss layer, the same cut): what the loss as a layer changes.

    .venv/bin/python benchmarks/torch_pipelining.py [--model python/examples/llama.py:build_model]
        [--microbatches 4] [--microbatch-size 2] [--steps 7] [--loss cross_entropy] [--markdown]
Run it on an otherwise idle machine: the two ranks need the two cores.
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

from pipescope_torch.gloo_link import hardware_file, median_link  # noqa: E402
from pipescope_torch.plans import plan_from_prediction, predict, write_plan  # noqa: E402

# (pipescope schedule, chunks): every schedule `pipescope_torch run` can run at K = 2.
SCHEDULES = [("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("zb-h1", 1), ("zb-h2", 1), ("zb-v", 2),
             ("dualpipev", 2), ("zb-auto", 1)]


def bridge(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "pipescope_torch", *args], cwd=os.path.join(REPO, "python"),
                          capture_output=True, text=True, timeout=timeout)


def write_without_loss(profile: str, out: str) -> None:
    """The profile less its last layer, the loss (`profile --loss`), and any edge to it."""
    with open(profile) as f:
        p = json.load(f)
    last = len(p["layers"]) - 1
    if p["layers"][last].get("spec", {}).get("type") != "loss":
        raise SystemExit(f"{profile}: its last layer is not the loss")
    p["layers"].pop()
    if "edges" in p:
        p["edges"] = [e for e in p["edges"] if last not in e]
    with open(out, "w") as f:
        json.dump(p, f)


def plan_without_loss(plan: str, profile: str, work: str, schedule: str) -> str:
    """The plan's cut on the profile less the loss: the last stage ends one layer earlier."""
    with open(plan) as f:
        p = json.load(f)
    last = max(range(len(p["stages"])), key=lambda s: p["stages"][s]["layers"][1])
    p["stages"][last]["layers"][1] -= 1
    p["profile"] = os.path.relpath(profile, work)
    out = os.path.join(work, f"plan-{schedule}-without-loss.json")
    write_plan(out, p)
    return out


def predict_plan(pipescope: str, plan: str, extra) -> float:
    r = subprocess.run([pipescope, "simulate", "--plan", plan, "--json", *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"pipescope simulate --plan {plan}: {r.stderr.strip()}")
    return json.loads(r.stdout)["step_time_ms"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(REPO, "python", "examples", "llama.py:build_model"))
    ap.add_argument("--input-shape", help="for models without make_batch")
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--microbatch-size", type=int, default=2)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--schedules", default=",".join(s for s, _ in SCHEDULES))
    ap.add_argument("--pipescope", default=os.path.join(REPO, "build", "bin", "pipescope"))
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--keep", help="folder to keep the profile, plans, predictions and measurements in")
    ap.add_argument("--loss", help="cross_entropy | mse: profile the model's loss as the last layer (the model "
                                    "file's loss_fn where it has one)")
    ap.add_argument("--free-links", action="store_true",
                    help="predict with free communication (default: a hardware file with the gloo link measured here)")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="pipescope_torch_bench_")
    os.makedirs(work, exist_ok=True)
    shape = ["--input-shape", args.input_shape] if args.input_shape else []
    profile = os.path.join(work, "profile.json")
    mb = args.microbatch_size
    sizes = ",".join(str(b) for b in sorted({max(1, mb // 2), mb, 2 * mb}))
    loss = ["--loss", args.loss] if args.loss else []
    r = bridge("profile", args.model, *shape, "--batch-sizes", sizes, "--threads", "1", *loss, "-o", profile)
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return 1
    if args.loss:
        without_loss = os.path.join(work, "profile-without-loss.json")
        write_without_loss(profile, without_loss)
    wanted = args.schedules.split(",")
    extra, link_note = [], "communication free"
    if not args.free_links:
        link = median_link(3)  # one measurement can land in a slow spell (gloo_link.py)
        hw = os.path.join(work, "hardware.json")
        with open(hw, "w") as f:
            json.dump(hardware_file(link), f, indent=2)
        extra = ["--hardware", hw]
        link_note = f"gloo link measured: {link['latency_us']:.0f} us, {link['bandwidth_gb_per_s']:.2f} GB/s"
    rows = []
    for schedule, chunks in SCHEDULES:
        if schedule not in wanted:
            continue
        pred = predict(args.pipescope, profile, 2, args.microbatches, mb, schedule, chunks, extra)
        # The same plan with PyTorch's p2p semantics: its schedules wait on each batched
        # send/recv before the next op (simulate --p2p blocking), where pipescope's default
        # lets transfers run beside compute.
        blocking = predict(args.pipescope, profile, 2, args.microbatches, mb, schedule, chunks,
                           extra + ["--p2p", "blocking"]) if extra else pred
        plan = os.path.join(work, f"plan-{schedule}.json")
        write_plan(plan, plan_from_prediction(pred, profile, work))
        meas = os.path.join(work, f"measurement-{schedule}.json")
        r = bridge("run", "--plan", plan, "--model", args.model, *shape, "-o", meas, "--steps", str(args.steps),
                   "--warmup", str(args.warmup), "--pipescope", args.pipescope)
        if r.returncode != 0:
            rows.append((schedule, pred["step_time_ms"], None, None, None, r.stderr.strip().splitlines()[-1]))
            continue
        with open(meas) as f:
            m = json.load(f)
        with open(os.path.join(work, f"prediction-{schedule}.json"), "w") as f:
            json.dump(pred, f)
        err = (pred["step_time_ms"] - m["step_time_ms"]) / m["step_time_ms"]
        err_blocking = (blocking["step_time_ms"] - m["step_time_ms"]) / m["step_time_ms"]
        note = (f"{m['runtime']['schedule_class']}, bubble {pred['bubble_fraction']:.3f} pred / "
                f"{m['bubble_fraction']:.3f} meas, grad err {m['runtime']['gradient_relative_error']:.1e}")
        if args.loss:
            bare = predict_plan(args.pipescope, plan_without_loss(plan, without_loss, work, schedule), extra)
            note += f"; without the loss layer {100 * (bare - m['step_time_ms']) / m['step_time_ms']:+.1f}%"
        rows.append((schedule, pred["step_time_ms"], m["step_time_ms"], err, err_blocking, note))
    errors = [abs(e) for _, _, _, e, _, _ in rows if e is not None]
    errors_blocking = [abs(e) for _, _, _, _, e, _ in rows if e is not None]
    head = ["schedule", "predicted ms", "measured ms (median)", "error", "error, p2p blocking", "notes"]
    lines = []
    if args.markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|---|---:|---:|---:|---:|---|")
    for s, p, m, e, eb, note in rows:
        cells = [s, f"{p:.2f}", "-" if m is None else f"{m:.2f}", "-" if e is None else f"{100 * e:+.1f}%",
                 "-" if eb is None else f"{100 * eb:+.1f}%", note]
        lines.append("| " + " | ".join(cells) + " |" if args.markdown else
                     f"{cells[0]:<12} {cells[1]:>12} {cells[2]:>20} {cells[3]:>8} {cells[4]:>8}  {cells[5]}")
    if errors:
        lines.append(f"\n|error|: median {100 * statistics.median(errors):.1f}%, worst {100 * max(errors):.1f}%; "
                     f"with p2p blocking: median {100 * statistics.median(errors_blocking):.1f}%, "
                     f"worst {100 * max(errors_blocking):.1f}% "
                     f"over {len(errors)} schedules (K = 2, M = {args.microbatches}, micro-batch {mb}; {link_note}; files in {work})")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
