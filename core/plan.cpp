#include "core/plan.h"

#include <set>

#include "core/error.h"

namespace pipescope {

std::vector<std::pair<int, int>> Plan::layer_ranges() const {
  std::vector<std::pair<int, int>> out;
  for (const PlanStage& s : stages) out.emplace_back(s.first_layer, s.end_layer);
  return out;
}

Plan plan_from_json(const JsonReader& r) {
  r.expect_format("pipescope.plan");
  Plan p;
  p.source = r.source();
  p.profile = r["profile"].as_string();
  p.batch_size = r["batch_size"].as_int(1, int64_t{1} << 40);
  p.microbatches = static_cast<int>(r["microbatches"].as_int(1, 1 << 30));
  if (p.batch_size % p.microbatches != 0) {
    r["microbatches"].fail("batch_size " + std::to_string(p.batch_size) +
                           " is not divisible by " + std::to_string(p.microbatches) +
                           " micro-batches");
  }
  JsonReader schedule = r["schedule"];
  try {
    p.schedule = parse_schedule_kind(schedule["kind"].as_string());
  } catch (const InputError& e) {
    schedule["kind"].fail(e.what());
  }
  p.chunks = schedule.has("chunks") ? static_cast<int>(schedule["chunks"].as_int(1, 64)) : 1;
  if (p.chunks > 1 && p.schedule != ScheduleKind::Interleaved) {
    schedule["chunks"].fail("only the interleaved schedule takes more than 1 chunk");
  }
  p.recompute = r.has("recompute") ? r["recompute"].as_bool() : false;
  if (r.has("optimizer")) {
    p.optimizer_state_factor = r["optimizer"]["state_bytes_per_parameter_byte"].as_double(0.0, 64.0);
  }
  JsonReader stages = r["stages"];
  if (stages.size() == 0) stages.fail("expected at least one stage");
  if (stages.size() % static_cast<std::size_t>(p.chunks) != 0) {
    stages.fail("expected a multiple of chunks (" + std::to_string(p.chunks) + ") stages, got " +
                std::to_string(stages.size()));
  }
  std::vector<JsonReader> items = stages.items();
  for (const JsonReader& s : items) {
    PlanStage stage;
    JsonReader layers = s["layers"];
    if (layers.size() != 2) layers.fail("expected [first, end)");
    stage.first_layer = static_cast<int>(layers.items()[0].as_int(0, 1 << 30));
    stage.end_layer = static_cast<int>(layers.items()[1].as_int(0, 1 << 30));
    if (stage.end_layer <= stage.first_layer) layers.fail("expected first < end (a stage holds at least one layer)");
    JsonReader devices = s["devices"];
    for (int64_t d : devices.as_ints(0)) stage.devices.push_back(static_cast<int>(std::min<int64_t>(d, 1 << 30)));
    if (stage.devices.empty()) devices.fail("expected at least one device");
    p.stages.push_back(std::move(stage));
  }
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    if (i == 0 && p.stages[0].first_layer != 0) items[0]["layers"].fail("the first stage must start at layer 0");
    if (i > 0 && p.stages[i].first_layer != p.stages[i - 1].end_layer) {
      items[i]["layers"].fail("stages must be contiguous: expected first layer " +
                              std::to_string(p.stages[i - 1].end_layer) + ", got " +
                              std::to_string(p.stages[i].first_layer));
    }
  }
  const std::size_t K = p.stages.size() / p.chunks;
  std::set<int> used;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    if (i >= K) {
      if (p.stages[i].devices != p.stages[i % K].devices) {
        items[i]["devices"].fail("under interleaving stage " + std::to_string(i) +
                                 " must use the devices of stage " + std::to_string(i % K));
      }
      continue;
    }
    for (int d : p.stages[i].devices) {
      if (!used.insert(d).second) {
        items[i]["devices"].fail("device " + std::to_string(d) + " is used by two stages");
      }
    }
  }
  return p;
}

Plan load_plan(const std::string& path) { return plan_from_json(JsonReader::from_file(path)); }

void check_plan_layers(const Plan& plan, int layers, const std::string& profile_source) {
  int end = plan.stages.back().end_layer;
  if (end != layers) {
    throw InputError(plan.source, "stages[" + std::to_string(plan.stages.size() - 1) + "].layers",
                     "the last stage must end at layer " + std::to_string(layers) + " (" +
                         profile_source + " has " + std::to_string(layers) + " layers), got " +
                         std::to_string(end));
  }
}

Json plan_to_json(const Plan& p) {
  Json stages = Json::array();
  for (const PlanStage& s : p.stages) {
    stages.push_back({{"layers", {s.first_layer, s.end_layer}}, {"devices", s.devices}});
  }
  return {{"format", "pipescope.plan"},
          {"version", 1},
          {"profile", p.profile},
          {"batch_size", p.batch_size},
          {"microbatches", p.microbatches},
          {"schedule", {{"kind", to_string(p.schedule)}, {"chunks", p.chunks}}},
          {"recompute", p.recompute},
          {"optimizer", {{"state_bytes_per_parameter_byte", p.optimizer_state_factor}}},
          {"stages", std::move(stages)}};
}

}  // namespace pipescope
