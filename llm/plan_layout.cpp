// Field by field, the names of llm/layout.h; optional fields take ParallelLayout's defaults.
#include "llm/plan_layout.h"

#include <climits>
#include <memory>

#include "core/error.h"
#include "llm/collectives.h"
#include "llm/layout_check.h"
#include "llm/pipeline_schedule.h"
#include "llm/profile_layers.h"

namespace pipescope {

namespace {

template <typename Enum>
Enum read_name(const JsonReader& r, std::optional<Enum> (*from_name)(const std::string&), const std::string& choices) {
  const std::string name = r.as_string();
  const std::optional<Enum> value = from_name(name);
  if (!value) r.fail("expected " + choices + ", got \"" + name + "\"");
  return *value;
}

int read_degree(const JsonReader& r, const std::string& key, int fallback) {
  return r.has(key) ? static_cast<int>(r[key].as_int(1, 1 << 20)) : fallback;
}

}  // namespace

Json layout_to_json(const ParallelLayout& l) {
  Json out = {{"t", l.t},
              {"sequence_parallel", l.sequence_parallel},
              {"cp", l.cp},
              {"ep", l.ep},
              {"d", l.d},
              {"p", l.p},
              {"v", l.v},
              {"sharding", to_string(l.sharding)},
              {"recompute", to_string(l.recompute)},
              {"micro_batch", l.micro_batch},
              {"microbatches", l.microbatches},
              {"precision", to_string(l.precision)},
              {"order", l.order},
              {"schedule", to_string(layout_schedule(l))},
              {"overlap_grad_reduce", l.overlap_grad_reduce},
              {"overlap_param_gather", l.overlap_param_gather},
              {"overlap_p2p", l.overlap_p2p},
              {"attention", to_string(l.attention)},
              {"fp8", to_string(l.fp8)},
              {"tp_comm_overlap", l.tp_comm_overlap},
              {"fused_elementwise", l.fused_elementwise}};
  if (!l.layers_per_chunk.empty()) out["layers_per_chunk"] = l.layers_per_chunk;
  return out;
}

ParallelLayout layout_from_json(const JsonReader& r) {
  if (!r.json().is_object()) r.fail("expected an object");
  ParallelLayout l;
  l.t = read_degree(r, "t", l.t);
  l.sequence_parallel = r.has("sequence_parallel") ? r["sequence_parallel"].as_bool() : false;
  l.cp = read_degree(r, "cp", l.cp);
  l.ep = read_degree(r, "ep", l.ep);
  l.d = read_degree(r, "d", l.d);
  l.p = read_degree(r, "p", l.p);
  l.v = read_degree(r, "v", l.v);
  if (r.has("sharding")) {
    l.sharding = read_name(r["sharding"], &sharding_from_name, "none, distributed-optimizer, zero-1, zero-2 or zero-3");
  }
  if (r.has("recompute")) l.recompute = read_name(r["recompute"], &recompute_from_name, "none, selective or full");
  l.micro_batch = read_degree(r, "micro_batch", l.micro_batch);
  l.microbatches = read_degree(r, "microbatches", l.microbatches);
  if (r.has("precision")) {
    l.precision = read_name(r["precision"], &precision_recipe_from_name, "bf16-mixed, fp32 or fp8-params");
  }
  if (r.has("schedule")) {  // absent (files before it): Megatron's, 1f1b or interleaved by v
    const JsonReader kind = r["schedule"];
    const std::string name = kind.as_string();
    try {
      l.schedule = parse_schedule_kind(name);
    } catch (const InputError&) {
      kind.fail("expected " + schedule_kind_names(", ") + ", got \"" + name + "\"");
    }
  }
  if (r.has("overlap_grad_reduce")) l.overlap_grad_reduce = r["overlap_grad_reduce"].as_bool();  // absent: off
  if (r.has("overlap_param_gather")) l.overlap_param_gather = r["overlap_param_gather"].as_bool();
  if (r.has("overlap_p2p")) l.overlap_p2p = r["overlap_p2p"].as_bool();  // absent (files before it): blocking
  // Absent (files before them): flash attention, bf16 GEMMs, no TP overlap, fused kernels.
  if (r.has("attention")) l.attention = read_name(r["attention"], &attention_kernel_from_name, "flash or unfused");
  if (r.has("fp8")) l.fp8 = read_name(r["fp8"], &fp8_recipe_from_name, "none, delayed, tensorwise, rowwise or mxfp8");
  if (r.has("tp_comm_overlap")) l.tp_comm_overlap = r["tp_comm_overlap"].as_bool();
  if (r.has("fused_elementwise")) l.fused_elementwise = r["fused_elementwise"].as_bool();
  // Bounds on the products every consumer forms in int (ParallelLayout::gpus(),
  // global_batch(), p x v chunks): the hardware limit of 2^20 GPUs, 2^31 - 1 samples.
  const int64_t gpus = int64_t{l.t} * l.cp * l.d * l.p;
  if (gpus > kMaxGpus) {
    r.fail("t x cp x d x p = " + std::to_string(gpus) + " GPUs; at most 2^20 = 1048576");
  }
  const int64_t samples = int64_t{l.micro_batch} * l.microbatches * l.d;
  if (samples > INT_MAX) {
    r.fail("micro_batch x microbatches x d = " + std::to_string(samples) + " samples per step; at most 2^31 - 1");
  }
  if (int64_t{l.p} * l.v > (int64_t{1} << 20)) {
    r.fail("p x v = " + std::to_string(int64_t{l.p} * l.v) + " chunks; at most 2^20");
  }
  if (r.has("order")) {  // after the bounds: the order's strides are products of the degrees
    l.order = r["order"].as_string();
    try {
      (void)group_placement(l, Group::Tp, 8);  // the order must name each of tp, cp, ep, dp, pp once
    } catch (const InputError& e) {
      r["order"].fail(std::string(e.what()).substr(std::string("order: ").size()));
    }
  }
  if (r.has("layers_per_chunk")) {
    const JsonReader chunks = r["layers_per_chunk"];
    for (const JsonReader& n : chunks.items()) l.layers_per_chunk.push_back(static_cast<int>(n.as_int(1, 1 << 20)));
    if (l.layers_per_chunk.size() != static_cast<std::size_t>(l.p) * static_cast<std::size_t>(l.v)) {
      chunks.fail("expected p * v = " + std::to_string(l.p * l.v) + " entries, got " +
                  std::to_string(l.layers_per_chunk.size()));
    }
  }
  return l;
}

void check_layout_against_plan(const ParallelLayout& l, const Plan& plan) {
  auto refuse = [&](const std::string& field, const std::string& why) {
    throw InputError(plan.source, "layout." + field, why);
  };
  auto same = [&](const std::string& field, int64_t layout_value, const std::string& plan_what, int64_t plan_value) {
    if (layout_value != plan_value) {
      refuse(field, std::to_string(layout_value) + ", but the plan has " + plan_what + " " + std::to_string(plan_value));
    }
  };
  if (plan.stages.empty() || plan.chunks < 1) return;  // plan_from_json refuses these; nothing to compare
  same("p", l.p, "pipeline positions", plan.pipeline_devices());
  same("v", l.v, "chunks per position", plan.chunks);
  if (l.schedule && plan.schedule_file.empty() && *l.schedule != plan.schedule) {
    std::string why = to_string(*l.schedule);
    why += ", but the plan's schedule is ";
    why += to_string(plan.schedule);
    refuse("schedule", why);
  }
  const int64_t replicas = static_cast<int64_t>(plan.stages.front().devices.size());
  const bool one_pipeline = replicas == 1 && l.d > 1;  // one of the d pipelines (llm-plan --out)
  if (!one_pipeline) same("d", l.d, "replicas per stage", replicas);
  same("microbatches", l.microbatches, "micro-batches", plan.microbatches);
  const int64_t per_step = static_cast<int64_t>(plan.microbatches) * replicas;
  if (static_cast<int64_t>(l.micro_batch) * per_step != plan.batch_size) {
    refuse("micro_batch", std::to_string(l.micro_batch) + ", but the plan has samples per micro-batch per replica "
                              "(batch_size / (microbatches x replicas)) " + std::to_string(plan.batch_size) + " / (" +
                              std::to_string(plan.microbatches) + " x " + std::to_string(replicas) + ")");
  }
  // the layout's overlap_p2p is the plan's p2p "overlapped" (llm_pipeline writes one from the other)
  if (plan.p2p && (*plan.p2p == P2p::Overlapped) != l.overlap_p2p) {
    std::string why = l.overlap_p2p ? "true" : "false";
    why += ", but the plan's p2p is \"";
    why += to_string(*plan.p2p);
    why += l.overlap_p2p ? "\" (an overlapped layout's p2p is \"overlapped\")"
                         : "\" (a layout that does not overlap p2p has \"blocking\" or \"batched\")";
    refuse("overlap_p2p", why);
  }
  if (plan.recompute == Recompute::Full && l.recompute != Recompute::Full) {
    std::string why = "\"";  // built by += : g++ 12 warns (-Wrestrict) on "literal" + std::string here
    why += to_string(l.recompute);
    why += "\", but the plan re-materialises every stage (\"recompute\": true); say \"full\"";
    refuse("recompute", why);
  }
}

std::string plan_field_of_check(const std::string& message, const std::string& model) {
  // The words validate_layout (llm/layout_check.cpp) and the framework offers
  // (llm/framework.cpp) open their messages with, and the plan field each one checks.
  static const std::pair<const char*, const char*> kLayout[] = {
      {"--tensor-model-parallel-size", "t"},
      {"--sequence-parallel", "sequence_parallel"},
      {"--context-parallel-size", "cp"},
      {"--expert-model-parallel-size", "ep"},
      {"data-parallel size", "d"},
      {"--pipeline-model-parallel-size", "p"},
      {"virtual pipeline size", "v"},
      {"--num-virtual-stages-per-pipeline-rank", "v"},
      {"--num-layers-per-virtual-pipeline-stage", "v"},
      {"--micro-batch-size", "micro_batch"},
      {"micro-batches", "microbatches"},
      {"--use-distributed-optimizer", "sharding"},
      {"sharding", "sharding"},
      {"--sharding", "sharding"},
      {"--global-batch-size", "microbatches"},  // b x M x d: a runtime's rule on M
      {"--recompute-granularity", "recompute"},
      {"--use-tp-pp-dp-mapping", "order"},
      {"order", "order"},
      {"layers_per_chunk", "layers_per_chunk"},
      {"--schedule", "schedule"},
      {"--overlap-p2p-communication", "overlap_p2p"},
      {"--overlap-param-gather", "overlap_param_gather"},
      {"--overlap-grad-reduce", "overlap_grad_reduce"},
      {"--precision", "precision"},
      {"--order", "order"},
  };
  static const std::pair<const char*, const char*> kModel[] = {
      {"--num-layers", "layers"},
      {"--hidden-size", "hidden"},
      {"--num-attention-heads", "heads"},
      {"--num-query-groups", "kv_heads"},
      {"--ffn-hidden-size", "ffn_hidden"},
      {"--vocab-size", "vocabulary"},
      {"--make-vocab-size-divisible-by", "vocabulary"},
      {"--seq-length", "sequence"},
      {"--kv-channels", "kv_channels"},
      {"--num-experts", "experts"},
      {"--moe-router-topk", "moe_topk"},
      {"--moe-ffn-hidden-size", "moe_ffn_hidden"},
      {"--moe-layer-freq", "moe_layer_frequency"},
      {"--moe-shared-expert-intermediate-size", "shared_expert_ffn_hidden"},
  };
  const std::size_t colon = message.find(':');
  if (colon == std::string::npos) return "";
  std::string head = message.substr(0, colon);
  if (const std::size_t bracket = head.find('['); bracket != std::string::npos) head.resize(bracket);
  if (head == "--gpus") return "layout";  // t x cp x d x p
  if (head == "--memory-headroom") return model.empty() ? "" : "job.cluster.memory_headroom_bytes";
  for (const auto& [flag, field] : kLayout) {
    if (head == flag) return std::string("layout.") + field;
  }
  for (const auto& [flag, field] : kModel) {
    if (head == flag) return model.empty() ? "" : model + "." + field;
  }
  return "";
}

InputError plan_check_error(const std::string& source, const std::string& message, const std::string& model,
                            const std::string& where) {
  const std::string field = plan_field_of_check(message, model);
  std::string what = message;
  // "layout.layers_per_chunk: layers_per_chunk: ..." says the field twice: drop the second
  const std::size_t dot = field.rfind('.');
  const std::string own = dot == std::string::npos ? "" : field.substr(dot + 1) + ": ";
  if (!own.empty() && what.rfind(own, 0) == 0) what.erase(0, own.size());
  const std::string path = (field.empty() ? std::string(where.empty() ? "" : "layout") : field) +
                           (where.empty() ? "" : " " + where);
  return InputError(source, path, what);
}

void check_layout_against_profile(const ParallelLayout& layout, const Plan& plan, const Profile& profile) {
  const std::optional<TransformerShape> shape = transformer_shape_of(profile, layout.t);
  if (!shape) return;
  if (!layout.layers_per_chunk.empty()) {  // each stage's decoder layers, in model order
    std::vector<int> held;
    std::string said = "[", holds = "[";
    for (const auto& [first, end] : plan.layer_ranges()) {
      int decoders = 0;
      for (int i = first; i < end && i < profile.num_layers(); ++i) decoders += is_decoder_layer(profile.layers[i]) ? 1 : 0;
      if (!held.empty()) holds += ", ";
      holds += std::to_string(decoders);
      held.push_back(decoders);
    }
    for (std::size_t c = 0; c < layout.layers_per_chunk.size(); ++c) {
      if (c > 0) said += ", ";
      said += std::to_string(layout.layers_per_chunk[c]);
    }
    if (held != layout.layers_per_chunk) {
      said += "], but the plan's stages hold ";
      said += holds;
      said += "] decoder layers of ";
      said += profile.source;
      throw InputError(plan.source, "layout.layers_per_chunk", said);
    }
  }
  try {
    check_model_against_layout(*shape, layout);  // the cut is the plan's stages (interop checks them)
  } catch (const InputError& e) {
    throw plan_check_error(plan.source, e.what(), "", "(against " + profile.source + ")");
  }
}

std::optional<ParallelLayout> plan_layout(const Plan& plan) {
  if (!plan.layout) return std::nullopt;
  auto root = std::make_shared<const Json>(*plan.layout);
  const ParallelLayout layout = layout_from_json(JsonReader(root, root.get(), plan.source, "layout"));
  check_layout_against_plan(layout, plan);
  return layout;
}

}  // namespace pipescope
