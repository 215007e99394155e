// What the exporters share: reading a plan and its profile into a PlanShape (layer
// roles, per-stage cuts, ranks, batch arithmetic), and the dispatch by target.
// Invariant: every check that more than one framework needs is made here, once.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "interop/export.h"
#include "llm/collectives.h"
#include "llm/framework.h"
#include "llm/layout_search.h"
#include "llm/plan_layout.h"
#include "llm/profile_layers.h"

namespace pipescope {

namespace {

constexpr ExportTargetInfo kExportTargets[] = {
    {ExportTarget::Megatron, "megatron", Framework::Megatron, "Megatron-LM"},
    {ExportTarget::Torch, "torch", Framework::Torch, "torch.distributed.pipelining"},
    {ExportTarget::DeepSpeed, "deepspeed", Framework::DeepSpeed, "DeepSpeed"},
    {ExportTarget::Torchtitan, "torchtitan", Framework::Torch, "torchtitan"},
};

}  // namespace

const ExportTargetInfo& export_target_info(ExportTarget target) {
  for (const ExportTargetInfo& info : kExportTargets) {
    if (info.target == target) return info;
  }
  throw InputError("--to: unknown target");
}

ExportTarget export_target_of(Framework framework) {
  for (const ExportTargetInfo& info : kExportTargets) {
    if (info.framework == framework) return info.target;  // the first: the framework's own name
  }
  throw InputError("--to: unknown framework");
}

ExportTarget parse_export_target(const std::string& name) {
  std::string names;
  for (const ExportTargetInfo& info : kExportTargets) {
    if (info.name == name) return info.target;
    names += names.empty() ? "" : ", ";
    names += info.name;
  }
  throw InputError("--to: expected one of " + names + ", got \"" + name + "\"");
}

int PlanShape::decoder_total() const {
  int n = 0;
  for (int c : decoder_layers) n += c;
  return n;
}

namespace {

// 'E' for an embedding, 'L' for an LM head, 't' for anything else (a decoder layer).
char layer_role(const LayerProfile& layer) {
  if (!layer.spec.is_object() || !layer.spec.contains("type") || !layer.spec["type"].is_string()) return 't';
  const std::string type = layer.spec["type"].get<std::string>();
  if (type == "embedding" || type == "hf_embedding") return 'E';
  if (type == "lm_head" || type == "hf_lm_head") return 'L';
  return 't';
}

int64_t spec_int(const Profile& profile, const char* key, int64_t fallback) {
  for (const LayerProfile& l : profile.layers) {
    if (l.spec.is_object() && l.spec.contains(key) && l.spec[key].is_number_integer()) return l.spec[key].get<int64_t>();
  }
  return fallback;
}

std::string str(int64_t v) { return std::to_string(v); }

// What the layout says that only the profile can check: t (when the profile states it)
// and the decoder layers of each chunk. The rest of the layout against the plan (p, v,
// schedule, d, M, b, recompute) plan_layout checks for every reader (llm/plan_layout.h).
void check_t_and_cut(const PlanShape& s, bool profile_states_t) {
  const ParallelLayout& l = *s.layout;
  auto same = [](const std::string& field, int64_t layout_value, const std::string& plan_what, int64_t plan_value) {
    if (layout_value != plan_value) {
      refuse_layout(field, str(layout_value) + ", but the plan has " + plan_what + " " + str(plan_value));
    }
  };
  if (profile_states_t) same("t", l.t, "a profile of tensor-parallel size", s.tensor_parallel);
  if (!l.layers_per_chunk.empty() && l.layers_per_chunk != s.decoder_layers) {
    auto list = [](const std::vector<int>& v) {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        out += str(v[i]);
      }
      out += "]";
      return out;
    };
    std::string why = list(l.layers_per_chunk);
    why += ", but the plan's stages hold ";
    why += list(s.decoder_layers);
    why += " decoder layers";
    refuse_layout("layers_per_chunk", why);
  }
  (void)rank_groups_json(l, s.gpus_per_node);  // the order must parse
}

// A job planned for one framework, exported to another: the target's own checks
// (validate_job: its schedules, shardings and runtime) and its memory reserve hold, and
// the header states the target's prediction. Refused, naming job.framework, when the
// target would not run the job or it would not fit there.
void retarget_job(PlanShape& s, Framework target, const GpuModel& gpu) {
  const Framework planned = s.job->framework;
  const std::string name = to_string(target);
  const std::string planned_as = "\"" + to_string(planned) + "\": the job was planned for " + to_string(planned);
  Job job = *s.job;
  job.framework = target;
  // the target runs its own overlap of what was asked (Megatron-LM's overlapped p2p is not torch's)
  ParallelLayout& l = job.layout;
  set_framework_overlap(target, l.overlap_grad_reduce, l.overlap_param_gather, l, l.overlap_p2p);
  try {
    validate_job(job, job.layout.gpus(), nullptr, &*s.job_gpu);
  } catch (const InputError& e) {
    throw InputError("", "job.framework", planned_as + ", and " + name + " would not run it: " + e.what() +
                                              "; plan it with --framework " + name);
  }
  JobReport predicted = evaluate_job(job, gpu);
  const std::vector<RankMemory>& ranks = predicted.memory.stages;
  const RankMemory& binding = ranks[static_cast<std::size_t>(binding_rank(ranks))];
  const double usable = job_usable_bytes(job, s.gpu_memory_bytes);
  if (binding.total() > usable) {
    char gb[96];
    std::snprintf(gb, sizeof gb, "%.2f GB, more than the %.2f GB usable", binding.total() / 1e9, usable / 1e9);
    throw InputError("", "job.framework", planned_as + "; as " + name + " runs it, pipeline rank " +
                                              str(binding.rank) + " needs " + gb + "; plan it with --framework " + name);
  }
  s.planned_for = planned;
  s.layout = job.layout;
  s.job = std::move(job);
  s.predicted = std::move(predicted);
}

}  // namespace

std::string predicted_lines(const PlanShape& s, const std::string& comment) {
  if (!s.job || !s.predicted) return "";
  const Job& job = *s.job;
  const double step_s = s.predicted->time.step_ns * 1e-9;
  char line[256];
  std::snprintf(line, sizeof line, "pipescope predicts (%s, %d GPUs on %s): step %.3f s, %.1f sequences/s, MFU %.1f%%, bubble %.3f",
                job.shape.name.c_str(), job.layout.gpus(), job.cluster.gpu.c_str(), step_s,
                job.layout.global_batch() / step_s, 100 * s.predicted->time.mfu, s.predicted->time.bubble);
  std::string out = comment + line + "\n";
  if (s.planned_for) {
    out += comment + "as " + to_string(job.framework) + " runs it (its schedules, shardings and memory reserve checked); " +
           "the job was planned for " + to_string(*s.planned_for) + ": plan with --framework " +
           to_string(job.framework) + " for " + to_string(job.framework) + "'s best layout\n";
  }
  out += comment + "peak per GPU by pipeline rank (GB = 1e9 bytes: weights + gradients + optimizer + activations):\n";
  for (const RankMemory& m : s.predicted->memory.stages) {
    std::snprintf(line, sizeof line, "  rank %d: %.2f GB = %.2f + %.2f + %.2f + %.2f", m.rank, m.total() / 1e9,
                  m.parameter_bytes / 1e9, m.gradient_bytes / 1e9, m.optimizer_bytes / 1e9, m.activation_bytes / 1e9);
    out += comment + line + "\n";
  }
  const double headroom = job_headroom_bytes(job, s.gpu_memory_bytes);
  out += comment + binding_rank_line(s.predicted->memory.stages, s.gpu_memory_bytes, headroom) + "\n";
  return out;
}

Json predicted_json(const PlanShape& s) {
  if (!s.job || !s.predicted) return nullptr;
  Json ranks = Json::array();
  for (const RankMemory& m : s.predicted->memory.stages) ranks.push_back(rank_memory_to_json(m));
  const std::vector<RankMemory>& stages = s.predicted->memory.stages;
  const int binding = binding_rank(stages);
  const double headroom = job_headroom_bytes(*s.job, s.gpu_memory_bytes);
  const double margin = job_usable_bytes(*s.job, s.gpu_memory_bytes) - stages[static_cast<std::size_t>(binding)].total();
  return {{"step_ns", s.predicted->time.step_ns}, {"framework", to_string(s.job->framework)},
          {"planned_for", to_string(s.planned_for.value_or(s.job->framework))}, {"gpu", s.job->cluster.gpu}, {"gpus", s.job->layout.gpus()},
          {"global_batch", s.job->layout.global_batch()}, {"ranks", ranks}, {"binding_rank", binding},
          {"headroom_bytes", json_number(headroom)}, {"margin_bytes", json_number(margin)}};
}

void refuse_layout(const std::string& field, const std::string& why) { throw InputError("", "layout." + field, why); }

Json rank_groups_json(const ParallelLayout& layout, int gpus_per_node) {
  Json out = Json::object();
  for (Group g : {Group::Tp, Group::Cp, Group::Ep, Group::Dp, Group::Pp}) {
    GroupPlacement where;
    try {
      where = group_placement(layout, g, gpus_per_node);
    } catch (const InputError& e) {
      throw InputError("", "layout." + std::string(e.what()), "");
    }
    std::vector<int> first;
    for (int i = 0; i < where.size; ++i) first.push_back(i * where.stride);
    out[to_string(g)] = {{"size", where.size}, {"stride", where.stride}, {"ranks_per_node", where.per_node},
                         {"crosses_nodes", where.crosses_nodes}, {"first_group", first}};
  }
  return out;
}

PlanShape analyse_plan(const Plan& plan, const Profile& profile, ExportTarget target, std::optional<int> gpus_per_node) {
  const std::string framework = export_target_info(target).label;
  const std::string where;  // the caller names the plan file
  if (!profile.is_chain()) throw InputError(where, "", framework + " pipelines a chain of layers; the profile has branches (edges)");
  check_plan_layers(plan, profile.num_layers(), profile.source);
  PlanShape s;
  s.gpus_per_node = gpus_per_node.value_or(8);
  s.p2p = plan.p2p.value_or(P2p::Overlapped);
  s.chunks = plan.chunks;
  s.positions = plan.pipeline_devices();
  s.microbatches = plan.microbatches;
  s.global_batch = plan.batch_size;
  if (plan.schedule_file.empty()) s.schedule = plan.schedule;  // a file has no torch class
  s.schedule_name = plan.schedule_file.empty() ? to_string(plan.schedule) : "file:" + plan.schedule_name();
  s.recompute = plan.recompute;
  s.dtype = dtype_from_name(profile.dtype);
  s.tensor_parallel = static_cast<int>(spec_int(profile, "tensor_parallel", 1));
  const bool profile_states_t = spec_int(profile, "tensor_parallel", 0) > 0;
  s.sequence = spec_int(profile, "sequence", 0);
  for (const LayerProfile& l : profile.layers) {
    s.roles.push_back(layer_role(l));
    s.layer_names.push_back(l.name);
  }
  for (std::size_t i = 0; i < s.roles.size(); ++i) {
    const bool misplaced = (s.roles[i] == 'E' && i != 0) || (s.roles[i] == 'L' && i + 1 != s.roles.size());
    if (misplaced) throw InputError(profile.source, "layers[" + std::to_string(i) + "]", "an embedding must be the first layer and an LM head the last");
  }
  s.ranges = plan.layer_ranges();
  s.replicas = static_cast<int>(plan.stages.front().devices.size());
  for (int st = 0; st < s.stages(); ++st) {
    const std::vector<int>& devices = plan.stages[st].devices;
    if (static_cast<int>(devices.size()) != s.replicas) {
      throw InputError(where, "stages[" + std::to_string(st) + "].devices",
                       framework + " runs one data-parallel size for every pipeline stage; stage " + std::to_string(st) +
                           " has " + std::to_string(devices.size()) + " replicas, stage 0 has " + std::to_string(s.replicas));
    }
    int position = -1;
    for (int p = 0; p < s.positions && position < 0; ++p) {
      if (plan.stages[p].devices == devices) position = p;
    }
    if (position < 0) throw InputError(where, "stages[" + std::to_string(st) + "].devices", "not the devices of any of the first " + std::to_string(s.positions) + " stages");
    s.stage_position.push_back(position);
    int decoders = 0;
    for (int l = s.ranges[st].first; l < s.ranges[st].second; ++l) decoders += s.roles[l] == 't' ? 1 : 0;
    s.decoder_layers.push_back(decoders);
  }
  const int64_t per_step = static_cast<int64_t>(s.microbatches) * s.replicas;
  if (s.global_batch % per_step != 0) {
    throw InputError(where, "batch_size", framework + " needs a whole number of samples per micro-batch per replica; " +
                                              std::to_string(s.global_batch) + " samples over " + std::to_string(s.microbatches) +
                                              " micro-batches x " + std::to_string(s.replicas) + " replicas is not");
  }
  s.microbatch_size = s.global_batch / per_step;
  const Schedule schedule = schedule_for(plan);
  if (schedule.asynchronous()) {  // pipedream, 2bw, or a schedule file of theirs
    throw InputError(where, "schedule", "\"" + s.schedule_name + "\" runs steps without a flush and updates weights "
                                            "asynchronously; " + framework + " flushes every step and updates the "
                                            "weights once after it, so it would train a different model; plan without "
                                            "--allow-async to export, or run it with `pipescope run`");
  }
  for (const std::vector<Op>& ops : schedule.position_ops) {
    std::vector<std::string>& row = s.torch_csv.emplace_back();
    for (const Op& op : ops) {  // PyTorch has no recompute action: its stages re-run forwards themselves
      if (op.kind != OpKind::Recompute) row.push_back(std::to_string(op.stage) + op_letter(op.kind) + std::to_string(op.microbatch));
    }
  }
  s.layout = plan_layout(plan);
  if (std::optional<PlannedJob> planned = plan_job_on_gpu(plan)) {
    s.job = std::move(planned->job);
    s.job_gpu = std::move(planned->gpu);
    const int planned_nodes = s.job->cluster.gpus_per_node;
    if (gpus_per_node && *gpus_per_node != planned_nodes) {  // its prediction and groups are for its nodes
      throw InputError("--gpus-per-node " + str(*gpus_per_node) + ": the job was planned on nodes of " +
                       str(planned_nodes) + " GPUs (job.cluster.gpus_per_node, " + s.job->cluster.gpu +
                       "'s), which its prediction and rank groups are for; plan it on a GPU file with nodes of " +
                       str(*gpus_per_node) + " to export that");
    }
    s.gpus_per_node = planned_nodes;
  }
  s.plan_dir = std::filesystem::path(plan.source).parent_path().string();
  if (!s.layout && profile_states_t) {  // a v1 plan: the export's t is the profile's
    if (const std::optional<TransformerShape> shape = transformer_shape_of(profile, s.tensor_parallel)) {
      ParallelLayout implied;
      implied.t = s.tensor_parallel;
      try {
        check_model_against_layout(*shape, implied);
      } catch (const InputError& e) {
        throw InputError(profile.source, "spec.tensor_parallel", e.what());
      }
    }
  }
  if (s.layout) {
    const bool one_pipeline = s.replicas == 1 && s.layout->d > 1;  // as plan_layout reads it
    // the model's checks every framework makes at launch (t | heads, ep | experts, cp | sequence)
    // and a transformer profile's cut, as validate and simulate make them, and what the
    // target's framework refuses: a job's were made when it was read, under its framework
    // (retarget_job makes them under another); a v2 plan's model is its profile's
    if (!s.job) check_layout_against_profile(*s.layout, plan, profile);
    check_t_and_cut(s, profile_states_t);  // also for profiles that state no shape
    if (!s.job) {  // then what the target's framework refuses of the layout
      const FrameworkOffer& offer = framework_offer(export_target_info(target).framework);
      if (const std::string why = framework_refusal(offer, *s.layout); !why.empty()) throw plan_check_error("", why, "");
    }
    s.tensor_parallel = s.layout->t;
    if (one_pipeline) {  // the step's batch is every pipeline's
      s.replicas = s.layout->d;
      s.global_batch = s.microbatch_size * s.microbatches * s.replicas;
    }
  }
  return s;
}

ExportResult export_plan(const Plan& plan, const Profile& profile, ExportTarget target, const std::string& plan_name,
                         bool torch_csv, std::optional<int> gpus_per_node) {
  const ExportTargetInfo& info = export_target_info(target);
  const std::string framework = info.label;
  if (gpus_per_node && *gpus_per_node < 1) {
    throw InputError("--gpus-per-node: expected a positive integer, got " + str(*gpus_per_node));
  }
  if (plan.offload.active()) {  // the plan's memory rests on it: dropping it would run out of memory at launch
    throw InputError("", "offload", "the plan sends activations to host memory (" + to_string(plan.offload.policy) +
                                        "), which " + framework + " cannot run as planned: " +
                                        activation_offload_refusal(info.framework) +
                                        "; plan without --offload to export it, or run it with `pipescope run`");
  }
  PlanShape shape = analyse_plan(plan, profile, target, gpus_per_node);
  if (shape.job) {  // the header states what pipescope predicted, as `simulate --plan` prints it
    const GpuModel& gpu = *shape.job_gpu;
    shape.gpu_memory_bytes = static_cast<double>(gpu.node.memory_bytes);
    // torchtitan refuses a job planned for another framework itself (export_torchtitan.cpp).
    if (target != ExportTarget::Torchtitan && shape.job->framework != info.framework) {
      retarget_job(shape, info.framework, gpu);
    } else {
      shape.predicted = evaluate_job(*shape.job, gpu);
    }
  }
  ExportResult result = [&] {
    switch (target) {
      case ExportTarget::Megatron: return export_megatron(shape);
      case ExportTarget::Torch: return export_torch(shape, plan_name, torch_csv);
      case ExportTarget::DeepSpeed: return export_deepspeed(shape, plan_name);
      case ExportTarget::Torchtitan: return export_torchtitan(shape, plan_name, torch_csv);
    }
    throw InputError("--to: unknown target");
  }();
  // --json's object: a pipescope.export (schemas/export.schema.json); "target_version" is
  // the framework's release the export was written for.
  result.json["format"] = "pipescope.export";
  result.json["version"] = 1;
  return result;
}

}  // namespace pipescope
