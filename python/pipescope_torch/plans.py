"""A pipescope plan with the cut the simulator chose: for runs that fix K, M and the schedule.

Invariant: the plan says exactly what `pipescope simulate` predicted (its stages' layer ranges,
one device per position, the schedule, M and the micro-batch size), so
`simulate --plan` on it gives the same prediction and `pipescope_torch run --plan` runs that.

    pred = predict(pipescope, "profile.json", stages=2, microbatches=4, microbatch_size=8, schedule="1f1b")
    write_plan("plan.json", plan_from_prediction(pred, "profile.json"))
"""

import json
import os
import subprocess
from typing import List

from pipescope_torch.errors import BridgeError


def predict(pipescope: str, profile: str, stages: int, microbatches: int, microbatch_size: int,
            schedule: str, chunks: int = 1, extra: List[str] = ()) -> dict:
    cmd = [pipescope, "simulate", "--profile", profile, "--stages", str(stages), "--microbatches",
           str(microbatches), "--microbatch-size", str(microbatch_size), "--schedule", schedule, "--json"]
    if chunks > 1:
        cmd += ["--chunks", str(chunks)]
    proc = subprocess.run(cmd + list(extra), capture_output=True, text=True)
    if proc.returncode != 0:
        raise BridgeError(f"pipescope simulate ({schedule}) refused: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def plan_from_prediction(pred: dict, profile: str, plan_dir: str = ".") -> dict:
    """The plan file of a prediction: model stages in model order on their positions."""
    K, chunks = pred["devices"], pred.get("chunks", 1)
    ranges = []  # (first, end, position)
    for st in pred["stages"]:
        for first, end in st.get("chunk_layers", [st["layers"]]):
            ranges.append((first, end, st["index"]))
    ranges.sort()
    if len(ranges) != K * chunks:
        raise BridgeError(f"prediction has {len(ranges)} model stages, expected {K} x {chunks}")
    return {
        "format": "pipescope.plan", "version": 1,
        "profile": os.path.relpath(os.path.abspath(profile), os.path.abspath(plan_dir)),
        "batch_size": int(round(pred["microbatch_size"] * pred["microbatches"])),
        "microbatches": pred["microbatches"],
        "schedule": {"kind": pred["schedule"], "chunks": chunks},
        "recompute": pred.get("recompute", False),
        "optimizer": {"state_bytes_per_parameter_byte": 2.0},
        "stages": [{"layers": [a, b], "devices": [pos]} for a, b, pos in ranges],
    }


def write_plan(path: str, plan: dict) -> None:
    with open(path, "w") as f:
        json.dump(plan, f, indent=2)
        f.write("\n")
