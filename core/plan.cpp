#include "core/plan.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/schedule_io.h"

namespace pipescope {

std::vector<std::pair<int, int>> Plan::layer_ranges() const {
  std::vector<std::pair<int, int>> out;
  for (const PlanStage& s : stages) out.emplace_back(s.first_layer, s.end_layer);
  return out;
}

std::vector<int> Plan::stage_positions() const {
  const int K = pipeline_devices();
  std::vector<int> out(stages.size(), 0);
  for (std::size_t s = 0; s < stages.size(); ++s) {
    out[s] = K > 0 ? static_cast<int>(s) % K : 0;
    for (int p = 0; p < K; ++p) {
      if (stages[p].devices == stages[s].devices) {
        out[s] = p;
        break;
      }
    }
  }
  return out;
}

std::string Plan::schedule_name() const {
  if (schedule_file.empty()) return to_string(schedule);
  return std::filesystem::path(schedule_file).stem().string();
}

Schedule schedule_for(const Plan& plan, int steps) {
  if (plan.schedule_file.empty()) return make_schedule(plan.schedule_spec(steps));  // generators are valid
  Schedule s = load_schedule_file(plan.schedule_file);
  const bool r_ops = has_r_ops(plan.recompute);
  if (r_ops && !s.r_ops) s = with_recompute(std::move(s));
  const std::string where = plan.schedule_file;
  if (s.stages() != static_cast<int>(plan.stages.size())) {
    throw InputError(where, "", "the schedule has " + std::to_string(s.stages()) + " stages but the plan has " +
                                    std::to_string(plan.stages.size()));
  }
  if (s.microbatches() != plan.microbatches) {
    throw InputError(where, "", "the schedule has " + std::to_string(s.microbatches()) +
                                    " micro-batches but the plan has " + std::to_string(plan.microbatches));
  }
  if (s.r_ops != r_ops) {
    throw InputError(where, "", std::string("the schedule ") + (s.r_ops ? "re-materialises" : "does not re-materialise") +
                                    " but the plan " + (r_ops ? "does" : "does not"));
  }
  const std::vector<int> positions = plan.stage_positions();
  const bool placed = std::all_of(plan.stages.begin(), plan.stages.end(), [](const PlanStage& p) { return !p.devices.empty(); });
  for (int st = 0; st < s.stages() && placed; ++st) {
    if (positions[st] != s.stage_position[st]) {
      throw InputError(where, "", "stage " + std::to_string(st) + " runs on device " + std::to_string(s.stage_position[st]) +
                                      " in the schedule but on position " + std::to_string(positions[st]) + " in the plan");
    }
  }
  return s;
}

namespace {

// "schedule": a file (relative to the plan's folder) or a kind with its chunks and
// zb-auto's cap and byte budget.
void read_schedule(const JsonReader& r, Plan& p) {
  JsonReader schedule = r["schedule"];
  if (schedule.has("file")) {
    // A schedule file, relative to the plan file's folder.
    std::filesystem::path f(schedule["file"].as_string());
    if (f.is_relative() && !p.source.empty()) f = std::filesystem::path(p.source).parent_path() / f;
    p.schedule_file = f.string();
    p.chunks = schedule.has("chunks") ? static_cast<int>(schedule["chunks"].as_int(1, 1 << 20)) : 1;
  } else {
    try {
      p.schedule = parse_schedule_kind(schedule["kind"].as_string());
    } catch (const InputError& e) {
      schedule["kind"].fail(e.what());
    }
    const int need = required_chunks(p.schedule);  // 0: any (interleaved)
    p.chunks = schedule.has("chunks") ? static_cast<int>(schedule["chunks"].as_int(1, 64)) : std::max(need, 1);
    if (need == 1 && p.chunks > 1) {
      schedule["chunks"].fail("only " +
                              schedule_kind_names([](const ScheduleKindInfo& k) { return k.chunks == ChunkRule::Looped; }) +
                              " take more than 1 chunk");
    }
    if (need == 2 && p.chunks != 2) {
      schedule["chunks"].fail(to_string(p.schedule) + " holds 2 chunks per device (V-shape)");
    }
    if (schedule.has("max_inflight")) {
      if (p.schedule != ScheduleKind::ZeroBubbleAuto) schedule["max_inflight"].fail("only zb-auto takes a cap");
      p.max_inflight = static_cast<int>(schedule["max_inflight"].as_int(1, 1 << 20));
    }
    if (schedule.has("activation_budget_bytes")) {
      JsonReader budget = schedule["activation_budget_bytes"];
      if (p.schedule != ScheduleKind::ZeroBubbleAuto) budget.fail("only zb-auto takes a byte budget");
      p.activation_budget_bytes = budget.as_int(1, int64_t{1} << 62);
    }
  }
}

// "optimizer_step": synchronized or post-validation (flushed schedules only).
void read_optimizer_step(const JsonReader& step, Plan& p) {
  try {
    p.optimizer_step = parse_optimizer_step(step.as_string());
  } catch (const InputError&) {
    step.fail("expected \"synchronized\" or \"post-validation\", got \"" + step.as_string() + "\"");
  }
  if (p.optimizer_step == OptimizerStep::PostValidation && is_asynchronous(p.schedule)) {
    step.fail("post-validation is for flushed schedules; " + to_string(p.schedule) + " updates its weights without a flush");
  }
}

// Each stage's [first, end) layers and devices.
PlanStage read_stage(const JsonReader& s) {
  PlanStage stage;
  JsonReader layers = s["layers"];
  if (layers.size() != 2) layers.fail("expected [first, end)");
  stage.first_layer = static_cast<int>(layers.items()[0].as_int(0, 1 << 30));
  stage.end_layer = static_cast<int>(layers.items()[1].as_int(0, 1 << 30));
  if (stage.end_layer <= stage.first_layer) layers.fail("expected first < end (a stage holds at least one layer)");
  JsonReader devices = s["devices"];
  for (int64_t d : devices.as_ints(0)) stage.devices.push_back(static_cast<int>(std::min<int64_t>(d, 1 << 30)));
  if (stage.devices.empty()) devices.fail("expected at least one device");
  return stage;
}

// The stages cover the layers from 0 contiguously; the first K stages use distinct
// devices, and every later chunk's stage the devices of one of them.
void check_stages(const std::vector<JsonReader>& items, const Plan& p) {
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
      bool shared = false;
      for (std::size_t q = 0; q < K; ++q) shared = shared || p.stages[i].devices == p.stages[q].devices;
      if (!shared) {
        items[i]["devices"].fail("with " + std::to_string(p.chunks) + " chunks stage " + std::to_string(i) +
                                 " must use the devices of one of the first " + std::to_string(K) + " stages");
      }
      continue;
    }
    for (int d : p.stages[i].devices) {
      if (!used.insert(d).second) {
        items[i]["devices"].fail("device " + std::to_string(d) + " is used by two stages");
      }
    }
  }
}

}  // namespace

Plan plan_from_json(const JsonReader& r) {
  const int version = r.expect_format("pipescope.plan", 3);
  Plan p;
  p.source = r.source();
  if (r.has("layout")) {
    if (version < 2) r["layout"].fail("needs \"version\": 2 (version 1 plans have no layout)");
    if (!r["layout"].json().is_object()) r["layout"].fail("expected an object");
    p.layout = r["layout"].json();
  }
  if (r.has("job")) {
    if (version < 3) r["job"].fail("needs \"version\": 3 (plans before version 3 have no job)");
    if (!r["job"].json().is_object()) r["job"].fail("expected an object");
    if (!p.layout) r["job"].fail("needs the plan's \"layout\" beside it");
    p.job = r["job"].json();
  }
  p.profile = r["profile"].as_string();
  p.batch_size = r["batch_size"].as_int(1, int64_t{1} << 40);
  p.microbatches = static_cast<int>(r["microbatches"].as_int(1, 1 << 30));
  if (p.batch_size % p.microbatches != 0) {
    r["microbatches"].fail("batch_size " + std::to_string(p.batch_size) +
                           " is not divisible by " + std::to_string(p.microbatches) +
                           " micro-batches");
  }
  read_schedule(r, p);
  p.recompute = recompute_from_r_ops(r.has("recompute") && r["recompute"].as_bool());
  if (r.has("optimizer_step")) read_optimizer_step(r["optimizer_step"], p);
  if (r.has("p2p")) p.p2p = p2p_from_json(r["p2p"]);
  if (r.has("runtime")) {
    p.runtime = r["runtime"].as_string();
    if (p.runtime.empty()) r["runtime"].fail("expected a pipescope.runtime file or a bundled runtime's name");
  }
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
  for (const JsonReader& s : items) p.stages.push_back(read_stage(s));
  check_stages(items, p);
  if (r.has("offload")) {
    p.offload = offload_from_json(r["offload"]);
    const std::size_t n = p.offload.fraction.size();
    if (n > 1 && n != p.stages.size()) {
      r["offload"]["fraction"].fail("expected one fraction or " + std::to_string(p.stages.size()) +
                                    " (one per stage), got " + std::to_string(n));
    }
  }
  return p;
}

std::string runtime_path_of(const Plan& plan) {
  if (plan.runtime.empty()) return "";
  std::filesystem::path f(plan.runtime);
  if (f.is_relative() && !plan.source.empty()) f = std::filesystem::path(plan.source).parent_path() / f;
  std::error_code ec;
  return std::filesystem::exists(f, ec) ? f.string() : plan.runtime;
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

std::string to_string(OptimizerStep step) {
  return step == OptimizerStep::PostValidation ? "post-validation" : "synchronized";
}

OptimizerStep parse_optimizer_step(const std::string& name) {
  if (name == "synchronized") return OptimizerStep::Synchronized;
  if (name == "post-validation") return OptimizerStep::PostValidation;
  throw InputError("--optimizer-step: expected synchronized or post-validation, got \"" + name + "\"");
}

P2p p2p_of(const Plan& plan, const Hardware& hardware) {
  return plan.p2p.value_or(hardware.p2p.value_or(P2p::Overlapped));
}

Json plan_to_json(const Plan& p) {
  Json stages = Json::array();
  for (const PlanStage& s : p.stages) {
    stages.push_back({{"layers", {s.first_layer, s.end_layer}}, {"devices", s.devices}});
  }
  Json schedule = p.schedule_file.empty() ? Json{{"kind", to_string(p.schedule)}, {"chunks", p.chunks}}
                                          : Json{{"file", p.schedule_file}, {"chunks", p.chunks}};
  if (p.schedule_file.empty() && p.schedule == ScheduleKind::ZeroBubbleAuto && p.max_inflight > 0) {
    schedule["max_inflight"] = p.max_inflight;
  }
  if (p.schedule_file.empty() && p.schedule == ScheduleKind::ZeroBubbleAuto && p.activation_budget_bytes > 0) {
    schedule["activation_budget_bytes"] = p.activation_budget_bytes;
  }
  Json out = {{"format", "pipescope.plan"},
              {"version", p.job ? 3 : p.layout ? 2 : 1},
              {"profile", p.profile},
              {"batch_size", p.batch_size},
              {"microbatches", p.microbatches},
              {"schedule", std::move(schedule)},
              {"recompute", has_r_ops(p.recompute, p.source.empty() ? "recompute" : p.source + ": recompute")},
              {"optimizer", {{"state_bytes_per_parameter_byte", p.optimizer_state_factor}}},
              {"stages", std::move(stages)}};
  if (p.optimizer_step != OptimizerStep::Synchronized) out["optimizer_step"] = to_string(p.optimizer_step);  // default: absent
  if (p.p2p) out["p2p"] = to_string(*p.p2p);
  if (!p.runtime.empty()) out["runtime"] = p.runtime;
  if (p.offload.active()) out["offload"] = offload_to_json(p.offload);
  if (p.layout) out["layout"] = *p.layout;
  if (p.job) out["job"] = *p.job;
  return out;
}

}  // namespace pipescope
