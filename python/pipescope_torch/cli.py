"""Command line: `python3 -m pipescope_torch profile MODEL --input-shape ... -o OUT.json`.

Invariant: exit 0 means OUT.json holds a complete, validated profile; exit 2 means bad
input, reported as one `pipescope_torch: error: ...` line on stderr, and OUT.json untouched.
Progress goes to stderr, never stdout.
"""

import argparse
import os
import sys
from typing import List, Optional

from pipescope_torch.errors import BridgeError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


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
    p.add_argument("--input-shape", required=True,
                   help="per-sample input shape without the batch dimension, e.g. 3,32,32")
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
    return parser


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
    input_shape = parse_positive_ints(args.input_shape, "--input-shape")
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

    def progress(msg: str) -> None:
        print(f"pipescope_torch: {msg}", file=sys.stderr, flush=True)

    options = MeasureOptions(device=str(device), warmup=args.warmup, repeats=args.repeats,
                             seed=args.seed, verbose=args.verbose, progress=progress)
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
        return EXIT_OK
    except BridgeError as exc:
        print(f"pipescope_torch: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("pipescope_torch: interrupted", file=sys.stderr)
        return 130
