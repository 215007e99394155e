#include "planner/plan_builder.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/limits.h"
#include "core/schedule_io.h"
#include "planner/stage_model.h"

namespace pipescope {

namespace {

// 2147483647, 2.5, 1e+20: a flag's number as the user would write it.
std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// The plan's cut (its S stages may be placeholders: their count, the schedule and the
// batch are what is read).
Cut cut_for(const Profile& profile, const Plan& plan, int replicas, PartitionKind kind, const Hardware& hardware,
            const RuntimeCosts* runtime) {
  const Schedule schedule = schedule_for(plan);
  StageModelSpec spec;
  spec.runtime = runtime;
  spec.microbatch_size = plan.microbatch_size();
  spec.replicas = replicas;
  spec.optimizer_state_factor = plan.optimizer_state_factor;
  Cut cut = cut_layers(profile, hardware, schedule, spec, kind);
  if (kind == PartitionKind::Optimal) {
    // Several stages per device: even out the devices' sums (one stage per device: as is).
    if (cut.layer_order.empty()) {
      cut.ranges = balance_devices(StageModel(profile, hardware, schedule, spec), cut.ranges);
    } else {
      cut.ranges = balance_devices(StageModel(profile_of(profile, cut), hardware, schedule, spec), cut.ranges);
    }
  }
  keep_loss_with_producer(cut.layer_order.empty() ? profile : profile_of(profile, cut), cut.ranges);
  return cut;
}

}  // namespace

MadePlan make_plan(const Profile& profile, const PlanChoice& choice) {
  PlanChoice c = choice;
  const PartitionKind kind = c.partition;
  if (!c.schedule_file.empty()) {
    // The file fixes K, M and the stage -> device map; flags may repeat them, not change them.
    const Schedule file = load_schedule_file(c.schedule_file);
    auto agree = [&](const char* flag, int given, int from_file) {
      if (given > 0 && given != from_file) {
        throw InputError(std::string(flag) + " " + std::to_string(given) + " disagrees with " + c.schedule_file +
                         " (" + std::to_string(from_file) + "); leave it out to take the file's");
      }
    };
    agree("--stages", choice.stages, file.positions());
    agree("--microbatches", choice.microbatches, file.microbatches());
    c.stages = file.positions();
    c.microbatches = file.microbatches();
    c.chunks = file.stages() / file.positions();
    if (file.stages() % file.positions() != 0) {
      throw InputError(c.schedule_file + ": " + std::to_string(file.stages()) + " stages on " +
                       std::to_string(file.positions()) + " devices: every device must hold as many stages");
    }
    if (file.r_ops) c.recompute = Recompute::Full;
  }
  if (c.stages < 1 || c.stages > kMaxDevices) {
    throw InputError("--stages: expected 1 to " + std::to_string(kMaxDevices) + ", got " + std::to_string(c.stages));
  }
  if (c.microbatches < 1) throw InputError("--microbatches: expected at least 1, got " + std::to_string(c.microbatches));
  check_range("--microbatches", c.microbatches, 1, kMaxBatch);
  if (c.chunks < 1 || c.chunks > 64) throw InputError("--chunks: expected 1 to 64, got " + std::to_string(c.chunks));
  if (c.schedule_file.empty() && required_chunks(c.schedule) == 2) {  // V-shapes: 2 chunks, given or not
    if (c.chunks != 1 && c.chunks != 2) {
      throw InputError("--chunks: " + to_string(c.schedule) + " holds 2 chunks per device (V-shape), got " +
                       std::to_string(c.chunks));
    }
    c.chunks = 2;
  }
  if (c.chunks > 1 && required_chunks(c.schedule) == 1 && c.schedule_file.empty()) {
    throw InputError("--chunks: only " +
                     schedule_kind_names([](const ScheduleKindInfo& k) { return k.chunks == ChunkRule::Looped; }) +
                     " take more than 1 chunk");
  }
  if (c.replicas < 1) throw InputError("--replicas: expected at least 1, got " + std::to_string(c.replicas));
  check_range("--replicas", c.replicas, 1, kMaxGpus);
  if (int64_t{c.stages} * c.replicas > kMaxGpus) {
    throw InputError("--replicas: --stages " + std::to_string(c.stages) + " x --replicas " + std::to_string(c.replicas) +
                     " is more than " + std::to_string(kMaxGpus) + " devices");
  }
  has_r_ops(c.recompute, "--recompute");  // refuses selective by name
  Plan plan;
  plan.profile = c.profile_path;
  double b = c.microbatch_size > 0 ? c.microbatch_size : profile.batch_sizes.front();
  if (!(b <= 1e9)) throw InputError("--microbatch-size: expected at most 10^9 samples, got " + shortest(b));
  if (b != std::floor(b)) throw InputError("--microbatch-size: expected a whole number of samples, got " + shortest(b));
  set_schedule_fields(plan, c);
  plan.batch_size = static_cast<int64_t>(b) * c.microbatches;
  plan.schedule_file = c.schedule_file;
  plan.activation_budget_bytes = c.activation_budget_bytes;
  plan.optimizer_state_factor = c.optimizer_state_factor;
  const int S = c.stages * c.chunks;
  check_stage_count(profile.num_layers(), S);
  const Hardware ideal = Hardware::ideal(c.stages * c.replicas);
  const Hardware& hardware = c.hardware ? *c.hardware : ideal;
  // cut_for reads K and v from the plan: give it S placeholder stages.
  plan.stages.assign(static_cast<std::size_t>(S), PlanStage{});
  Cut cut = cut_for(profile, plan, c.replicas, kind, hardware, c.runtime);
  place_stages(plan, schedule_for(plan), cut.ranges, c.replicas);
  MadePlan made{std::move(plan), profile_of(profile, cut), std::move(cut.layer_order)};
  return made;
}

void place_stages(Plan& plan, const Schedule& schedule, const LayerRanges& ranges, int replicas) {
  plan.stages.resize(ranges.size());
  for (std::size_t s = 0; s < ranges.size(); ++s) {
    const int p = schedule.stage_position[s];
    std::vector<int> devices;
    for (int k = 0; k < replicas; ++k) devices.push_back(p * replicas + k);
    plan.stages[s] = {ranges[s].first, ranges[s].second, std::move(devices)};
  }
}

}  // namespace pipescope
