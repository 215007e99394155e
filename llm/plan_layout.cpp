// Field by field, the names of llm/layout.h; optional fields take ParallelLayout's defaults.
#include "llm/plan_layout.h"

#include <memory>

#include "core/error.h"
#include "llm/pipeline_schedule.h"

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
              {"overlap_p2p", l.overlap_p2p}};
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
  if (r.has("order")) l.order = r["order"].as_string();
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

std::optional<ParallelLayout> plan_layout(const Plan& plan) {
  if (!plan.layout) return std::nullopt;
  auto root = std::make_shared<const Json>(*plan.layout);
  return layout_from_json(JsonReader(root, root.get(), plan.source, "layout"));
}

}  // namespace pipescope
