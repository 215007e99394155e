"""What `pipescope export --to torch` says about a plan, read back for `pipescope_torch run`.

Invariant: a TorchSetup holds exactly the facts of one export (schedule class, split points,
stage -> rank map, micro-batches, re-materialisation, the CSV for the runtime), whether it
came from a plan file (through `pipescope export --to torch --json`) or from the Python file
that export wrote; errors name that file and the field.

    setup = setup_from_plan("plan.json", pipescope="build/bin/pipescope")
    setup.schedule_class   # "Schedule1F1B"
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import List, Optional

from pipescope_torch.errors import BridgeError, one_line
from pipescope_torch.json_input import load_json

# pipescope's schedule names for PyTorch's classes (interop/export_torch.cpp's table, read back).
CLASS_TO_SCHEDULE = {
    "ScheduleGPipe": "gpipe",
    "Schedule1F1B": "1f1b",
    "ScheduleInterleaved1F1B": "interleaved",
    "ScheduleInterleavedZeroBubble": "zb-h1",
    "ScheduleZBVZeroBubble": "zb-v",
    "ScheduleDualPipeV": "dualpipev",
    "ScheduleLoopedBFS": "looped-bfs",
}
RUNTIME_CLASS = "_PipelineScheduleRuntime"


@dataclass
class TorchSetup:
    source: str                      # the file the facts came from (named in errors)
    schedule: str                    # pipescope's name ("1f1b", "zb-auto", a file name, ...)
    schedule_class: str              # a class in torch.distributed.pipelining.schedules
    n_microbatches: int
    microbatch_size: int             # samples per micro-batch
    split_points: List[str]          # first layer of stages 1..S-1
    stage_ranks: List[int]           # pipeline rank of each stage
    pipeline_size: int
    data_parallel_size: int = 1
    recompute: bool = False
    schedule_csv: Optional[List[List[str]]] = None  # compute-only rows for the runtime
    layer_ranges: List[List[int]] = field(default_factory=list)  # per stage [first, end)
    # The plan's profile ends with a loss layer (spec {"type": "loss"}, `profile --loss`): its
    # index (the model's child count) and its loss's name; the last stage's range includes it.
    loss_layer: Optional[int] = None
    loss_name: Optional[str] = None

    @property
    def stages(self) -> int:
        return len(self.stage_ranks)

    @property
    def batch_size(self) -> int:
        return self.n_microbatches * self.microbatch_size

    @property
    def chunks(self) -> int:
        return self.stages // self.pipeline_size


def find_pipescope(explicit: Optional[str]) -> str:
    """The pipescope binary: --pipescope, $PIPESCOPE_BINARY, the checkout's build, or PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [explicit, os.environ.get("PIPESCOPE_BINARY"),
                  os.path.join(here, "..", "..", "build", "bin", "pipescope"), shutil.which("pipescope")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    if explicit:
        raise BridgeError(f"--pipescope '{explicit}' is not an executable file")
    raise BridgeError("cannot find the pipescope binary (build it, or pass --pipescope PATH)")


def _read_json(path: str, what: str) -> dict:
    """The file as pipescope reads it (json_input.load_json), an object."""
    value = load_json(path, what)
    if not isinstance(value, dict):
        raise BridgeError(f"{path}: expected a JSON object (a pipescope {what})")
    return value


def setup_from_plan(plan_path: str, pipescope: str, csv: bool = False) -> TorchSetup:
    """Runs `pipescope export --to torch --json` on the plan and reads the plan's batch."""
    plan = _read_json(plan_path, "plan")
    if plan.get("format") != "pipescope.plan":
        raise BridgeError(f"{plan_path}: format: expected \"pipescope.plan\", got {plan.get('format')!r}")
    cmd = [pipescope, "export", "--plan", plan_path, "--to", "torch", "--json", "-o", "-"]
    if csv:
        cmd.append("--torch-csv")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BridgeError(f"pipescope export --to torch refused {plan_path}: {proc.stderr.strip()}")
    facts = json.loads(proc.stdout)
    stages = plan.get("stages", [])
    replicas = {len(s.get("devices", [0])) for s in stages} or {1}
    batch, micro = int(plan["batch_size"]), int(plan["microbatches"])
    data_parallel = max(replicas)
    if batch % (micro * data_parallel) != 0:
        raise BridgeError(f"{plan_path}: batch_size: {batch} is not a multiple of microbatches x replicas")
    schedule = plan.get("schedule", {})
    name = schedule.get("kind") or os.path.basename(schedule.get("file", "file"))
    loss_layer, loss_name = _loss_layer(plan_path, plan)
    return TorchSetup(
        source=plan_path, schedule=name, schedule_class=facts["schedule_class"],
        n_microbatches=int(facts["n_microbatches"]), microbatch_size=batch // (micro * data_parallel),
        split_points=list(facts["split_points"]), stage_ranks=list(facts["stage_ranks"]),
        pipeline_size=int(facts["pipeline_size"]), data_parallel_size=int(facts["data_parallel_size"]),
        recompute=bool(facts.get("recompute", False)), schedule_csv=facts.get("schedule_csv"),
        layer_ranges=[list(s["layers"]) for s in stages], loss_layer=loss_layer, loss_name=loss_name)


def _loss_layer(plan_path: str, plan: dict):
    """(index, loss name) of the loss layer that ends the plan's profile, or (None, None)."""
    profile = plan.get("profile")
    if not isinstance(profile, str):
        return None, None
    path = os.path.join(os.path.dirname(os.path.abspath(plan_path)), profile)
    if not os.path.isfile(path):  # export, which ran first, says what a plan's profile must be
        return None, None
    layers = _read_json(path, "profile").get("layers", [])
    spec = layers[-1].get("spec") if layers else None
    if isinstance(spec, dict) and spec.get("type") == "loss":
        from pipescope_torch.torch_model import LOSSES

        if spec.get("name") not in LOSSES:
            raise BridgeError(f"{path}: layers[{len(layers) - 1}].spec.name: {spec.get('name')!r} is not a loss "
                              f"pipescope_torch knows ({', '.join(LOSSES)})")
        return len(layers) - 1, spec["name"]
    return None, None


def _csv_rows(text: str) -> List[List[str]]:
    return [line.split(",") for line in text.splitlines() if line.strip()]


def setup_from_file(path: str) -> TorchSetup:
    """Reads the constants of a Python file `pipescope export --to torch` wrote (no torch import)."""
    if not os.path.isfile(path):
        raise BridgeError(f"setup file '{path}' does not exist")
    spec = importlib.util.spec_from_file_location("pipescope_export_setup", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise BridgeError(f"cannot load setup file '{path}': {one_line(exc)}") from exc
    needed = ["SCHEDULE_CLASS", "N_MICROBATCHES", "MICROBATCH_SIZE", "SPLIT_POINTS", "STAGE_RANKS",
              "PIPELINE_SIZE"]
    for name in needed:
        if not hasattr(module, name):
            raise BridgeError(f"{path}: {name}: missing (not a file written by `pipescope export --to torch`?)")
    with open(path) as f:
        match = re.search(r'SCHEDULE_CLASS = "[^"]*"\s*# pipescope schedule "([^"]+)"', f.read())
    cls = module.SCHEDULE_CLASS
    schedule = match.group(1) if match else CLASS_TO_SCHEDULE.get(cls, "file")
    csv_text = getattr(module, "SCHEDULE_CSV", None)

    def constant(name, convert, default=None):  # a constant of the wrong type names itself, exit 2
        value = getattr(module, name, default)
        try:
            return convert(value)
        except (TypeError, ValueError):
            raise BridgeError(f"{path}: {name}: {value!r} is not {'an integer' if convert is int else 'a list'}") from None

    if not isinstance(csv_text, (str, type(None))):
        raise BridgeError(f"{path}: SCHEDULE_CSV: expected a string")
    return TorchSetup(
        source=path, schedule=schedule, schedule_class=cls, n_microbatches=constant("N_MICROBATCHES", int),
        microbatch_size=constant("MICROBATCH_SIZE", int), split_points=constant("SPLIT_POINTS", list),
        stage_ranks=constant("STAGE_RANKS", list), pipeline_size=constant("PIPELINE_SIZE", int),
        data_parallel_size=constant("DATA_PARALLEL_SIZE", int, 1),
        recompute=bool(getattr(module, "RECOMPUTE", False)),
        schedule_csv=_csv_rows(csv_text) if csv_text else None)


def check_setup(setup: TorchSetup) -> None:
    """What `run` can execute: one pipeline (no replicas), ranks 0..K-1, a known class."""
    src = setup.source
    if setup.data_parallel_size != 1:
        raise BridgeError(f"{src}: stages[].devices: the plan replicates stages ({setup.data_parallel_size} "
                          "replicas); pipescope_torch run runs one pipeline (data-parallel size 1)")
    if sorted(set(setup.stage_ranks)) != list(range(setup.pipeline_size)):
        raise BridgeError(f"{src}: stage_ranks {setup.stage_ranks} must use every rank 0..{setup.pipeline_size - 1}")
    if setup.stages % setup.pipeline_size != 0:
        raise BridgeError(f"{src}: {setup.stages} stages do not spread evenly over {setup.pipeline_size} ranks")
    if setup.schedule_class != RUNTIME_CLASS and setup.schedule_class not in CLASS_TO_SCHEDULE:
        raise BridgeError(f"{src}: SCHEDULE_CLASS: {setup.schedule_class!r} is not a schedule class "
                          f"pipescope_torch runs ({', '.join(sorted(CLASS_TO_SCHEDULE))}, {RUNTIME_CLASS})")
    if setup.schedule_class == RUNTIME_CLASS and not setup.schedule_csv:
        raise BridgeError(f"{src}: SCHEDULE_CSV: {RUNTIME_CLASS} needs the op order as CSV")
