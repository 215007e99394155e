"""The zero-bubble paper's own scheduler as an oracle for its Table 10 (post-validation against
a synchronized optimizer step): does the gap between pipescope's predicted gain and the
measured one come from pipescope's schedule or simulator?

The paper's runtime plans ZB-1p and ZB-2p with `zb.py` in sail-sg/zero-bubble-pipeline-
parallelism (megatron/core/pipeline_parallel/zerobubble/scheduler/). This script runs that
file unmodified, from a bare clone given with --repo (the `fetch` tool's copy, or any clone),
on the paper's Table 3/6 settings at each model's smallest m, with the runtime's inputs:
cost_f/b/w = T_F, T_B, T_W, cost_comm = T_comm, mem_f = M_F, mem_b = M_W - M_F, mem_w = -M_W
and max_mem = N M_F (N = p for ZB-1p, 2p for ZB-2p). In its own timing model:
  - post-validation's step is its objective, the longest stage's span (first F to last op),
    which is what the paper's bubble (Table 5) is computed from;
  - a synchronized step waits for every stage: the makespan (first F anywhere to the last op
    anywhere); the gain is makespan / span - 1.
It then runs pipescope's `zero_bubble_paper` (its ZB-2p order searched by zb-auto, batched
p2p, several steps simulated) and prints the two predictions beside the measured gain.
Nothing from the clone is kept; `pulp`, which zb.py imports for one call this path never
makes, is stubbed.

    python3 experiments/zero_bubble_scheduler_oracle.py --repo /work/.mirror/sail-sg+zero-bubble-pipeline-parallelism/repo
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEDULER = "megatron/core/pipeline_parallel/zerobubble/scheduler"
# name, layers, heads a, hidden h, sequence s, p, b, m, T_F, T_B, T_W, T_comm (Tables 3 and 6;
# the same figures as experiments/zero_bubble_paper_data.h), measured gain (Table 10).
SETTINGS = [
    ("1.5B", 22, 24, 2304, 1024, 8, 6, 24, 18.522, 18.086, 9.337, 0.601, 14.5 / 13.11 - 1),
    ("6.2B", 30, 64, 4096, 1024, 8, 3, 24, 29.718, 29.444, 19.927, 0.527, 4.32 / 4.00 - 1),
    ("14.6B", 46, 40, 5120, 1024, 16, 1, 48, 11.347, 11.248, 8.132, 0.377, 1.81 / 1.68 - 1),
    ("28.3B", 62, 48, 6144, 1024, 32, 1, 96, 10.419, 10.207, 7.715, 0.408, 0.99 / 0.91 - 1),
]


def extract(git_dir: str, commit: str, into: str) -> None:
    for part in ("megatron", "megatron/core", "megatron/core/pipeline_parallel",
                 "megatron/core/pipeline_parallel/zerobubble", SCHEDULER):
        os.makedirs(os.path.join(into, part), exist_ok=True)
        open(os.path.join(into, part, "__init__.py"), "w").close()
    for name in ("zb.py", "graph.py"):
        text = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{SCHEDULER}/{name}"],
                              capture_output=True, text=True)
        if text.returncode != 0:
            raise SystemExit(f"--repo {git_dir}: {SCHEDULER}/{name} at {commit}: {text.stderr.strip()}")
        with open(os.path.join(into, SCHEDULER, name), "w") as f:
            f.write(text.stdout)
    os.makedirs(os.path.join(into, "pulp"), exist_ok=True)
    with open(os.path.join(into, "pulp", "__init__.py"), "w") as f:
        f.write("def value(x):\n    return x\n")


def their_gain(zb, setting, pending: int):
    name, L, a, h, s, p, b, m, tf, tb, tw, comm, _ = setting
    mem_f = (34 * h * s * b + 5 * a * s * s * b) * L / p  # M_F of L/p layers (the paper's section 3)
    mem_w = 32 * h * s * b * L / p
    config = zb.GraphConfig(cost_f=[tf] * p, cost_b=[tb] * p, cost_w=[tw] * p, cost_comm=comm,
                            mem_f=[mem_f] * p, mem_b=[mem_w - mem_f] * p, mem_w=[-mem_w] * p,
                            max_mem=[pending * mem_f] * p, print_scaling=1000, n_stages=p, n_micro=m)
    graph = zb.Graph.build_graph(p, m, config)
    span, _, done = zb.initial_solution(graph, print_result=False)
    first = min(done[graph.get_id(0, i, 0)] - tf for i in range(p))
    last = max(done[graph.get_id(k, i, j)] for k in range(3) for i in range(p) for j in range(m))
    work = m * (tf + tb + tw)
    return (last - first) / span - 1, (span - work) / span


def pipescope_gains(binary: str) -> dict:
    out = subprocess.run([binary], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{binary}: {out.stderr.strip()}")
    gains = {}
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 10 and cells[-1].endswith("%") and re.fullmatch(r"\d+", cells[2] or "x"):
            gains.setdefault(cells[0], float(cells[-1].rstrip("%")) / 100)  # first row: the smallest m
    return gains


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True, help="git dir of sail-sg/zero-bubble-pipeline-parallelism")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--pipescope-paper", default=os.path.join(REPO, "build", "bin", "zero_bubble_paper"))
    args = ap.parse_args()
    commit = subprocess.run(["git", "--git-dir", args.repo, "rev-parse", "--short", args.commit],
                            capture_output=True, text=True).stdout.strip() or args.commit
    ours = pipescope_gains(args.pipescope_paper)
    with tempfile.TemporaryDirectory() as tmp:
        extract(args.repo, args.commit, tmp)
        sys.path.insert(0, tmp)
        from megatron.core.pipeline_parallel.zerobubble.scheduler import zb  # noqa: E402
        print(f"ZB-2p's gain from post-validation (smallest m), zb.py at {commit} against pipescope and Table 10\n")
        print("| model | p | m | zb.py ZB-2p bubble | zb.py gain | pipescope gain | measured gain |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for setting in SETTINGS:
            gain, bubble = their_gain(zb, setting, 2 * setting[5])
            name = setting[0]
            theirs = ours.get(name)
            print(f"| {name} | {setting[5]} | {setting[7]} | {100 * bubble:.2f}% | {100 * gain:.1f}% | "
                  f"{'-' if theirs is None else f'{100 * theirs:.1f}%'} | {100 * setting[-1]:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
