// The flushed schedules with one stage per device: GPipe (all forwards, then all
// backwards; Huang et al., NeurIPS 2019) and 1F1B (PipeDream-Flush / Megatron-LM's
// non-interleaved schedule: K - d - 1 warm-up forwards, then one forward one backward).
// Invariant: device d holds stage d's F and B of every micro-batch, F(m) before B(m).
#include <algorithm>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedules/builder.h"

namespace pipescope {

using schedules::add_recompute;
using schedules::empty_schedule;

namespace {

// Device d's list: `warmup` forwards, then one forward one backward, then the
// remaining backwards. GPipe is the case warmup = M (every forward first).
std::vector<Op> warmup_then_1f1b(int d, int warmup, int microbatches) {
  std::vector<Op> ops;
  ops.reserve(2 * static_cast<std::size_t>(microbatches));
  int next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) ops.push_back({OpKind::Forward, d, next_f});
  while (next_f < microbatches) {
    ops.push_back({OpKind::Forward, d, next_f++});
    ops.push_back({OpKind::Backward, d, next_b++});
  }
  while (next_b < microbatches) ops.push_back({OpKind::Backward, d, next_b++});
  return ops;
}

}  // namespace

Schedule make_gpipe(int devices, int microbatches, bool r_ops) {
  ScheduleSpec spec{ScheduleKind::GPipe, devices, microbatches, 1, r_ops};
  check_schedule_spec(spec);
  Schedule s = empty_schedule(spec);
  for (int d = 0; d < devices; ++d) s.position_ops[d] = warmup_then_1f1b(d, microbatches, microbatches);
  add_recompute(s);
  return s;
}

Schedule make_1f1b(int devices, int microbatches, bool r_ops) {
  ScheduleSpec spec{ScheduleKind::OneFOneB, devices, microbatches, 1, r_ops};
  check_schedule_spec(spec);
  Schedule s = empty_schedule(spec);
  for (int d = 0; d < devices; ++d) {
    s.position_ops[d] = warmup_then_1f1b(d, std::min(devices - d - 1, microbatches), microbatches);
  }
  add_recompute(s);
  return s;
}

}  // namespace pipescope
