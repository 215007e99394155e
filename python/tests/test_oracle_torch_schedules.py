"""torch.distributed.pipelining (torch 2.13.0) as the oracle for schedule orders and CSV files
(docs/interop.md).

Expectations, each against PyTorch's own code, built with fake stage objects (no process
group: a schedule class reads only `stage_index`, `num_stages`, `group_size`, `group_rank`,
`is_first`/`is_last` and `submod` at construction):

1. Where pipescope has the schedule, PyTorch's per-rank compute order (its `pipeline_order`,
   communication and REDUCE_GRAD actions dropped, idle None slots dropped) equals
   `pipescope schedule --format csv` cell for cell, over ranks K = 2..8 and micro-batches
   M = K..4K (M >= 2K for DualPipeV, which needs it; the M each class accepts):
     gpipe = ScheduleGPipe, 1f1b = Schedule1F1B, interleaved = ScheduleInterleaved1F1B
     (v = 1, 2 stages per rank; M a multiple of K, pipescope's rule), zb-h1 =
     ScheduleInterleavedZeroBubble with one stage per rank (ZB1P), zb-v =
     ScheduleZBVZeroBubble, dualpipev = ScheduleDualPipeV (its F&B pairs as
     "(aFm;bBn)OVERLAP_F_B" cells, which pipescope writes the same way), looped-bfs =
     ScheduleLoopedBFS and interleaved-zb = ScheduleInterleavedZeroBubble (v = 1, 2 stages
     per rank; also M = 1 and K - 1; interleaved-zb refuses the M torch refuses).
   For the single-stage classes (GPipe, 1F1B) `pipeline_order` is only a description; the
   order they run is `_step_microbatches`, recorded here through the fake stage's
   forward_one_chunk / backward_one_chunk and compared too. For the runtime classes the
   order run is `pipeline_order_with_comms`, whose compute actions are checked to keep
   `pipeline_order`'s order.
   Known difference, asserted as such: Schedule1F1B._get_pipeline_order in 2.13 numbers the
   last rank's forwards from 1 (F1 .. FM instead of F0 .. F(M-1): `forward_mb` starts at 0
   and is incremented before its first use when the rank has no warm-up forwards). The
   order it runs (_step_microbatches) is F0 .. F(M-1) and equals pipescope's.
2. ScheduleLoopedBFS at 1 and 2 stages per rank and ScheduleInterleavedZeroBubble at 2 stages
   per rank (which pipescope also generates, above), written by PyTorch's own
   `_dump_csv(format="compute_only")`, are read by pipescope op for op (`schedule
   --schedule-file`) and simulated (`simulate --schedule-file --json`, exit 0, one JSON
   object with a positive step time and a bubble in [0, 1)).
3. PyTorch's CSV loader (`_PipelineScheduleRuntime._load_csv(path, format="compute_only")`,
   which validates the order with `_validate_schedule` and lowers it with send/recv)
   accepts every CSV pipescope writes for every flushed generator, and infers the same
   stage -> rank map as pipescope's schedule JSON states.
4. `export --to torch` names the class of pipescope's schedule, and refuses a plan exactly
   when torch 2.13's constructor refuses its M (GPipe with M < K included: 2.9's
   PipelineScheduleSingle refused it, 2.13 does not; pipescope's exporter targets 2.13; 2.13 checks
   it in Schedule1F1B and ScheduleDualPipeV only).
5. A v2 plan's layout: the export's MESH_DIM_NAMES / MESH_SHAPE, laid out by torch's own
   DeviceMesh (built with _init_backend=False: no process group; its _MeshLayout gives each
   dimension's groups as DeviceMesh would create them), form for tp, cp, dp and pp exactly
   the groups the export's "groups" states: the group of rank 0, and on 8-GPU nodes the
   ranks per node and whether a group crosses nodes. With ep > 1 (t = 1), the expert mesh
   EXPERT_MESH_DIM_NAMES / EXPERT_MESH_SHAPE, laid out the same way (as torchtitan's
   ParallelDims.build_mesh unflattens the world: (pp, dp_replicate, efsdp, ep)), forms every
   ep group the export's "groups" states (Megatron-Core's expert RankGenerator, llm/'s) and
   efsdp groups of d cp / ep ranks, for FSDP2 and DDP; an ep torchtitan's ParallelDims
   refuses exits 2 naming layout.ep.
"""

import csv
import functools
import json
import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PIPESCOPE = os.environ.get("PIPESCOPE_BIN", os.path.join(REPO, "build", "bin", "pipescope"))
TORCH_VERSION = "2.13.0"

pytestmark = pytest.mark.skipif(not os.path.exists(PIPESCOPE),
                                reason=f"pipescope binary not built at {PIPESCOPE}")

# The pinned package is required: a missing one fails the import, it is not skipped.
import torch  # noqa: E402
from torch.distributed.pipelining import schedules as S  # noqa: E402
from helpers import moe_profile  # noqa: E402

RANKS = range(2, 9)


def microbatch_grid(K, low=None):
    """M from K (or `low`) to 4K: the ends, both sides of 2K, 3K, and K + 1 (one past a
    round), which is where the warm-up / cool-down counts change. The whole K..4K range
    (PIPESCOPE_ORACLE_FULL_GRID=1) takes ~3x as long on 2 cores; it passes too."""
    low = K if low is None else low
    if os.environ.get("PIPESCOPE_ORACLE_FULL_GRID"):
        return list(range(low, 4 * K + 1))
    return sorted(m for m in {low, low + 1, 2 * K - 1, 2 * K, 2 * K + 1, 3 * K, 4 * K} if low <= m <= 4 * K)


def test_pinned_version():
    assert torch.__version__.split("+")[0] == TORCH_VERSION


# ------------------------------------------------------------------ fakes


class FakeStage:
    """What the schedule classes read from a stage, plus recording of the compute calls
    that the single-stage classes' _step_microbatches makes (no communication: every
    get_*_ops returns no ops, so _batch_p2p is given nothing to send)."""

    def __init__(self, stage_index, num_stages, group_size, group_rank):
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = group_rank
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1
        self.submod = None  # not an nn.Module: _check_torch_compile_compatibility skips it
        self.has_backward = True
        self.calls = []

    def get_fwd_recv_ops(self, mb):
        return []

    get_fwd_send_ops = get_bwd_recv_ops = get_bwd_send_ops = get_fwd_recv_ops

    def forward_one_chunk(self, mb, args, kwargs=None, save_forward_output=True):
        self.calls.append(f"{self.stage_index}F{mb}")

    def backward_one_chunk(self, mb, loss=None, full_backward=True, last_backward=False):
        self.calls.append(f"{self.stage_index}B{mb}")

    def clear_runtime_states(self):
        pass

    def perform_reduce_grad(self, scale):
        pass


def looped_stages(K, v, rank):
    return [FakeStage(rank + i * K, K * v, K, rank) for i in range(v)]


def v_stages(K, rank):
    return [FakeStage(rank, 2 * K, K, rank), FakeStage(2 * K - 1 - rank, 2 * K, K, rank)]


def compute_cells(order, K):
    """PyTorch's order as compute-only CSV cells per rank: str(action) for F, B, I, W and
    OVERLAP_F_B ("(0F3;3B1)OVERLAP_F_B"); None, send/recv, UNSHARD, RESHARD, REDUCE_GRAD dropped."""
    return [[str(a) for a in order[r] if a is not None and a.is_compute_op] for r in range(K)]


def flat_compute(cells):
    out = []
    for c in cells:
        out.extend(c[1:c.index(")")].split(";") if c.startswith("(") else [c])
    return out


# ------------------------------------------------------------------ pipescope


def run(*args, ok=True):
    r = subprocess.run([PIPESCOPE, *map(str, args)], capture_output=True, text=True, timeout=60)
    if ok:
        assert r.returncode == 0, f"pipescope {' '.join(map(str, args))}: {r.stderr}"
    return r


@functools.lru_cache(maxsize=None)
def _pipescope_csv(name, K, M, v):
    r = run("schedule", "--schedule", name, "--stages", K, "--microbatches", M, "--chunks", v, "--format", "csv")
    return tuple(tuple(row) for row in csv.reader(r.stdout.splitlines()))


def pipescope_csv(name, K, M, v=1):
    return [list(row) for row in _pipescope_csv(name, K, M, v)]


def pipescope_stage_position(name, K, M, v=1):
    r = run("schedule", "--schedule", name, "--stages", K, "--microbatches", M, "--chunks", v, "--format", "json")
    return json.loads(r.stdout)["stage_position"]  # schedule file v2


# ------------------------------------------------------------------ 1. orders


def single_case(cls, K, M):
    """(pipeline_order cells, executed order per rank) of a single-stage class."""
    order = None
    executed = []
    for rank in range(K):
        stage = FakeStage(rank, K, K, rank)
        sched = cls(stage, M)
        sched._initialize_stage = lambda *a, **k: None  # p2p warm-up and shape inference need a group
        sched._step_microbatches()
        executed.append(stage.calls)
        order = sched.pipeline_order  # every rank's, the same from any rank
    return compute_cells(order, K), executed


@pytest.mark.parametrize("K", RANKS)
def test_gpipe_equals_schedule_gpipe(K):
    for M in microbatch_grid(K):
        ir, executed = single_case(S.ScheduleGPipe, K, M)
        ours = pipescope_csv("gpipe", K, M)
        assert ir == ours, (K, M)
        assert executed == ours, (K, M)


@pytest.mark.parametrize("K", RANKS)
def test_1f1b_equals_schedule_1f1b(K):
    for M in microbatch_grid(K):
        ir, executed = single_case(S.Schedule1F1B, K, M)
        ours = pipescope_csv("1f1b", K, M)
        # What Schedule1F1B runs is pipescope's order, on every rank.
        assert executed == ours, (K, M)
        # Its description equals it on every rank but the last ...
        assert ir[:-1] == ours[:-1], (K, M)
        # ... where torch 2.13 numbers the forwards from 1 (see the module doc). Should a
        # later torch fix it, this fails: then compare ir == ours on every rank.
        shifted = [re.sub(r"F(\d+)$", lambda m: f"F{int(m.group(1)) + 1}", c) for c in ours[-1]]
        assert ir[-1] == shifted, (K, M)


def multi_case(cls, K, M, v, shape):
    """pipeline_order cells of a runtime class, checking that the lowered order it runs
    (pipeline_order_with_comms) keeps the compute order on every rank."""
    stages = v_stages(K, 0) if shape == "v" else looped_stages(K, v, 0)
    sched = cls(stages, M)
    cells = compute_cells(sched.pipeline_order, K)
    lowered = compute_cells(sched.pipeline_order_with_comms, K)
    assert [flat_compute(r) for r in lowered] == [flat_compute(r) for r in cells], (cls.__name__, K, M, v)
    return cells


def torch_accepts_rounds(K, M):
    # ScheduleInterleaved1F1B / ScheduleInterleavedZeroBubble: rounds = max(1, M // K), M % rounds == 0.
    rounds = max(1, M // K)
    return M % rounds == 0


@pytest.mark.parametrize("v", [1, 2])
@pytest.mark.parametrize("K", RANKS)
def test_interleaved_equals_schedule_interleaved_1f1b(K, v):
    # M a multiple of K (pipescope's rule, Megatron-LM's microbatch group of K):
    # the orders are the same, M = K included (Megatron-Core 0.16.1 and torch 2.13 agree).
    for M in range(K, 4 * K + 1, K):
        assert multi_case(S.ScheduleInterleaved1F1B, K, M, v, "loop") == pipescope_csv("interleaved", K, M, v), (K, M, v)


@pytest.mark.parametrize("K", [2, 3, 4])
def test_interleaved_refuses_what_torch_runs_with_flexible_rounds(K):
    # Known difference: torch runs M not a multiple of K when M % max(1, M // K) == 0
    # (e.g. K = 3, M = 4: one round of 4); pipescope refuses it (exit 2), naming M and K,
    # as its interleaved generator keeps Megatron's group of K micro-batches.
    for M in range(K + 1, 2 * K):
        assert torch_accepts_rounds(K, M)
        multi_case(S.ScheduleInterleaved1F1B, K, M, 2, "loop")
        r = run("schedule", "--schedule", "interleaved", "--stages", K, "--microbatches", M, "--chunks", 2, ok=False)
        assert r.returncode == 2 and "multiple" in r.stderr, r.stderr


@pytest.mark.parametrize("K", RANKS)
def test_zb_h1_equals_interleaved_zero_bubble_with_one_stage_per_rank(K):
    # ZB1P with one stage per rank is ZB-H1 (Qi et al. 2024); torch builds it for the M
    # where M % max(1, M // K) == 0, and there the orders are the same.
    compared = 0
    for M in microbatch_grid(K):
        if not torch_accepts_rounds(K, M):
            with pytest.raises(ValueError):
                S.ScheduleInterleavedZeroBubble(looped_stages(K, 1, 0), M)
            continue
        assert multi_case(S.ScheduleInterleavedZeroBubble, K, M, 1, "loop") == pipescope_csv("zb-h1", K, M), (K, M)
        compared += 1
    assert compared >= 4


@pytest.mark.parametrize("K", RANKS)
def test_zb_v_equals_schedule_zbv_zero_bubble(K):
    for M in microbatch_grid(K):
        assert multi_case(S.ScheduleZBVZeroBubble, K, M, 2, "v") == pipescope_csv("zb-v", K, M, 2), (K, M)


@pytest.mark.parametrize("v", [1, 2])
@pytest.mark.parametrize("K", RANKS)
def test_looped_bfs_equals_schedule_looped_bfs(K, v):
    # Breadth-first takes any M; every M of the grid, and M < K, are the same order.
    for M in sorted({1, max(1, K - 1), *microbatch_grid(K)}):
        assert multi_case(S.ScheduleLoopedBFS, K, M, v, "loop") == pipescope_csv("looped-bfs", K, M, v), (K, M, v)


@pytest.mark.parametrize("v", [1, 2])
@pytest.mark.parametrize("K", RANKS)
def test_interleaved_zb_equals_schedule_interleaved_zero_bubble(K, v):
    # Both run max(1, M // K) rounds and refuse M that is not a multiple of them: the orders
    # are the same where torch builds one, and pipescope exits 2 (naming microbatches) where
    # torch raises ValueError.
    compared = 0
    for M in sorted({1, max(1, K - 1), *microbatch_grid(K)}):
        if not torch_accepts_rounds(K, M):
            with pytest.raises(ValueError):
                S.ScheduleInterleavedZeroBubble(looped_stages(K, v, 0), M)
            r = run("schedule", "--schedule", "interleaved-zb", "--stages", K, "--microbatches", M, "--chunks", v, ok=False)
            assert r.returncode == 2 and "microbatches" in r.stderr, r.stderr
            continue
        ours = pipescope_csv("interleaved-zb", K, M, v)
        assert multi_case(S.ScheduleInterleavedZeroBubble, K, M, v, "loop") == ours, (K, M, v)
        compared += 1
    assert compared >= 4


@pytest.mark.parametrize("K", RANKS)
def test_dualpipev_equals_schedule_dualpipev(K):
    # Both need M >= 2K; the F&B pairs are the same cells, "(aFm;bBn)OVERLAP_F_B".
    for M in microbatch_grid(K, low=2 * K):
        assert multi_case(S.ScheduleDualPipeV, K, M, 2, "v") == pipescope_csv("dualpipev", K, M, 2), (K, M)
    with pytest.raises(ValueError):
        S.ScheduleDualPipeV(v_stages(K, 0), 2 * K - 1)
    assert run("schedule", "--schedule", "dualpipev", "--stages", K, "--microbatches", 2 * K - 1, ok=False).returncode == 2


# ------------------------------------------------------------------ 2. torch-only classes


TORCH_ONLY = [(S.ScheduleLoopedBFS, 1), (S.ScheduleLoopedBFS, 2), (S.ScheduleInterleavedZeroBubble, 2)]


@pytest.mark.parametrize("cls,v", TORCH_ONLY, ids=lambda x: getattr(x, "__name__", str(x)))
@pytest.mark.parametrize("K", [2, 4, 8])
def test_pipescope_reads_and_simulates_torch_only_schedules(cls, v, K, tmp_path):
    profile = os.path.join(REPO, "profiles", "toy-uniform.json")  # 16 equal layers, no split times
    for M in (K, 2 * K):
        sched = cls(looped_stages(K, v, 0), M)
        path = tmp_path / f"{cls.__name__}_{K}_{M}.csv"
        sched._dump_csv(str(path), format="compute_only")  # PyTorch's own writer (None = empty cell)
        torch_rows = compute_cells(sched.pipeline_order, K)
        # pipescope reads it op for op: written back, the rows are PyTorch's less its idle cells.
        back = list(csv.reader(run("schedule", "--schedule-file", path, "--format", "csv").stdout.splitlines()))
        assert back == torch_rows, (cls.__name__, K, M, v)
        r = run("simulate", "--schedule-file", path, "--profile", profile, "--json")
        prediction = json.loads(r.stdout)  # exactly one JSON object on stdout
        assert prediction["format"] == "pipescope.prediction"
        assert (prediction["devices"], prediction["microbatches"]) == (K, M)
        assert prediction["simulated_ops"] == sum(len(row) for row in torch_rows)
        assert prediction["step_time_ms"] > 0
        assert 0 <= prediction["bubble_fraction"] < 1
        if cls is S.ScheduleLoopedBFS:
            # Uniform stages, free communication, M >= K: breadth-first's bubble is
            # interleaving's, (K - 1) / (v M + K - 1) (design.md's oracle; Lamy-Poirier 2023).
            assert prediction["bubble_fraction"] == pytest.approx((K - 1) / (v * M + K - 1), abs=1e-12)


# ------------------------------------------------------------------ 3. torch's loader


GENERATORS = [("gpipe", 1, "loop"), ("1f1b", 1, "loop"), ("interleaved", 2, "loop"), ("interleaved", 3, "loop"),
              ("zb-h1", 1, "loop"), ("zb-h2", 1, "loop"), ("zb-auto", 1, "loop"), ("zb-v", 2, "v"),
              ("dualpipev", 2, "v"), ("looped-bfs", 2, "loop"), ("interleaved-zb", 2, "loop"), ("v-min", 2, "v"),
              ("v-half", 2, "v"), ("v-zb", 2, "v")]


@pytest.mark.parametrize("name,v,shape", GENERATORS, ids=lambda x: str(x))
@pytest.mark.parametrize("K", [2, 3, 8])
def test_torch_loader_accepts_every_pipescope_csv(name, v, shape, K, tmp_path):
    M = 2 * K
    rows = pipescope_csv(name, K, M, v)
    stage_position = pipescope_stage_position(name, K, M, v)
    path = tmp_path / f"{name}_{K}_{M}.csv"
    path.write_text("".join(",".join(r) + "\n" for r in rows))
    for rank in range(K):  # every rank loads the whole file, as each process would
        stages = v_stages(K, rank) if shape == "v" else looped_stages(K, v, rank)
        runtime = S._PipelineScheduleRuntime(stages, M)
        runtime._load_csv(str(path), format="compute_only")
        assert compute_cells(runtime.pipeline_order, K) == rows, (name, K, M)
        assert [runtime.stage_index_to_group_rank[s] for s in range(K * v)] == stage_position, (name, K, M)
        assert len(runtime.pipeline_order_with_comms) == K


@pytest.mark.parametrize("K", [2, 4])
def test_torch_dualpipev_csv_simulates_as_pipescope_generator(K, tmp_path):
    # ScheduleDualPipeV's own CSV, read by pipescope, keeps its F&B pairs: with layers that
    # save fb_overlap_ms per overlapped pair, the prediction equals the generator's, and
    # the same order with the pairs split into plain cells is slower (no overlap).
    with open(os.path.join(REPO, "profiles", "toy-uniform.json"), encoding="utf-8") as f:
        profile = json.load(f)
    for layer in profile["layers"]:
        layer["fb_overlap_ms"] = [t / 2 for t in layer["forward_ms"]]
    profile_path = tmp_path / "overlap.json"
    profile_path.write_text(json.dumps(profile))
    M = 4 * K
    sched = S.ScheduleDualPipeV(v_stages(K, 0), M)
    torch_csv = tmp_path / "dualpipev.csv"
    sched._dump_csv(str(torch_csv), format="compute_only")
    flat_csv = tmp_path / "flat.csv"
    flat_csv.write_text("".join(",".join(flat_compute(row)) + "\n" for row in compute_cells(sched.pipeline_order, K)))

    def step(*source):
        return json.loads(run("simulate", *source, "--profile", profile_path, "--json").stdout)["step_time_ms"]

    generator = step("--schedule", "dualpipev", "--stages", K, "--microbatches", M, "--chunks", 2)
    assert step("--schedule-file", torch_csv) == generator
    assert step("--schedule-file", flat_csv) > generator


# ------------------------------------------------------------------ 4. export --to torch

EXPORT_ROWS = [("gpipe", S.ScheduleGPipe, 1, "single"), ("1f1b", S.Schedule1F1B, 1, "single"),
               ("interleaved", S.ScheduleInterleaved1F1B, 2, "loop"),
               ("zb-h1", S.ScheduleInterleavedZeroBubble, 1, "loop"),
               ("zb-v", S.ScheduleZBVZeroBubble, 2, "v"), ("dualpipev", S.ScheduleDualPipeV, 2, "v"),
               ("looped-bfs", S.ScheduleLoopedBFS, 2, "loop"),
               ("interleaved-zb", S.ScheduleInterleavedZeroBubble, 2, "loop")]


def torch_accepts(cls, K, M, v, shape):
    try:
        if shape == "single":
            cls(FakeStage(0, K, K, 0), M)
        else:
            cls(v_stages(K, 0) if shape == "v" else looped_stages(K, v, 0), M)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("name,cls,v,shape", EXPORT_ROWS, ids=lambda x: getattr(x, "__name__", str(x)))
def test_export_names_the_class_and_refuses_what_torch_refuses(name, cls, v, shape, tmp_path):
    # `export --to torch` names the class pipescope's schedule maps to, and refuses (exit
    # 2, naming micro-batches) a plan whose M the class's constructor refuses. Known
    # 2.13 checks M >= stages in Schedule1F1B and ScheduleDualPipeV only (2.9 checked it for
    # every single-stage class); the exporter follows 2.13.
    profile = os.path.join(REPO, "profiles", "toy-uniform.json")
    for K in (2, 4):
        S_ = K * v
        cuts = [round(i * 16 / S_) for i in range(S_ + 1)]
        rank_of = [s % K if shape != "v" else (s if s < K else 2 * K - 1 - s) for s in range(S_)]
        for M in sorted({1, K - 1, K, K + 1, 2 * K - 1, 2 * K, 3 * K} - {0}):
            if name == "interleaved" and M % K:
                continue  # pipescope's interleaved generator needs M a multiple of K (tested above)
            plan = {"format": "pipescope.plan", "version": 1, "profile": profile, "batch_size": M, "microbatches": M,
                    "schedule": {"kind": name, "chunks": v}, "recompute": False,
                    "stages": [{"layers": [cuts[s], cuts[s + 1]], "devices": [rank_of[s]]} for s in range(S_)]}
            path = tmp_path / f"{name}_{K}_{M}.json"
            path.write_text(json.dumps(plan))
            r = run("export", "--plan", path, "--to", "torch", "--json", ok=False)
            torch_ok = torch_accepts(cls, K, M, v, shape)
            if r.returncode == 0:
                assert torch_ok, (name, K, M)
                assert json.loads(r.stdout)["schedule_class"] == cls.__name__
                continue
            assert r.returncode == 2, r.stderr
            # refused by the exporter, or by pipescope's generator before it (dualpipev M < 2K)
            assert not torch_ok, (name, K, M, r.stderr)


# ------------------------------------------------------------------ 5. a layout's device mesh

MESH_LAYOUTS = [  # (t, cp, d, p, v, order)
    (8, 1, 128, 16, 1, "tp-cp-ep-dp-pp"),  # Llama-3-405B-shaped: 16,384 GPUs
    (2, 2, 4, 2, 1, "tp-cp-ep-dp-pp"),
    (4, 1, 2, 4, 2, "tp-cp-ep-pp-dp"),
    (1, 1, 8, 2, 1, "dp-tp-cp-ep-pp"),
]


@pytest.mark.parametrize("t,cp,d,p,v,order", MESH_LAYOUTS)
def test_layout_mesh_groups_are_device_meshs(t, cp, d, p, v, order, tmp_path):
    from torch.distributed.device_mesh import DeviceMesh

    profile = os.path.join(REPO, "profiles", "gpt-1.3b-h200.json")  # 26 layers
    S = p * v
    cuts = [round(26 * s / S) for s in range(S + 1)]
    M = 2 * p
    plan = {"format": "pipescope.plan", "version": 2, "profile": profile, "batch_size": M * d, "microbatches": M,
            "schedule": {"kind": "interleaved" if v > 1 else "1f1b", "chunks": v}, "recompute": False,
            "stages": [{"layers": [cuts[s], cuts[s + 1]], "devices": [(s % p) * d + k for k in range(d)]} for s in range(S)],
            "layout": {"t": t, "cp": cp, "d": d, "p": p, "v": v, "micro_batch": 1, "microbatches": M, "order": order,
                       # torch runs cp > 1 sharded over the cp ranks only (torchtitan's FSDP2 mesh)
                       "sharding": "zero-3" if cp > 1 else "none"}}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    exported = json.loads(run("export", "--plan", path, "--to", "torch", "--json").stdout)
    world = t * cp * d * p
    names, shape = exported["mesh_dim_names"], exported["mesh_shape"]
    mesh = DeviceMesh("cpu", torch.arange(world).view(*shape), mesh_dim_names=tuple(names), _init_backend=False, _rank=0)
    for name in names:
        groups = mesh._get_slice_mesh_layout((name,)).remap_to_tensor(mesh._rank_map).tolist()
        said = exported["groups"][name]
        assert groups[0] == said["first_group"], (name, groups[0])
        assert len(groups) * said["size"] == world
        for group in groups:
            per_node = {}
            for r in group:
                per_node[r // 8] = per_node.get(r // 8, 0) + 1
            assert set(per_node.values()) == {said["ranks_per_node"]}, (name, group[:16])
            assert (len(per_node) > 1) == said["crosses_nodes"], (name, group[:16])


EXPERT_LAYOUTS = [  # (cp, d, p, ep, sharding): t = 1, torchtitan's experts are whole
    (1, 8, 2, 4, "zero-3"),
    # DDP (sharding none) with ep > 1 is refused: torch runs cp > 1 only sharded, and at cp = 1
    # dp_shard * cp * tp = 1 leaves no ranks for ep (llm/framework.cpp runtime_refusal)
    (4, 4, 1, 8, "zero-2"),
    (2, 64, 1, 16, "zero-3"),
]


def expert_plan(tmp_path, cp, d, p, ep, sharding):
    # 26 layers; experts in its blocks, as expert parallelism needs (ep on a dense model is refused)
    profile = moe_profile(os.path.join(REPO, "profiles", "gpt-1.3b-h200.json"), tmp_path)
    cuts = [round(26 * s / p) for s in range(p + 1)]
    M = 2 * p
    plan = {"format": "pipescope.plan", "version": 2, "profile": profile, "batch_size": M * d, "microbatches": M,
            "schedule": {"kind": "1f1b", "chunks": 1}, "recompute": False,
            "stages": [{"layers": [cuts[s], cuts[s + 1]], "devices": [s * d + k for k in range(d)]} for s in range(p)],
            "layout": {"t": 1, "cp": cp, "d": d, "p": p, "ep": ep, "micro_batch": 1, "microbatches": M,
                       "sharding": sharding}}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


@pytest.mark.parametrize("cp,d,p,ep,sharding", EXPERT_LAYOUTS)
def test_layout_expert_mesh_groups_are_device_meshs(cp, d, p, ep, sharding, tmp_path):
    from torch.distributed.device_mesh import DeviceMesh

    exported = json.loads(run("export", "--plan", expert_plan(tmp_path, cp, d, p, ep, sharding), "--to", "torch",
                              "--json").stdout)
    world = cp * d * p
    names, shape = exported["expert_mesh_dim_names"], exported["expert_mesh_shape"]
    assert exported["expert_parallel_size"] == ep
    mesh = DeviceMesh("cpu", torch.arange(world).view(*shape), mesh_dim_names=tuple(names), _init_backend=False, _rank=0)
    groups = {name: mesh._get_slice_mesh_layout((name,)).remap_to_tensor(mesh._rank_map).tolist()
              for name in ("ep", "efsdp")}
    said = exported["groups"]["ep"]
    assert said["size"] == ep and {len(g) for g in groups["ep"]} == {ep}
    assert groups["ep"][0] == said["first_group"], groups["ep"][0]
    for group in groups["ep"]:
        per_node = {}
        for r in group:
            per_node[r // 8] = per_node.get(r // 8, 0) + 1
        assert set(per_node.values()) == {said["ranks_per_node"]} and (len(per_node) > 1) == said["crosses_nodes"]
    # An expert's replicas: dp_replicate x efsdp = d cp / ep, llm/memory.cpp's expert data-parallel
    # group; FSDP2 (dp_replicate 1) shards the expert over all of them, DDP over none.
    dp_replicate = shape[names.index("dp_replicate")]
    assert dp_replicate == (1 if sharding.startswith("zero") else d)
    assert {len(g) * dp_replicate for g in groups["efsdp"]} == {d * cp // ep}


def test_layout_expert_parallel_torchtitan_refuses_exits_two(tmp_path):
    # DDP at cp 1: torchtitan's dp_shard * cp * tp = 1, which ep 4 does not divide (at cp 2 DDP is
    # refused before: torchtitan shards over the cp ranks).
    r = run("export", "--plan", expert_plan(tmp_path, 1, 8, 2, 4, "none"), "--to", "torch", ok=False)
    assert r.returncode == 2 and ("layout.ep: --expert-model-parallel-size: ep = 4 does not divide torchtitan's "
                                  "dp_shard * cp * tp = 1 * 1 * 1") in r.stderr, r.stderr
