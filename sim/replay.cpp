// See replay.h. The optimizer step's measured time goes on each device's first stage.
#include "sim/replay.h"

#include <map>
#include <string>
#include <utility>

namespace pipescope {

CostModel with_measured_op_times(CostModel costs, const Timeline& measured) {
  struct Sum {
    int64_t ns = 0, count = 0;
  };
  std::map<std::pair<int, std::string>, Sum> sums;
  for (const TimelineEvent& e : measured.events) {
    if (e.stage < 0 || e.stage >= static_cast<int>(costs.stages.size())) continue;
    Sum& s = sums[{e.stage, e.category}];
    s.ns += e.duration_ns;
    ++s.count;
  }
  auto mean = [&](int stage, const char* kind, int64_t& field) {
    auto it = sums.find({stage, kind});
    if (it != sums.end() && it->second.count > 0) field = it->second.ns / it->second.count;
  };
  // The optimizer step of device d (its track d): on the device's first stage, 0 on the others.
  std::map<int, int64_t> optimizer;
  for (const TimelineEvent& e : measured.events) {
    if (e.category == "optimizer" && e.track < static_cast<int>(costs.position_device.size())) optimizer[e.track] = e.duration_ns;
  }
  std::map<int, bool> placed;
  for (int s = 0; s < static_cast<int>(costs.stages.size()) && !optimizer.empty(); ++s) {
    const int d = s < static_cast<int>(costs.stage_position.size()) ? costs.stage_position[s] : s;
    costs.stages[s].optimizer_ns = placed[d] ? 0 : optimizer[d];
    placed[d] = true;
  }
  for (int s = 0; s < static_cast<int>(costs.stages.size()); ++s) {
    StageCost& c = costs.stages[s];
    mean(s, "forward", c.forward_ns);
    mean(s, "backward", c.backward_ns);
    mean(s, "backward_input", c.backward_input_ns);
    mean(s, "backward_weight", c.backward_weight_ns);
    mean(s, "recompute", c.recompute_ns);
  }
  return costs;
}

}  // namespace pipescope
