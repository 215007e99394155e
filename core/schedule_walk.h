// The dependency walk that the validator and the diagram share: it plays every
// device's list in order, running an op once its needs (core/op_rules.h) are done.
// Invariant: visit(device, index) sees each op exactly once, after every op it needs;
// a schedule that cannot make progress throws InputError naming the waiting cycle.
// Internal to core/ (schedule.cpp, schedule_diagram.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/op_rules.h"
#include "core/schedule.h"

namespace pipescope::detail {

// "F(stage 2, micro-batch 5)".
std::string op_name(const Op& op);
// Names the cycle of devices that wait on each other when no device can move.
std::string describe_deadlock(const Schedule& s, const std::vector<std::size_t>& cursor, const ProductTable& done);

// Walks the schedule in an order that respects every need (core/op_rules.h), calling
// visit(device, index) for each op; throws InputError naming the cycle on a deadlock.
template <typename Visit>
void walk_in_dependency_order(const Schedule& s, const std::string& source, Visit&& visit) {
  ProductTable done(s.stages(), s.microbatches());
  std::vector<std::size_t> cursor(s.positions(), 0);
  std::size_t left = s.num_ops();
  while (left > 0) {
    bool progress = false;
    for (int d = 0; d < s.positions(); ++d) {
      const auto& ops = s.position_ops[d];
      while (cursor[d] < ops.size() && done.ready(ops[cursor[d]], s.r_ops)) {
        const Op& op = ops[cursor[d]];
        visit(d, cursor[d]);
        done.mark(product_of(op.kind), op.stage, op.microbatch);
        ++cursor[d];
        --left;
        progress = true;
      }
    }
    if (!progress) {
      throw InputError((source.empty() ? "" : source + ": ") +
                       "schedule cannot make progress: " + describe_deadlock(s, cursor, done));
    }
  }
}

}  // namespace pipescope::detail
