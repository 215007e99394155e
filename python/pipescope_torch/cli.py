"""Command line: `python -m pipescope_torch profile MODEL ...` and `... run --plan PLAN ...`.

Invariant: exit 0 means the output holds a complete, validated profile or measurement; exit 2
means bad input (or a schedule PyTorch cannot run here), exit 3 a run that failed (a rank
raised, or the gradients differ from one process's), each reported as one
`pipescope_torch: error: ...` line on stderr with the output untouched. Progress goes to
stderr; stdout carries only the one JSON object of `run --json`.
"""

import argparse
import os
import sys
from typing import List, Optional

from pipescope_torch.errors import BridgeError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_RUN_FAILED = 0, 1, 2, 3


def parse_positive_ints(text: str, what: str) -> List[int]:
    """'3,32,32' -> [3, 32, 32]; raises BridgeError naming `what` on anything else."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise BridgeError(f"{what} '{text}' must be comma-separated positive integers")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise BridgeError(f"{what} '{text}' must be comma-separated positive integers") from None
    if any(v <= 0 for v in values):
        raise BridgeError(f"{what} '{text}' must be comma-separated positive integers")
    return values


def parse_batch_sizes(text: str) -> List[int]:
    sizes = parse_positive_ints(text, "--batch-sizes")
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise BridgeError(f"--batch-sizes '{text}' must be strictly increasing")
    return sizes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m pipescope_torch",
        description="Measure a PyTorch model layer by layer into a pipescope v1 profile.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("profile", help="profile a model into OUT.json")
    p.add_argument("model", help="path/to/model.py:build_model or package.module:build_model; "
                                 "the callable takes no arguments and returns an nn.Module")
    p.add_argument("--input-shape",
                   help="per-sample input shape without the batch dimension, e.g. 3,32,32 (not needed "
                        "when the model file defines make_batch(batch_size, seed) -> (input, target))")
    p.add_argument("--batch-sizes", default="1,2,4,8",
                   help="strictly increasing micro-batch sizes (default 1,2,4,8)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("-o", "--output", required=True, help="profile JSON to write")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs per layer (default 2)")
    p.add_argument("--repeats", type=int, default=5,
                   help="timed runs per layer; the median is kept (default 5)")
    p.add_argument("--name", help="model name in the profile (default: the file stem)")
    p.add_argument("--threads", type=int, help="torch.set_num_threads for CPU runs")
    p.add_argument("--seed", type=int, default=0, help="seed for the random input (default 0)")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per layer and size")
    p.add_argument("--loss", help="cross_entropy | mse: end the profile with the loss as a layer named 'loss' "
                                  "(spec {\"type\": \"loss\"}), measured on the model's output and a target; "
                                  "a model file's own loss_fn, when it defines one, is the loss measured "
                                  "(the one `run` uses); default: no loss layer")
    _add_run_parser(sub)
    return parser


def _add_run_parser(sub) -> None:
    r = sub.add_parser("run", help="run a plan on torch.distributed.pipelining (CPU, gloo) into a measurement",
                       description="Run a pipescope plan with PyTorch's own pipeline schedules: one process per "
                                   "pipeline rank (gloo, one thread each), the plan's cut of an nn.Sequential model, "
                                   "the schedule class `pipescope export --to torch` names (or its op order "
                                   "through _PipelineScheduleRuntime); checks loss and gradients against one "
                                   "process and writes a pipescope.measurement that `pipescope compare` reads.")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--plan", help="pipescope.plan file (exported through `pipescope export --to torch`)")
    src.add_argument("--setup", help="the Python file `pipescope export --to torch` wrote")
    r.add_argument("--model", required=True, help="path/to/model.py:build_model returning the nn.Sequential "
                                                   "whose children are the profile's layers")
    r.add_argument("--input-shape", help="per-sample input shape, e.g. 64 (not needed when the model file "
                                         "defines make_batch(batch_size, seed))")
    r.add_argument("-o", "--output", help="measurement JSON to write")
    r.add_argument("--trace", help="Chrome trace of every timed step to write (ops, loss, p2p, optimizer)")
    r.add_argument("--kineto", metavar="DIR",
                   help="also run torch.profiler over the timed steps and write its Chrome trace per rank, "
                        "DIR/rank<r>.json (an existing folder), which `pipescope calibrate --trace` reads; "
                        "Schedule1F1B records no PP: action spans, so calibrate refuses its traces")
    # Hidden: times only the ops, to measure what the other spans cost (docs/torch-run.md).
    r.add_argument("--no-trace-detail", action="store_true", help=argparse.SUPPRESS)
    r.add_argument("--json", action="store_true", help="print the measurement as one JSON object on stdout")
    r.add_argument("--steps", type=int, default=5, help="timed steps; the median is reported (default 5)")
    r.add_argument("--warmup", type=int, default=2, help="untimed steps before them (default 2)")
    r.add_argument("--optimizer", default="adam", help="adam | sgd | none, stepped inside each timed step (default adam)")
    r.add_argument("--seed", type=int, default=0, help="seed of the model and the batch (default 0)")
    r.add_argument("--timeout", type=float, default=300.0,
                   help="seconds before every rank is killed and the schedule reported as not runnable (default 300)")
    r.add_argument("--no-check-gradients", action="store_true",
                   help="skip the one-process reference (loss and gradients of the first step)")
    r.add_argument("--tolerance", type=float, default=1e-5, help="largest relative gradient error (default 1e-5)")
    r.add_argument("--torch-csv", action="store_true",
                   help="with --plan: run pipescope's exact op order through _PipelineScheduleRuntime even "
                        "where PyTorch has a schedule class")
    r.add_argument("--oversubscribe", action="store_true", help="run more ranks than cores")
    r.add_argument("--pipescope", help="the pipescope binary (default: $PIPESCOPE_BINARY, ../build/bin, PATH)")
    r.add_argument("--name", help="model name in the measurement (default: the file stem)")


def run_run(args) -> int:
    from pipescope_torch.loader import model_name_from_spec
    from pipescope_torch.profile_json import write_text_atomically
    from pipescope_torch.torch_run import RunFailed, RunRequest, run_plan
    from pipescope_torch.torch_setup import check_setup, find_pipescope, setup_from_file, setup_from_plan

    import json

    if not args.output and not args.json:
        raise BridgeError("run: name an output (-o OUT.json) or pass --json")
    for path in (args.output, args.trace):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise BridgeError(f"output folder '{os.path.dirname(os.path.abspath(path))}' does not exist")
    if args.kineto and not os.path.isdir(args.kineto):
        raise BridgeError(f"--kineto: folder '{args.kineto}' does not exist")
    if args.plan:
        setup = setup_from_plan(args.plan, find_pipescope(args.pipescope), csv=args.torch_csv)
    else:
        if args.torch_csv:
            raise BridgeError("--torch-csv goes with --plan (an exported file already says its schedule)")
        setup = setup_from_file(args.setup)
    check_setup(setup)
    shape = parse_positive_ints(args.input_shape, "--input-shape") if args.input_shape is not None else []

    def progress(msg: str) -> None:
        print(f"pipescope_torch: {msg}", file=sys.stderr, flush=True)

    req = RunRequest(setup=setup, model_spec=args.model, input_shape=shape, steps=args.steps, warmup=args.warmup,
                     seed=args.seed, optimizer=args.optimizer, timeout_s=args.timeout,
                     check_gradients=not args.no_check_gradients, tolerance=args.tolerance,
                     allow_oversubscribe=args.oversubscribe, model_name=args.name or model_name_from_spec(args.model),
                     progress=progress, trace_detail=not args.no_trace_detail,
                     kineto_dir=os.path.abspath(args.kineto) if args.kineto else None)
    try:
        result = run_plan(req)
    except RunFailed as exc:
        print(f"pipescope_torch: error: run failed: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    text = json.dumps(result.measurement, indent=2) + "\n"
    if args.trace:
        write_text_atomically(args.trace, json.dumps(result.trace) + "\n")
    if args.output:
        write_text_atomically(args.output, text)
        progress(f"wrote {args.output}")
    if args.json:
        sys.stdout.write(text)
    return EXIT_OK


def _check_device(text: str):
    import torch

    try:
        device = torch.device(text)
    except RuntimeError:
        raise BridgeError(f"--device '{text}' must be cpu, cuda or cuda:N") from None
    if device.type not in ("cpu", "cuda"):
        raise BridgeError(f"--device '{text}' must be cpu, cuda or cuda:N")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise BridgeError(f"--device {text}: this PyTorch ({torch.__version__}) sees no "
                              "CUDA device")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise BridgeError(f"--device {text}: only {torch.cuda.device_count()} CUDA "
                              "device(s) are visible")
    return device


def run_profile(args) -> None:
    input_shape = parse_positive_ints(args.input_shape, "--input-shape") if args.input_shape is not None else []
    batch_sizes = parse_batch_sizes(args.batch_sizes)
    if args.warmup < 0:
        raise BridgeError(f"--warmup {args.warmup} must be 0 or more")
    if args.repeats < 1:
        raise BridgeError(f"--repeats {args.repeats} must be 1 or more")
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise BridgeError(f"output folder '{folder}' does not exist")

    import torch

    from pipescope_torch.loader import load_model, model_name_from_spec
    from pipescope_torch.measure import MeasureOptions
    from pipescope_torch.profile_json import write_profile_atomically
    from pipescope_torch.profiler import profile_model

    device = _check_device(args.device)
    if args.threads is not None:
        if args.threads < 1:
            raise BridgeError(f"--threads {args.threads} must be 1 or more")
        torch.set_num_threads(args.threads)
    model = load_model(args.model)
    from pipescope_torch.loader import load_callable

    make_batch = getattr(load_callable(args.model)[1], "make_batch", None)
    if make_batch is None and not input_shape:
        raise BridgeError("--input-shape is needed (the model file defines no make_batch(batch_size, seed))")

    def progress(msg: str) -> None:
        print(f"pipescope_torch: {msg}", file=sys.stderr, flush=True)

    loss_entry = None
    if args.loss is not None:
        from pipescope_torch.torch_model import ModelEntry

        loss_entry = ModelEntry.load(args.model, input_shape, args.loss)
    options = MeasureOptions(device=str(device), warmup=args.warmup, repeats=args.repeats,
                             seed=args.seed, verbose=args.verbose, progress=progress, make_batch=make_batch,
                             loss_entry=loss_entry)
    profile = profile_model(model, input_shape, batch_sizes, options,
                            model_name=args.name or model_name_from_spec(args.model))
    write_profile_atomically(args.output, profile)
    progress(f"wrote {args.output} ({len(profile['layers'])} layers, "
             f"{len(profile.get('edges', []))} edges)")


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "profile":
            run_profile(args)
        if args.command == "run":
            return run_run(args)
        return EXIT_OK
    except BridgeError as exc:
        print(f"pipescope_torch: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("pipescope_torch: interrupted", file=sys.stderr)
        return 130
