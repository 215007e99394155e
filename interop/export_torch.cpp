// A short Python file that sets a plan up with torch.distributed.pipelining (names and
// constructor arguments of PyTorch 2.13's torch/distributed/pipelining/schedules.py and
// _IR.py): split points (the first module of each stage after the first, as
// SplitPoint.BEGINNING), the schedule class, n_microbatches, and which stages each
// pipeline rank builds; for a schedule with no class (or on request) the compute-only
// CSV a _PipelineScheduleRuntime loads. Invariant: the stage -> rank map the file uses
// is the plan's, and it is the one the class expects ("loop": s % K, "v": V shape).
// A v2 plan's layout adds the device mesh (torch.distributed.device_mesh, dimensions in
// the layout's rank order), the tensor / sequence / context parallel sizes, expert
// parallelism as torchtitan's ParallelDims and meshes, the FSDP2 sharding and the
// activation checkpointing, or refuses the field torch cannot say.
#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "interop/export.h"
#include "interop/torch_schedule.h"
#include "llm/framework.h"

namespace pipescope {

namespace {

// One row per pipescope schedule a torch class runs. Extend here when pipescope builds a
// new schedule PyTorch has a class for.
constexpr TorchSchedule kTorchSchedules[] = {
    {ScheduleKind::GPipe, "ScheduleGPipe", "GPipe", true, "loop", false},
    {ScheduleKind::OneFOneB, "Schedule1F1B", "1F1B", true, "loop", true},
    {ScheduleKind::Interleaved, "ScheduleInterleaved1F1B", "Interleaved1F1B", false, "loop", false},
    // ZB1P; one stage per rank = ZB-H1
    {ScheduleKind::ZeroBubbleH1, "ScheduleInterleavedZeroBubble", "InterleavedZeroBubble", false, "loop", false},
    {ScheduleKind::ZeroBubbleV, "ScheduleZBVZeroBubble", "ZBVZeroBubble", false, "v", false},  // exactly two stages per rank
    {ScheduleKind::DualPipeV, "ScheduleDualPipeV", "DualPipeV", false, "v", true},
    {ScheduleKind::LoopedBFS, "ScheduleLoopedBFS", "LoopedBFS", false, "loop", false, false},  // any M
    {ScheduleKind::InterleavedZeroBubble, "ScheduleInterleavedZeroBubble", "InterleavedZeroBubble", false, "loop", false},
};

}  // namespace

const TorchSchedule* torch_schedule(ScheduleKind kind) {
  for (const TorchSchedule& r : kTorchSchedules) {
    if (r.kind == kind) return &r;
  }
  return nullptr;
}

int torch_stage_rank(const char* placement, int stage, int K) {
  if (std::string(placement) == "v") return stage < K ? stage : 2 * K - 1 - stage;
  return stage % K;
}

// PyTorch 2.13's constructors: Schedule1F1B and ScheduleDualPipeV refuse fewer micro-batches
// than stages (ScheduleGPipe takes them: 2.9's PipelineScheduleSingle refused them too); the interleaved and zero-bubble classes run max(1, M / K) rounds and refuse M
// that is not a multiple of them. The stage -> rank map must be the class's.
void check_torch_class(const TorchSchedule& row, const PlanShape& s) {
  for (int st = 0; st < s.stages(); ++st) {
    const int rank = torch_stage_rank(row.placement, st, s.positions);
    if (s.stage_position[st] != rank) {
      throw InputError("", "stages[" + std::to_string(st) + "].devices", std::string(row.torch_class) + " places stage " +
                           std::to_string(st) + " on rank " + std::to_string(rank) + " (" + row.placement +
                           "), the plan on rank " + std::to_string(s.stage_position[st]));
    }
  }
  if (row.needs_m_ge_stages && s.microbatches < s.stages()) {
    throw InputError("", "microbatches", std::string(row.torch_class) + " needs at least as many micro-batches as stages (" +
                                             std::to_string(s.stages()) + "), the plan has " + std::to_string(s.microbatches));
  }
  const int rounds = std::max(1, s.microbatches / s.positions);
  if (!row.single_stage && std::string(row.placement) == "loop" && row.needs_rounds && s.microbatches % rounds != 0) {
    throw InputError("", "microbatches", std::string(row.torch_class) + " needs the micro-batches (" +
                                             std::to_string(s.microbatches) + ") to be a multiple of its rounds max(1, M / K) = " +
                                             std::to_string(rounds));
  }
}

namespace {

std::string py_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + Json(items[i]).dump();
  return out + "]";
}

std::string py_ints(const std::vector<int>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + std::to_string(items[i]);
  return out + "]";
}

std::string csv_text(const PlanShape& s) {
  std::string out;
  for (const std::vector<std::string>& row : s.torch_csv) {
    for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + row[i];
    out += "\n";
  }
  return out;
}

// The body of build_schedule after the stages exist: a class, or the CSV runtime.
std::string schedule_code(const TorchSchedule* row) {
  if (row != nullptr) {
    return std::string("    schedule_class = getattr(schedules, SCHEDULE_CLASS)\n") + "    return schedule_class(" +
           (row->single_stage ? "stages[0]" : "stages") + ", n_microbatches=N_MICROBATCHES, loss_fn=loss_fn)\n";
  }
  return "    import os\n"
         "    import tempfile\n"
         "    schedule = schedules._PipelineScheduleRuntime(stages, n_microbatches=N_MICROBATCHES, loss_fn=loss_fn)\n"
         "    with tempfile.NamedTemporaryFile(\"w\", suffix=\".csv\", delete=False) as f:\n"
         "        f.write(SCHEDULE_CSV)\n"
         "    schedule._load_csv(f.name, format=\"compute_only\")\n"
         "    os.unlink(f.name)\n"
         "    return schedule\n";
}

// Expert parallelism as torchtitan's ParallelDims lays it out (torchtitan/distributed/
// parallel_dims.py build_mesh): the world unflattened as the dense mesh (pp, dp_replicate,
// dp_shard, cp, tp) and the sparse mesh (pp, dp_replicate, efsdp, ep), ep the fastest
// ranks; efsdp = dp_shard cp tp / ep is the group FSDP2 shards the experts over. Those
// are llm/'s groups (expert data-parallel d cp / ep, Megatron-Core's expert RankGenerator
// numbering ep fastest) only under order tp-cp-ep-dp-pp, t = 1 and the table's
// runtime_refusal, which framework_refusal holds every exported layout to.
std::string expert_constants(const ParallelLayout& l, Json& json) {
  const bool fsdp = l.sharding == Sharding::Zero2 || l.sharding == Sharding::Zero3;
  const int dp_replicate = fsdp ? 1 : l.d, dp_shard = fsdp ? l.d : 1;
  const int efsdp = dp_shard * l.cp * l.t / l.ep;
  json["expert_parallel_size"] = l.ep;
  json["parallel_dims"] = {{"dp_replicate", dp_replicate}, {"dp_shard", dp_shard}, {"cp", l.cp}, {"tp", l.t},
                           {"pp", l.p},                    {"ep", l.ep}};
  json["expert_mesh_dim_names"] = {"pp", "dp_replicate", "efsdp", "ep"};
  json["expert_mesh_shape"] = {l.p, dp_replicate, efsdp, l.ep};
  std::ostringstream py;
  py << "EXPERT_PARALLEL_SIZE = " << l.ep << "  # experts / EXPERT_PARALLEL_SIZE per rank, each whole\n"
     << "PARALLEL_DIMS = dict(dp_replicate=" << dp_replicate << ", dp_shard=" << dp_shard << ", cp=" << l.cp
     << ", tp=" << l.t << ", pp=" << l.p << ", ep=" << l.ep << ")  # torchtitan's ParallelDims\n"
     << "EXPERT_MESH_DIM_NAMES = [\"pp\", \"dp_replicate\", \"efsdp\", \"ep\"]  # world_mesh._unflatten(0, "
        "EXPERT_MESH_SHAPE, EXPERT_MESH_DIM_NAMES)\n"
     << "EXPERT_MESH_SHAPE = " << py_ints({l.p, dp_replicate, efsdp, l.ep})
     << "  # efsdp: the ranks FSDP2 shards each expert over\n";
  return py.str();
}

// The layout as torch names it (PyTorch 2.13: DeviceMesh, DTensor tensor parallelism with
// SequenceParallel, context_parallel, FSDP2 fully_shard, checkpoint_wrapper); what torch does
// not run of it framework_refusal has refused.
std::string layout_constants(const PlanShape& s, Json& json) {
  const ParallelLayout& l = *s.layout;
  // init_device_mesh is row-major (the last dimension fastest): the order reversed, ep left out.
  std::vector<std::string> names;
  std::vector<int> shape;
  std::string name;
  for (std::size_t i = 0; i <= l.order.size(); ++i) {
    if (i < l.order.size() && l.order[i] != '-') {
      name += l.order[i];
      continue;
    }
    if (name != "ep") {
      names.insert(names.begin(), name);
      shape.insert(shape.begin(), name == "tp" ? l.t : name == "cp" ? l.cp : name == "dp" ? l.d : l.p);
    }
    name.clear();
  }
  const char* sharding = l.sharding == Sharding::None                   ? "replicate"
                         : l.sharding == Sharding::DistributedOptimizer ? "zero-1"
                         : l.sharding == Sharding::Zero2                ? "fully_shard(reshard_after_forward=False)"
                                                                        : "fully_shard(reshard_after_forward=True)";
  json["mesh_dim_names"] = names;
  json["mesh_shape"] = shape;
  json["data_parallel_sharding"] = sharding;
  json["activation_checkpoint"] = to_string(l.recompute);
  std::ostringstream py;
  py << "MESH_DIM_NAMES = " << py_list(names) << "  # init_device_mesh(..., mesh_dim_names=...), rank order "
     << l.order << "\n"
     << "MESH_SHAPE = " << py_ints(shape) << "\n"
     << "SEQUENCE_PARALLEL = " << (l.sequence_parallel && l.t > 1 ? "True" : "False")
     << "  # SequenceParallel() for the norms in the tensor-parallel plan\n"
     << "CONTEXT_PARALLEL_SIZE = " << l.cp << "  # torch.distributed.tensor.experimental.context_parallel over \"cp\"\n"
     << "DATA_PARALLEL_SHARDING = \"" << sharding << "\"  # replicate: DDP; zero-1: ZeroRedundancyOptimizer; "
                                                     "fully_shard: FSDP2; over (\"dp\", \"cp\") flattened (cp ranks "
                                                     "hold the same weights: torchtitan's fsdp mesh)\n"
     << "MIXED_PRECISION = " << (l.precision == PrecisionRecipe::Bf16Mixed ? "\"bf16\"" : "None")
     << "  # MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)\n"
     << "ACTIVATION_CHECKPOINT = \"" << to_string(l.recompute)
     << "\"  # full: checkpoint_wrapper on every decoder layer (torchtitan's mode \"full\"); selective: "
        "torchtitan's per-op SelectiveAC (every second matmul recomputed)\n";
  if (l.ep > 1) py << expert_constants(l, json);
  return py.str();
}

}  // namespace

ExportResult export_torch(const PlanShape& s, const std::string& plan_name, bool csv) {
  const TorchSchedule* row = s.schedule ? torch_schedule(*s.schedule) : nullptr;
  if (row != nullptr && !csv) check_torch_class(*row, s);
  if (csv) row = nullptr;  // replay pipescope's op order
  const std::string runtime = row ? row->torch_class : "_PipelineScheduleRuntime";
  std::vector<std::string> splits;
  for (int st = 1; st < s.stages(); ++st) splits.push_back(s.layer_names[s.ranges[st].first]);

  std::ostringstream py;
  py << "\"\"\"torch.distributed.pipelining setup for " << plan_name << ", written by `pipescope export --to torch`.\n"
     << "Targets " << kTorchVersion << ". Under torchrun with WORLD_SIZE = PIPELINE_SIZE x DATA_PARALLEL_SIZE x\n"
     << "TENSOR_PARALLEL_SIZE" << (s.layout && s.layout->cp > 1 ? " x CONTEXT_PARALLEL_SIZE" : "") << " = " << s.world_size()
     << ", call build_schedule(model, example_microbatch, loss_fn, device, pp_group),\n"
     << "pp_group the pipeline dimension of your DeviceMesh,\n"
     << "with your nn.Module: its submodules must carry the names in SPLIT_POINTS.\n"
     << "`python3 this_file.py` prints the plan without importing torch.\n\"\"\"\n"
     << predicted_lines(s, "# ")  // a job's plan: what pipescope predicted, to hold the launch to
     << "import json\n\n"
     << "PIPELINE_SIZE = " << s.positions << "  # pipeline ranks K\n"
     << "DATA_PARALLEL_SIZE = " << s.replicas << "  # replicas of the whole pipeline\n"
     << "TENSOR_PARALLEL_SIZE = " << s.tensor_parallel << "\n"
     << "N_MICROBATCHES = " << s.microbatches << "\n"
     << "MICROBATCH_SIZE = " << s.microbatch_size << "  # samples per micro-batch per replica; step batch = "
     << s.global_batch << "\n"
     << "SCHEDULE_CLASS = \"" << runtime << "\"  # pipescope schedule \"" << s.schedule_name << "\"\n"
     << "SPLIT_POINTS = " << py_list(splits) << "  # first module of stages 1.." << s.stages() - 1 << "\n"
     << "STAGE_RANKS = " << py_ints(s.stage_position) << "  # pipeline rank of each stage\n"
     << "RECOMPUTE = " << (s.recompute == Recompute::Full ? "True" : "False") << "  # keep only each stage's input for backward\n";
  Json layout_json = Json::object();
  if (s.layout) py << layout_constants(s, layout_json);
  if (row == nullptr) {
    py << "# pipescope's op order, one row per rank (_PipelineScheduleRuntime._load_csv, format \"compute_only\")\n"
       << "SCHEDULE_CSV = \"\"\"\\\n" << csv_text(s) << "\"\"\"\n";
  }
  py << "\n\n"
     << "def stages_of_rank(rank):\n"
     << "    return [s for s, r in enumerate(STAGE_RANKS) if r == rank]\n\n\n"
     << "def build_schedule(model, example_microbatch, loss_fn, device, pp_group):\n"
     << "    from torch.distributed.pipelining import SplitPoint, pipeline\n"
     << "    from torch.distributed.pipelining import schedules\n\n"
     << "    split_spec = {name: SplitPoint.BEGINNING for name in SPLIT_POINTS}\n"
     << "    pipe = pipeline(model, mb_args=(example_microbatch,), split_spec=split_spec)\n"
     << "    stages = [pipe.build_stage(s, device, pp_group) for s in stages_of_rank(pp_group.rank())]\n"
     << "    if RECOMPUTE:\n"
     << "        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\n"
     << "        for stage in stages:\n"
     << "            stage.submod = checkpoint_wrapper(stage.submod)\n"
     << schedule_code(row) << "\n\n"
     << "if __name__ == \"__main__\":\n"
     << "    print(json.dumps({\"schedule_class\": SCHEDULE_CLASS, \"n_microbatches\": N_MICROBATCHES,\n"
     << "                      \"split_points\": SPLIT_POINTS, \"stage_ranks\": STAGE_RANKS,\n"
     << "                      \"pipeline_size\": PIPELINE_SIZE, \"data_parallel_size\": DATA_PARALLEL_SIZE}))\n";
  Json json = {{"target", "torch"},          {"target_version", kTorchVersion},      {"schedule_class", runtime},
               {"split_points", splits},     {"stage_ranks", s.stage_position}, {"n_microbatches", s.microbatches},
               {"pipeline_size", s.positions}, {"data_parallel_size", s.replicas}, {"recompute", s.recompute == Recompute::Full}};
  if (row == nullptr) json["schedule_csv"] = s.torch_csv;
  if (s.job) json["predicted"] = predicted_json(s);
  if (s.layout) {
    json.update(layout_json);
    json["tensor_parallel_size"] = s.layout->t;
    json["sequence_parallel"] = s.layout->sequence_parallel && s.layout->t > 1;
    json["context_parallel_size"] = s.layout->cp;
    json["groups"] = rank_groups_json(*s.layout, s.gpus_per_node);
  }
  return {py.str(), json};
}

}  // namespace pipescope
