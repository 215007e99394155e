// Random valid schedules for property tests, all drawn from one seed (print it on
// failure): K devices, S >= K stages (stage s < K on device s, later stages on random
// devices, so V-shapes, loops and lopsided maps all occur), M micro-batches, whole (B)
// or split (I then W) backward chosen per (stage, micro-batch), re-materialisation on
// or off, and a random topological order of the op graph (at every step a random ready
// op is appended to its device's list), which is always valid.
//   Schedule s = random_schedule(rng, {.devices = 3, .stages = 6, .microbatches = 4});
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/op_rules.h"
#include "core/schedule.h"

namespace pipescope::testing {

struct RandomScheduleShape {
  int devices = 2;
  int stages = 2;
  int microbatches = 2;
  bool r_ops = false;  // R ops present (Schedule::r_ops)
  double split_share = 0.5;  // chance that a (stage, micro-batch) splits its backward
};

// The V-shape of ZB-V / DualPipeV: 2K stages, device d holds stages d and 2K-1-d.
inline std::vector<int> v_shape_map(int devices) {
  std::vector<int> map(static_cast<std::size_t>(2 * devices));
  for (int d = 0; d < devices; ++d) map[d] = d, map[2 * devices - 1 - d] = d;
  return map;
}

inline Schedule random_schedule(std::mt19937_64& rng, const RandomScheduleShape& shape,
                                std::vector<int> map = {}) {
  Schedule s;
  s.name = "random";
  s.num_microbatches = shape.microbatches;
  s.r_ops = shape.r_ops;
  const int K = shape.devices, S = map.empty() ? shape.stages : static_cast<int>(map.size()), M = shape.microbatches;
  if (map.empty()) {
    for (int st = 0; st < S; ++st) map.push_back(st < K ? st : static_cast<int>(rng() % K));
  }
  s.stage_position = map;
  s.position_ops.resize(K);
  // Every op of the step, then a random topological order of them.
  std::vector<Op> todo;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int st = 0; st < S; ++st) {
    for (int m = 0; m < M; ++m) {
      todo.push_back({OpKind::Forward, st, m});
      if (shape.r_ops) todo.push_back({OpKind::Recompute, st, m});
      if (unit(rng) < shape.split_share) {
        todo.push_back({OpKind::BackwardInput, st, m});
        todo.push_back({OpKind::BackwardWeight, st, m});
      } else {
        todo.push_back({OpKind::Backward, st, m});
      }
    }
  }
  ProductTable done(S, M);
  while (!todo.empty()) {
    std::vector<std::size_t> ready;
    for (std::size_t i = 0; i < todo.size(); ++i) {
      if (done.ready(todo[i], shape.r_ops)) ready.push_back(i);
    }
    const std::size_t pick = ready[rng() % ready.size()];
    const Op op = todo[pick];
    todo.erase(todo.begin() + static_cast<std::ptrdiff_t>(pick));
    s.position_ops[map[op.stage]].push_back(op);
    done.mark(product_of(op.kind), op.stage, op.microbatch);
  }
  return s;
}

}  // namespace pipescope::testing
