// A Job's evaluation (step_time and llm_memory, nothing added) and its version 3 plan
// file, field for field: the shape is written whole (vocabulary as padded), so a plan
// re-read needs neither the config it came from nor the flags that shaped it.
#include "llm/job.h"

#include <climits>
#include <filesystem>
#include <memory>

#include "core/atomic_file.h"
#include "core/error.h"
#include "llm/framework.h"
#include "llm/plan_layout.h"

namespace pipescope {

namespace {

int read_count(const JsonReader& r, const std::string& key, int fallback, int min = 0) {
  return r.has(key) ? static_cast<int>(r[key].as_int(min, INT_MAX)) : fallback;
}

bool read_flag(const JsonReader& r, const std::string& key, bool fallback) {
  return r.has(key) ? r[key].as_bool() : fallback;
}

}  // namespace

JobReport evaluate_job(const Job& job, const GpuModel& gpu, const InFlight* walked) {
  return {step_time(job.shape, job.layout, gpu, step_options(job.layout)), llm_memory(job.shape, job.layout, walked)};
}

Json shape_to_json(const TransformerShape& s) {
  return {{"name", s.name},
          {"layers", s.layers},
          {"hidden", s.hidden},
          {"heads", s.heads},
          {"kv_heads", s.kv_heads},
          {"ffn_hidden", s.ffn_hidden},
          {"swiglu", s.swiglu},
          {"bias_linear", s.bias_linear},
          {"vocabulary", s.vocabulary},
          {"sequence", s.sequence},
          {"tied_embeddings", s.tied_embeddings},
          {"rms_norm", s.rms_norm},
          {"qkv_bias", s.qkv_bias},
          {"output_bias", s.output_bias},
          {"mlp_bias", s.mlp_bias},
          {"learned_positions", s.learned_positions},
          {"embedding_dropout", s.embedding_dropout},
          {"kv_channels", s.kv_channels},
          {"experts", s.experts},
          {"moe_topk", s.moe_topk},
          {"moe_ffn_hidden", s.moe_ffn_hidden},
          {"moe_layer_frequency", s.moe_layer_frequency},
          {"shared_expert_ffn_hidden", s.shared_expert_ffn_hidden}};
}

// Every field that changes what is counted is required (a missing ffn_hidden defaulted to 4 h
// moved the step 10% without a word); 0 where the field says so means Megatron's default. Only
// the name and the fields later plans added (output_bias, mlp_bias, learned_positions,
// embedding_dropout: absent in the plans written before them) take their defaults.
TransformerShape shape_from_json(const JsonReader& r) {
  if (!r.json().is_object()) r.fail("expected an object");
  auto count = [&](const char* key, int min) { return static_cast<int>(r[key].as_int(min, INT_MAX)); };
  auto flag = [&](const char* key) { return r[key].as_bool(); };
  TransformerShape s;
  s.name = r.has("name") ? r["name"].as_string() : "";
  s.layers = count("layers", 1);
  s.hidden = count("hidden", 1);
  s.heads = count("heads", 1);
  s.kv_heads = count("kv_heads", 0);
  s.ffn_hidden = count("ffn_hidden", 0);
  s.swiglu = flag("swiglu");
  s.bias_linear = flag("bias_linear");
  s.vocabulary = count("vocabulary", 1);
  s.sequence = count("sequence", 1);
  s.tied_embeddings = flag("tied_embeddings");
  s.rms_norm = flag("rms_norm");
  s.qkv_bias = flag("qkv_bias");
  s.output_bias = read_flag(r, "output_bias", s.output_bias);
  s.mlp_bias = read_flag(r, "mlp_bias", s.mlp_bias);
  s.learned_positions = read_flag(r, "learned_positions", s.learned_positions);
  s.embedding_dropout = read_flag(r, "embedding_dropout", s.embedding_dropout);
  s.kv_channels = count("kv_channels", 0);
  s.experts = count("experts", 0);
  s.moe_topk = count("moe_topk", 0);
  s.moe_ffn_hidden = count("moe_ffn_hidden", 0);
  s.moe_layer_frequency = count("moe_layer_frequency", 1);
  s.shared_expert_ffn_hidden = count("shared_expert_ffn_hidden", 0);
  return s;
}

Json rank_memory_to_json(const RankMemory& m) {
  return {{"rank", m.rank}, {"parameter_bytes", json_number(m.parameter_bytes)},
          {"gradient_bytes", json_number(m.gradient_bytes)}, {"optimizer_bytes", json_number(m.optimizer_bytes)},
          {"activation_bytes", json_number(m.activation_bytes)}, {"total_bytes", json_number(m.total())}};
}

Json job_to_json(const Job& job) {
  Json model = {{"source", job.model_source}, {"shape", shape_to_json(job.shape)}};
  if (job.vocab_size > 0) {
    model["vocab_size"] = job.vocab_size;
    model["make_vocab_size_divisible_by"] = job.vocab_divisible_by;
  }
  Json cluster = {{"gpu", job.cluster.gpu}, {"gpus_per_node", job.cluster.gpus_per_node}};
  if (job.cluster.memory_headroom_bytes >= 0) cluster["memory_headroom_bytes"] = json_number(job.cluster.memory_headroom_bytes);
  return {{"model", model}, {"cluster", cluster}, {"framework", to_string(job.framework)}};
}

double job_headroom_bytes(const Job& job, double capacity) {
  return job.cluster.memory_headroom_bytes >= 0 ? job.cluster.memory_headroom_bytes
                                                : framework_offer(job.framework).reserve.bytes(capacity);
}

double job_usable_bytes(const Job& job, double capacity) { return capacity - job_headroom_bytes(job, capacity); }

Job job_from_json(const JsonReader& r, const JsonReader& layout) {
  if (!r.json().is_object()) r.fail("expected an object");
  Job job;
  const JsonReader model = r["model"];
  job.model_source = model.has("source") ? model["source"].as_string() : "";
  job.shape = shape_from_json(model["shape"]);
  const JsonReader cluster = r["cluster"];
  job.cluster.gpu = cluster["gpu"].as_string();
  if (job.cluster.gpu.empty()) cluster["gpu"].fail("expected a GPU file's name or path");
  job.cluster.gpus_per_node = static_cast<int>(cluster["gpus_per_node"].as_int(1, INT_MAX));
  if (cluster.has("memory_headroom_bytes")) job.cluster.memory_headroom_bytes = cluster["memory_headroom_bytes"].as_double(0);
  const std::string framework = r["framework"].as_string();
  const std::optional<Framework> known = framework_from_name(framework);
  if (!known) r["framework"].fail("expected megatron, torch or deepspeed, got \"" + framework + "\"");
  job.framework = *known;
  job.layout = layout_from_json(layout);
  if (model.has("vocab_size")) {
    job.vocab_size = read_count(model, "vocab_size", 0, 1);
    job.vocab_divisible_by = read_count(model, "make_vocab_size_divisible_by", 128, 1);
    const int padded = padded_vocabulary(job.vocab_size, job.layout.t, job.vocab_divisible_by);
    if (padded != job.shape.vocabulary) {
      model["vocab_size"].fail("padded to a multiple of make_vocab_size_divisible_by " +
                               std::to_string(job.vocab_divisible_by) + " x t " + std::to_string(job.layout.t) +
                               " it is " + std::to_string(padded) + ", not the shape's vocabulary " +
                               std::to_string(job.shape.vocabulary));
    }
  }
  return job;
}

namespace {

// The cluster part of validate_job: what the GPU file says against what the job was planned with.
void check_cluster(const Job& job, const GpuModel& gpu) {
  if (gpu.gpus_per_node() != job.cluster.gpus_per_node) {
    throw InputError("", "job.cluster.gpus_per_node",
                     "the job was planned with " + std::to_string(job.cluster.gpus_per_node) + " GPUs per node, but " +
                         job.cluster.gpu + " now says " + std::to_string(gpu.gpus_per_node()));
  }
  if (job.cluster.memory_headroom_bytes >= 0) {
    const std::string why = headroom_refusal(job.cluster.memory_headroom_bytes, static_cast<double>(gpu.node.memory_bytes));
    if (!why.empty()) throw InputError(why);
  }
}

// What the framework always overlaps, set where the layout left it off (torch's DDP and
// FSDP2, DeepSpeed's ZeRO-3); framework_refusal has refused an overlap it never runs.
void set_forced_overlap(Job& job, std::vector<std::string>* notes) {
  ParallelLayout& l = job.layout;
  const bool grad = l.overlap_grad_reduce, gather = l.overlap_param_gather;
  set_framework_overlap(job.framework, grad, gather, l, l.overlap_p2p);
  if (notes == nullptr) return;
  const std::string name = framework_offer(job.framework).name;
  if (l.overlap_grad_reduce != grad) notes->push_back(name + " overlaps the gradient reduce with backward always: overlap_grad_reduce on");
  if (l.overlap_param_gather != gather) notes->push_back(name + " prefetches the sharded parameters always: overlap_param_gather on");
}

}  // namespace

void validate_job(Job& job, int gpus, std::vector<std::string>* notes, const GpuModel* cluster) {
  const FrameworkOffer& offer = framework_offer(job.framework);
  if (job.layout.schedule) {  // a schedule given: one the framework runs, before the layout's rules on it
    const std::string why = schedule_offer_refusal(offer, *job.layout.schedule);
    if (!why.empty()) throw InputError(why);
  }
  job.layout = validate_layout(job.shape, job.layout, gpus, notes);
  job.layout.selective = selective_policy(job.framework);  // llm/layout.h's SelectivePolicy
  if (const std::string why = framework_refusal(offer, job.layout); !why.empty()) throw InputError(why);
  if (const std::string why = tp_overlap_refusal(job.layout, job.cluster.gpus_per_node); !why.empty()) {
    throw InputError(why);
  }
  set_forced_overlap(job, notes);
  if (cluster != nullptr) check_cluster(job, *cluster);
}

LlmPipeline job_plan(const Job& job, const GpuModel& gpu, const std::string& profile_name) {
  LlmPipeline pipe = llm_pipeline(job.shape, job.layout, gpu);
  pipe.plan.profile = profile_name;
  pipe.plan.layout = layout_to_json(job.layout);
  pipe.plan.job = job_to_json(job);
  return pipe;
}

void write_job_plan(Job job, const GpuModel& gpu, const std::string& gpu_as_given, const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path out_path(out);
  std::error_code ec;
  job.cluster.gpu = gpu_as_given;
  if (fs::is_regular_file(gpu_as_given, ec)) {
    job.cluster.gpu = fs::relative(fs::absolute(gpu_as_given), fs::absolute(out_path).parent_path(), ec).generic_string();
  }
  const std::string profile = out_path.stem().string() + ".profile.json";
  const LlmPipeline pipe = job_plan(job, gpu, profile);
  write_files_atomically({{(out_path.parent_path() / profile).string(), profile_to_json(pipe.profile).dump(1) + "\n"},
                          {out, plan_to_json(pipe.plan).dump(2) + "\n"}});
}

namespace {

// The plan beside a job is the job's pipeline (job_plan wrote it): the layout's facts
// (plan_layout's check) and each stage's layers and position, as llm_stages cuts them.
void check_job_against_plan(const Job& job, const Plan& plan) {
  check_layout_against_plan(job.layout, plan);
  const std::vector<PlanStage> expected = llm_stages(job.shape, job.layout);
  if (plan.stages.size() != expected.size()) {
    throw InputError(plan.source, "stages", "expected p x v = " + std::to_string(expected.size()) +
                                                " stages (the job's layout), got " + std::to_string(plan.stages.size()));
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const PlanStage& got = plan.stages[i];
    const PlanStage& want = expected[i];
    if (got.first_layer != want.first_layer || got.end_layer != want.end_layer || got.devices != want.devices) {
      std::string why = "layers [";
      why += std::to_string(got.first_layer);
      why += ", ";
      why += std::to_string(got.end_layer);
      why += ") on device(s)";
      for (int d : got.devices) {
        why += " ";
        why += std::to_string(d);
      }
      why += ", but the job's layout (layers_per_chunk, else L / (p v) each; the embedding in the first chunk, the "
             "head in the last) puts layers [";
      why += std::to_string(want.first_layer);
      why += ", ";
      why += std::to_string(want.end_layer);
      why += ") on position ";
      why += std::to_string(want.devices.front());
      throw InputError(plan.source, "stages[" + std::to_string(i) + "]", why);
    }
  }
}

}  // namespace

std::optional<PlannedJob> plan_job_on_gpu(const Plan& plan) {
  if (!plan.job) return std::nullopt;
  if (!plan.layout) throw InputError(plan.source, "layout", "missing (a version 3 plan's job needs its layout)");
  auto job = std::make_shared<const Json>(*plan.job);
  auto layout = std::make_shared<const Json>(*plan.layout);
  try {
    // the layout against the plan first, so every reader names the same first disagreement
    (void)plan_layout(plan);
    Job read = job_from_json(JsonReader(job, job.get(), plan.source, "job"),
                             JsonReader(layout, layout.get(), plan.source, "layout"));
    const std::string base = std::filesystem::path(plan.source).parent_path().string();
    GpuModel gpu = load_gpu(read.cluster.gpu, base);
    validate_job(read, read.layout.gpus(), nullptr, &gpu);
    check_job_against_plan(read, plan);
    return PlannedJob{std::move(read), std::move(gpu)};
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind(plan.source, 0) == 0) throw;
    // validate_job names the Megatron flag (or the job's field): the plan's field goes before it
    throw plan_check_error(plan.source, what, "job.model.shape");
  }
}

std::optional<Job> plan_job(const Plan& plan) {
  std::optional<PlannedJob> planned = plan_job_on_gpu(plan);
  if (!planned) return std::nullopt;
  return std::move(planned->job);
}

}  // namespace pipescope
