// make_schedule: the one place a ScheduleKind picks its generator, and the helpers all
// generators share (core/schedules/builder.h).
// Invariant: make_schedule checks the spec before any generator runs.
#include <algorithm>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedules/builder.h"

namespace pipescope {

namespace schedules {

Schedule empty_schedule(const ScheduleSpec& spec) {
  Schedule s;
  s.name = to_string(spec.kind);
  s.num_microbatches = spec.microbatches;
  s.r_ops = spec.r_ops;
  s.stage_position = stage_position_map(spec.kind, spec.positions, spec.chunks);
  s.position_ops.resize(spec.positions);
  return s;
}

void add_recompute(Schedule& s) {
  if (!s.r_ops) return;
  for (auto& ops : s.position_ops) {
    if (std::any_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::Recompute; })) continue;
    std::vector<Op> out;
    out.reserve(ops.size() * 3 / 2);
    for (const Op& op : ops) {
      if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) {
        out.push_back({OpKind::Recompute, op.stage, op.microbatch});
      }
      out.push_back(op);
    }
    ops = std::move(out);
  }
}

}  // namespace schedules

Schedule with_recompute(Schedule s) {
  s.r_ops = true;
  schedules::add_recompute(s);
  return s;
}

Schedule make_schedule(const ScheduleSpec& spec) {
  check_schedule_spec(spec);  // the generators take no chunk count: check the spec's here
  switch (spec.kind) {
    case ScheduleKind::GPipe: return make_gpipe(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::OneFOneB: return make_1f1b(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::Interleaved:
      return make_interleaved(spec.positions, spec.microbatches, spec.chunks, spec.r_ops);
    case ScheduleKind::ZeroBubbleH1:
      return make_zb_h1(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::ZeroBubbleH2: return make_zb_h2(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::ZeroBubbleV: return make_zb_v(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::DualPipeV: return make_dualpipev(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::ZeroBubbleAuto:
      return make_zb_auto_unit(spec.positions, spec.microbatches, spec.max_inflight, spec.r_ops);
    case ScheduleKind::LoopedBFS:
      return make_looped_bfs(spec.positions, spec.microbatches, spec.chunks, spec.r_ops);
    case ScheduleKind::InterleavedZeroBubble:
      return make_interleaved_zb(spec.positions, spec.microbatches, spec.chunks, spec.r_ops);
    case ScheduleKind::VMin: return make_v_min(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::VHalf: return make_v_half(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::VZeroBubble: return make_v_zb(spec.positions, spec.microbatches, spec.r_ops);
    case ScheduleKind::PipeDream: return make_pipedream(spec.positions, spec.microbatches, spec.steps, spec.r_ops);
    case ScheduleKind::PipeDream2BW: return make_2bw(spec.positions, spec.microbatches, spec.steps, spec.r_ops);
  }
  throw InputError("unknown schedule kind");
}

}  // namespace pipescope
