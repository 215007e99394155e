// The cost model's times, served to the workers of a deterministic-time run.
#include "exec/runtime/model_clock.h"

#include <algorithm>

#include "core/error.h"
#include "core/op_rules.h"

namespace pipescope::exec {

ModelClock::ModelClock(const Profile& profile, const Plan& plan, const Schedule& schedule, const Hardware& hardware,
                       P2p p2p)
    : schedule_(schedule), costs_(build_cost_model(profile, plan, hardware)), p2p_(p2p) {
  for (const StageCost& c : costs_.stages) {
    if (c.fb_overlap_ns > 0 && !schedule.overlapped_backwards.empty()) {
      throw InputError("--clock model: the overlapped F&B pairs of " + schedule.name +
                       " (the profile's fb_overlap_ms) are not replayed in model time; use --clock steady, or a "
                       "profile without fb_overlap_ms");
    }
  }
  const int S = schedule.stages();
  cut_busy_.assign(std::max(S, 1), 0);
  cut_latency_.assign(std::max(S, 1), 0);
  for (int cut = 1; cut < S; ++cut) {
    const int from = schedule.stage_position[cut - 1], to = schedule.stage_position[cut];
    const Link& link = hardware.link_between(costs_.position_device[from], costs_.position_device[to]);
    cut_busy_[cut] = link.busy_ns(costs_.stages[cut - 1].send_bytes);
    cut_latency_[cut] = link.latency_ns();
  }
}

int64_t ModelClock::op_ns(const Op& op) const { return op_duration_ns(op.kind, costs_.stages.at(op.stage)); }

int64_t ModelClock::stage_optimizer_ns(int stage) const { return costs_.stages.at(stage).optimizer_ns; }

int64_t ModelClock::optimizer_ns(int position) const {
  int64_t ns = 0;
  for (int st : schedule_.stages_of(position)) ns += costs_.stages[st].optimizer_ns;
  return ns;
}

std::pair<int64_t, int64_t> ModelClock::send(const Message& msg, int microbatch, int64_t now) {
  const int from = schedule_.stage_position[msg.from_stage], to = schedule_.stage_position[msg.to_stage];
  std::lock_guard<std::mutex> lock(mu_);
  int64_t start = now, at = now;
  if (from != to) {
    int64_t& free = link_free_[{from, to}];
    start = std::max(now, free);
    free = start + cut_busy_[msg.cut()];
    at = free + cut_latency_[msg.cut()];
  }
  arrivals_[{static_cast<int>(msg.kind), msg.to_stage, microbatch}].push_back(at);
  return {start, at};
}

int64_t ModelClock::receive(const Op& op, const Message& msg, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = arrivals_.find({static_cast<int>(msg.kind), op.stage, op.microbatch});
  if (it == arrivals_.end() || it->second.empty()) {
    throw RunError("model time: no arrival stamped for the tensor " + to_string(op.kind) + " of stage " +
                   std::to_string(op.stage) + " micro-batch " + std::to_string(op.microbatch) + " received");
  }
  const int64_t at = it->second.front();
  it->second.pop_front();
  const bool remote = schedule_.stage_position[msg.from_stage] != schedule_.stage_position[op.stage];
  const int64_t block = blocking() && remote ? cut_busy_[msg.cut()] + cut_latency_[msg.cut()] : 0;
  return std::max(now + block, at);
}

void ModelClock::reach(int step, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t& r = reached_[step];
  r = std::max(r, now);
}

int64_t ModelClock::reached(int step) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reached_.find(step);
  return it == reached_.end() ? 0 : it->second;
}

}  // namespace pipescope::exec
