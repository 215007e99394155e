// Fuzz target: the whole simulate pipeline on small inputs. The input is six header
// bytes (K, M, schedule, chunks, flags, micro-batch size) followed by a profile, and
// optionally "\n----\n" + a hardware file and "\n----\n" + a plan file. Without a
// plan the header's choices go through make_plan; then build_cost_model, simulate,
// the report JSON, table and Chrome trace. Sizes are capped (K <= 8, M <= 16, plans
// with K*v*M <= 4096) so one input runs in milliseconds. Only InputError may escape.
#include <string>
#include <string_view>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/report.h"
#include "planner/plan_builder.h"
#include "planner/zero_bubble_search.h"
#include "sim/simulator.h"

using namespace pipescope;

namespace {

std::vector<std::string> split_parts(std::string_view text) {
  const std::string_view sep = "\n----\n";
  std::vector<std::string> parts;
  while (parts.size() < 2) {
    auto at = text.find(sep);
    if (at == std::string_view::npos) break;
    parts.emplace_back(text.substr(0, at));
    text.remove_prefix(at + sep.size());
  }
  parts.emplace_back(text);
  return parts;
}

void run(const uint8_t* h, std::string_view rest) {
  std::vector<std::string> parts = split_parts(rest);
  Profile profile = profile_from_json(JsonReader::from_text(parts[0], "profile"));
  if (profile.num_layers() > 256) return;
  Hardware hardware;
  bool have_hardware = parts.size() > 1 && !parts[1].empty();
  if (have_hardware) hardware = hardware_from_json(JsonReader::from_text(parts[1], "hardware"));
  Plan plan;
  if (parts.size() > 2) {
    plan = plan_from_json(JsonReader::from_text(parts[2], "plan"));
    if (static_cast<int64_t>(plan.stages.size()) * plan.microbatches > 4096) return;
  } else {
    PlanChoice c;
    c.stages = 1 + h[0] % 8;
    c.microbatches = 1 + h[1] % 16;
    c.schedule = schedule_kinds()[h[2] % schedule_kinds().size()];  // V-shapes take their 2 chunks
    c.chunks = c.schedule == ScheduleKind::Interleaved ? 1 + h[3] % 3 : 1;
    c.recompute = recompute_from_r_ops(h[4] & 1);
    c.partition = (h[4] & 2) ? PartitionKind::Uniform : PartitionKind::Optimal;
    c.microbatch_size = h[5] % 17;  // 0: the profile's first batch size
    MadePlan made = make_plan(profile, c);
    plan = std::move(made.plan);
    profile = std::move(made.profile);  // what the plan's ranges index (a graph may be reordered)
  }
  check_plan_layers(plan, profile.num_layers(), profile.source);
  if (!have_hardware) {
    int needed = 0;
    for (const PlanStage& s : plan.stages) {
      for (int d : s.devices) needed = std::max(needed, d + 1);
    }
    hardware = Hardware::ideal(needed);
  }
  CostModel costs = build_cost_model(profile, plan, hardware);
  Schedule schedule = schedule_for_costs(plan, costs, hardware);  // zb-auto searched on the costs
  validate_schedule(schedule);
  SimOptions options;
  options.model = profile.model;
  options.offload = plan.offload;  // checked against the hardware's host_link (InputError without)
  StepReport report = simulate(schedule, costs, hardware, options);
  (void)report_to_json(report).dump(2);
  (void)report_table(report);
  (void)chrome_trace(report);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 6 || size > 64 * 1024) return -1;
  try {
    run(data, std::string_view(reinterpret_cast<const char*>(data) + 6, size - 6));
  } catch (const InputError&) {
  }
  return 0;
}
