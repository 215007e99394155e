// The asynchronous schedules: PipeDream (Narayanan et al., SOSP 2019) and PipeDream-2BW
// (Narayanan et al., ICML 2021). Both run 1F1B's order over `steps` x M micro-batches
// with no flush between steps: the pipeline fills once and stays full. They differ only
// in Schedule::weight_update (what core/op_rules.h's WeightVersions does at each
// micro-batch's last op). Invariant: the op lists are exactly make_1f1b's for steps x M
// micro-batches, so everything that holds for 1F1B's order (validity, one stage per
// device, K - s micro-batches in flight on position s) holds here.
#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/op_rules.h"
#include "core/schedule.h"

namespace pipescope {

std::string to_string(WeightUpdate update) {
  switch (update) {
    case WeightUpdate::Flush: return "flush";
    case WeightUpdate::Stash: return "stash";
    case WeightUpdate::DoubleBuffer: return "double-buffer";
  }
  return "?";
}

namespace {

Schedule async_1f1b(ScheduleKind kind, int devices, int microbatches, int steps, bool r_ops) {
  check_schedule_spec({kind, devices, microbatches, 1, r_ops, 0, steps});
  Schedule s = make_1f1b(devices, microbatches * steps, r_ops);
  s.name = to_string(kind);
  s.steps = steps;
  s.weight_update = schedule_kind(kind).weight_update;
  return s;
}

}  // namespace

// Position s has K - s micro-batches in flight in the steady state, each on the version
// that was current at its F: K - s versions (one kept copy fewer, the current one).
Schedule make_pipedream(int devices, int microbatches, int steps, bool r_ops) {
  return async_1f1b(ScheduleKind::PipeDream, devices, microbatches, steps, r_ops);
}

// Step t + 2's first F on position s waits for the B of micro-batch (t + 2) M - (K - s)
// (1F1B keeps K - s in flight), which is after step t's last B only when M >= K - s:
// M >= K lets two versions serve every stage (the 2BW paper's m >= d).
Schedule make_2bw(int devices, int microbatches, int steps, bool r_ops) {
  return async_1f1b(ScheduleKind::PipeDream2BW, devices, microbatches, steps, r_ops);  // M >= K
}

void validate_weight_versions(const Schedule& s, const std::string& where) {
  if (!s.asynchronous()) return;
  for (int d = 0; d < s.positions(); ++d) {
    std::vector<std::optional<WeightVersions>> versions(static_cast<std::size_t>(s.stages()));
    for (int st : s.stages_of(d)) versions[st].emplace(s);
    for (std::size_t i = 0; i < s.position_ops[d].size(); ++i) {
      const Op& op = s.position_ops[d][i];
      try {
        versions[op.stage]->use(op);
        versions[op.stage]->finish(op);
      } catch (const InputError& e) {
        throw InputError(where + "device " + std::to_string(d) + ", op " + std::to_string(i) + ": " + e.what());
      }
    }
  }
}

}  // namespace pipescope
