// See replay.h.
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
