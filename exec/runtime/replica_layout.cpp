// Checks a plan's replication against what the executor runs: the same r everywhere,
// integer micro-batches, r dividing the micro-batch.
#include "exec/runtime/replica_layout.h"

#include <string>

#include "core/error.h"

namespace pipescope::exec {

std::vector<int> ReplicaLayout::group_of(int w) const {
  std::vector<int> group;
  for (int i = 0; i < replicas; ++i) group.push_back(worker(position(w), i));
  return group;
}

ReplicaLayout replica_layout(const Plan& plan) {
  const std::string file = plan.source.empty() ? "plan" : plan.source;
  if (plan.stages.empty()) throw InputError(file, "stages", "expected at least one stage");
  ReplicaLayout l;
  l.positions = plan.pipeline_devices();
  l.replicas = static_cast<int>(plan.stages[0].devices.size());
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const int r = static_cast<int>(plan.stages[s].devices.size());
    if (r != l.replicas) {
      throw InputError(file, "stages[" + std::to_string(s) + "].devices",
                       "the executor runs every stage with the same number of replicas: expected " +
                           std::to_string(l.replicas) + " device(s) as stage 0 has, got " + std::to_string(r));
    }
  }
  if (plan.microbatches < 1 || plan.batch_size % plan.microbatches != 0) {
    throw InputError(file, "microbatches",
                     "expected a divisor of the batch size " + std::to_string(plan.batch_size) + ", got " +
                         std::to_string(plan.microbatches));
  }
  l.microbatch = plan.batch_size / plan.microbatches;
  if (l.microbatch % l.replicas != 0) {
    throw InputError(file, "stages[0].devices",
                     "each of the " + std::to_string(l.replicas) + " replicas of a stage takes an equal share of a " +
                         "micro-batch: expected a micro-batch size divisible by " + std::to_string(l.replicas) +
                         ", got " + std::to_string(l.microbatch));
  }
  return l;
}

}  // namespace pipescope::exec
