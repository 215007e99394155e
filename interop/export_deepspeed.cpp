// A Python file that builds a plan's DeepSpeed PipelineModule and its config (names of
// DeepSpeed 0.18.9 - 0.19.x: deepspeed/runtime/pipe/module.py, topology.py,
// runtime/constants.py). DeepSpeed cuts by partition_method ('uniform', 'parameters',
// 'type:regex'); a plan's cuts are the module's `parts` list (stage p holds layers
// parts[p] .. parts[p+1]-1). When the plan's parts are what 'uniform' computes, the file
// uses 'uniform'; otherwise it overrides _partition_layers to install the parts.
// A v2 plan's layout adds zero_optimization.stage (0; 1 for the distributed optimizer;
// 2 or 3 only at p = 1, without a pipeline), the precision and, for ep > 1, AutoEP's
// expert_parallel section (autoep_size = ep, at t = 1); what DeepSpeed cannot run of a
// layout is llm/framework.h's framework_refusal, made before any export (analyse_plan).
// Invariant: DeepSpeed runs only its 1F1B TrainSchedule, one stage per rank; any other
// schedule is refused, naming it.
#include <sstream>

#include "core/error.h"
#include "interop/export.h"
#include "llm/framework.h"

namespace pipescope {

namespace {

// deepspeed.runtime.utils.partition_uniform(num_items, num_parts).
std::vector<int> deepspeed_uniform(int items, int parts) {
  std::vector<int> out(parts + 1, 0);
  if (items <= parts) {
    for (int p = 0; p <= parts; ++p) out[p] = std::min(p, items);
    return out;
  }
  const int chunk = items / parts, residual = items - chunk * parts;
  for (int p = 0; p <= parts; ++p) out[p] = p * chunk;
  for (int i = 0; i < residual; ++i) {
    for (int p = i + 1; p <= parts; ++p) out[p] += 1;
  }
  return out;
}

std::string py_ints(const std::vector<int>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// zero_optimization.stage of a sharding (deepspeed/runtime/zero/config.py ZeroStageEnum):
// the distributed optimizer shards the optimizer state, ZeRO-1.
int zero_stage(Sharding sharding) {
  switch (sharding) {
    case Sharding::None: return 0;
    case Sharding::DistributedOptimizer: return 1;
    case Sharding::Zero2: return 2;
    case Sharding::Zero3: return 3;
  }
  return 0;
}

}  // namespace

ExportResult export_deepspeed(const PlanShape& s, const std::string& plan_name) {
  if (s.positions > 1 && (s.schedule != ScheduleKind::OneFOneB || s.chunks != 1)) {
    throw InputError("", "schedule", "DeepSpeed's PipelineEngine runs only its 1F1B TrainSchedule with one stage per rank, not \"" +
                                     s.schedule_name + "\"" + (s.chunks > 1 ? " with " + std::to_string(s.chunks) + " chunks" : "") +
                                     "; plan with --schedules 1f1b to export to DeepSpeed");
  }
  std::vector<int> parts;
  for (const auto& r : s.ranges) parts.push_back(r.first);
  parts.push_back(s.ranges.back().second);
  const int layers = parts.back();
  const bool uniform = parts == deepspeed_uniform(layers, s.positions);
  int most = 0;
  for (const auto& r : s.ranges) most = std::max(most, r.second - r.first);
  // A layout's full recompute keeps each layer's input: one layer per checkpoint.
  const int checkpoint_interval = s.layout ? (s.layout->recompute == Recompute::Full ? 1 : 0) : s.recompute == Recompute::Full ? most : 0;
  Json config = {{"train_batch_size", s.global_batch},
                 {"train_micro_batch_size_per_gpu", s.microbatch_size},
                 {"gradient_accumulation_steps", s.microbatches}};
  if (s.layout) {
    if (s.layout->precision == PrecisionRecipe::Bf16Mixed) config["bf16"] = {{"enabled", true}};
    // overlap_comm: the gradient reduce overlapped with the last micro-batch's backward, as timed.
    config["zero_optimization"] = {{"stage", zero_stage(s.layout->sharding)}, {"overlap_comm", s.layout->overlap_grad_reduce}};
    // AutoEP (deepspeed/module_inject/auto_ep*.py): DeepSpeed detects the model's MoE layers and
    // replaces them; ep groups are consecutive ranks of a stage, the experts' data-parallel
    // (ZeRO) group the ranks d / ep apart (auto_ep_folding.expected_folding_group_tables), what
    // llm/ counts (Megatron-Core's expert RankGenerator, ep fastest, at t = 1).
    if (s.layout->ep > 1) config["expert_parallel"] = {{"enabled", true}, {"autoep_size", s.layout->ep}};
  } else {
    if (s.dtype == Dtype::Bf16) config["bf16"] = {{"enabled", true}};
    if (s.dtype == Dtype::Fp16) config["fp16"] = {{"enabled", true}};
  }

  std::ostringstream py;
  py << "\"\"\"DeepSpeed pipeline setup for " << plan_name << ", written by `pipescope export --to deepspeed`.\n"
     << "Targets " << kDeepSpeedVersion << ". `layers` must be the profile's layers in order (LAYER_NAMES), as\n"
     << "LayerSpec or nn.Module; run under the deepspeed launcher with " << s.world_size() << " ranks.\n"
     << "`python3 this_file.py` prints the config without importing deepspeed.\n"
     << (s.positions == 1 ? "NUM_STAGES = 1: no pipeline. Give deepspeed.initialize(model=..., config=DS_CONFIG) your model\n"
                            "(the layers in order; under ACTIVATION_CHECKPOINT_INTERVAL = 1 each layer's forward wrapped in\n"
                            "deepspeed.checkpointing.checkpoint); make_pipeline_module is for NUM_STAGES > 1, since\n"
                            "DeepSpeed's PipelineEngine refuses ZeRO-2 / 3.\n"
                          : "")
     << "\"\"\"\n"
     << predicted_lines(s, "# ")  // a job's plan: what pipescope predicted, to hold the launch to
     << "import json\n\n"
     << "NUM_STAGES = " << s.positions << "\n"
     << "DATA_PARALLEL_SIZE = " << s.replicas << "\n"
     << "MODEL_PARALLEL_SIZE = " << s.tensor_parallel << "\n"
     << "PARTS = " << py_ints(parts) << "  # stage p holds layers PARTS[p] .. PARTS[p+1]-1\n"
     << "PARTITION_METHOD = \"" << (uniform ? "uniform" : "pipescope") << "\"  # "
     << (uniform ? "DeepSpeed's own uniform split gives PARTS" : "PARTS installed by PlannedPipelineModule") << "\n"
     << "ACTIVATION_CHECKPOINT_INTERVAL = " << checkpoint_interval << "  # 0 = no re-materialisation\n"
     << "LAYER_NAMES = " << Json(s.layer_names).dump() << "\n"
     << "DS_CONFIG = json.loads('" << config.dump() << "')  # the ds_config batch" << (!s.layout ? "" : s.layout->ep > 1 ? ", precision, ZeRO and AutoEP" : ", precision and ZeRO")
     << " settings\n\n\n"
     << "def make_pipeline_module(layers, loss_fn, **kwargs):\n"
     << "    from deepspeed.pipe import PipelineModule\n"
     << "    from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology\n\n"
     << "    class PlannedPipelineModule(PipelineModule):\n"
     << "        def _partition_layers(self, method=\"uniform\"):\n"
     << "            if method != \"pipescope\":\n"
     << "                return super()._partition_layers(method=method)\n"
     << "            stage_id = self._topo.get_coord(self.global_rank).pipe\n"
     << "            self.parts = list(PARTS)\n"
     << "            self._set_bounds(start=self.parts[stage_id], stop=self.parts[stage_id + 1])\n\n"
     << "    assert len(layers) == PARTS[-1], f\"expected {PARTS[-1]} layers ({LAYER_NAMES[0]} .. {LAYER_NAMES[-1]})\"\n"
     << "    topology = PipeModelDataParallelTopology(num_pp=NUM_STAGES, num_mp=MODEL_PARALLEL_SIZE, num_dp=DATA_PARALLEL_SIZE)\n"
     << "    return PlannedPipelineModule(layers=layers, topology=topology, loss_fn=loss_fn,\n"
     << "                                 partition_method=PARTITION_METHOD,\n"
     << "                                 activation_checkpoint_interval=ACTIVATION_CHECKPOINT_INTERVAL, **kwargs)\n\n\n"
     << "if __name__ == \"__main__\":\n"
     << "    print(json.dumps({\"num_stages\": NUM_STAGES, \"parts\": PARTS, \"partition_method\": PARTITION_METHOD,\n"
     << "                      \"activation_checkpoint_interval\": ACTIVATION_CHECKPOINT_INTERVAL, \"config\": DS_CONFIG}))\n";
  Json json = {{"target", "deepspeed"}, {"target_version", kDeepSpeedVersion}, {"parts", parts},
               {"partition_method", uniform ? "uniform" : "pipescope"},
               {"activation_checkpoint_interval", checkpoint_interval}, {"config", config},
               {"num_stages", s.positions}, {"data_parallel_size", s.replicas}};
  if (s.layout) {
    json["zero_stage"] = config["zero_optimization"]["stage"];
    json["groups"] = rank_groups_json(*s.layout, s.gpus_per_node);
  }
  if (s.job) json["predicted"] = predicted_json(s);
  return {py.str(), json};
}

}  // namespace pipescope
