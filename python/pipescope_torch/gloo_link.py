"""The link between two gloo ranks on this machine, measured: latency and bandwidth for a
pipescope hardware file, so predictions of `pipescope_torch run` charge what a transfer costs.

Invariant: one-way time = half the median round trip of a blocking send + recv pair; latency
is that time for a 4-byte message, bandwidth is bytes / (time - latency) for `size` bytes.

    link = measure_gloo_link()          # {"latency_us": ..., "bandwidth_gb_per_s": ...}
    python -m pipescope_torch.gloo_link --times 3   # the median of 3 measurements, as JSON

A single measurement can land in a slow spell of the VM (1229 us measured once against 76-89
us in three runs just after, 2026-12-06): benchmarks take the median of several, each run
as its own command so that `chrt -f 1` can hold it.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def _pingpong(rank: int, store: str, sizes, repeats: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    results = {}
    for size in sizes:
        buf = torch.zeros(max(1, size // 4))
        times = []
        for i in range(repeats + 2):
            dist.barrier()
            t0 = time.perf_counter_ns()
            if rank == 0:
                dist.send(buf, 1)
                dist.recv(buf, 1)
            else:
                dist.recv(buf, 0)
                dist.send(buf, 0)
            if i >= 2:
                times.append(time.perf_counter_ns() - t0)
        results[size] = statistics.median(times) / 2
    if rank == 0:
        with open(out, "w") as f:
            json.dump({str(k): v for k, v in results.items()}, f)
    dist.destroy_process_group()


def measure_gloo_link(size: int = 4 << 20, repeats: int = 20) -> dict:
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "link.txt")
        mp.start_processes(_pingpong, args=(os.path.join(d, "store"), [4, size], repeats, out), nprocs=2,
                           start_method="spawn")
        with open(out) as f:
            one_way = json.load(f)
    latency_ns = one_way["4"]
    per_byte_ns = max(one_way[str(size)] - latency_ns, 1.0) / size
    return {"latency_us": latency_ns / 1e3, "bandwidth_gb_per_s": 1.0 / per_byte_ns}


def hardware_file(link: dict, devices: int = 2, memory_bytes: int = 0) -> dict:
    memory = memory_bytes or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"format": "pipescope.hardware", "version": 1, "name": f"{devices} gloo ranks on one CPU (measured)",
            "devices": devices, "memory_bytes": int(memory),
            "link": {"bandwidth_gb_per_s": round(link["bandwidth_gb_per_s"], 3),
                     "latency_us": round(link["latency_us"], 1)}}


def median_link(times: int) -> dict:
    """The median latency and bandwidth of `times` measurements, with each one kept."""
    if times < 1:
        raise ValueError(f"--times: expected at least 1, got {times}")
    runs = [measure_gloo_link() for _ in range(times)]
    return {"latency_us": statistics.median(r["latency_us"] for r in runs),
            "bandwidth_gb_per_s": statistics.median(r["bandwidth_gb_per_s"] for r in runs),
            "measurements": runs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m pipescope_torch.gloo_link",
                                 description="Measure the gloo link between two ranks on this machine; print JSON.")
    ap.add_argument("--times", type=int, default=3, help="measurements; the median is printed (default 3)")
    args = ap.parse_args(argv)
    if args.times < 1:
        print(f"pipescope_torch.gloo_link: --times: expected at least 1, got {args.times}", file=sys.stderr)
        return 2
    print(json.dumps(median_link(args.times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
