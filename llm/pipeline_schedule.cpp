// The rules of llm/pipeline_schedule.h: each kind's constraints are its record's
// (core/schedule_kinds.h, which its generator in core/schedules/ checks too), so that the
// search refuses a layout before building its schedule; the in-flight walk replays
// make_schedule's lists.
#include "llm/pipeline_schedule.h"

#include <algorithm>
#include <set>

namespace pipescope {

namespace {

std::string str(int v) { return std::to_string(v); }

}  // namespace

ScheduleKind layout_schedule(const ParallelLayout& l) {
  if (l.schedule) return *l.schedule;
  return l.v > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
}

const std::vector<ScheduleKind>& timed_schedules() {
  using K = ScheduleKind;
  static const std::vector<ScheduleKind> kinds = {K::GPipe,     K::OneFOneB,    K::Interleaved,
                                                  K::LoopedBFS, K::InterleavedZeroBubble, K::ZeroBubbleV,
                                                  K::DualPipeV};
  return kinds;
}

std::string schedule_refusal(const ParallelLayout& l) {
  const ScheduleKind kind = layout_schedule(l);
  const std::string name = to_string(kind);
  const auto& timed = timed_schedules();
  if (std::find(timed.begin(), timed.end(), kind) == timed.end()) {
    std::string names;
    for (ScheduleKind k : timed) names += (names.empty() ? "" : ", ") + to_string(k);
    return "schedule: llm/ times " + names + ", not " + name;
  }
  if (l.p < 2) {
    if (kind == ScheduleKind::OneFOneB) return "";
    return "schedule: " + name + " needs a pipeline (--pipeline-model-parallel-size > 1, got " + str(l.p) + ")";
  }
  if (!schedule_takes_chunks(kind, l.v)) {
    const ChunkRule rule = schedule_kind(kind).chunks;
    const char* takes = rule == ChunkRule::One      ? "1 chunk per rank (v = 1)"
                        : rule == ChunkRule::VShape ? "exactly 2 chunks per rank (V-shape, v = 2)"
                                                    : "v > 1 chunks per rank (with v = 1 it is 1f1b or gpipe)";
    return "schedule: " + name + " runs " + takes + ", got v = " + str(l.v);
  }
  // M is the micro-batches per pipeline, set by --global-batch-size.
  if (const std::string why = microbatch_refusal(kind, l.p, l.microbatches, "p"); !why.empty()) {
    return "--global-batch-size: " + why;
  }
  return "";
}

int chunk_rank(const ParallelLayout& l, int chunk) {
  if (v_shaped(layout_schedule(l)) && l.v == 2 && chunk >= l.p) return 2 * l.p - 1 - chunk;
  return chunk % l.p;
}

bool ends_with_backward_chain(ScheduleKind kind) { return !schedule_kind(kind).split_backward; }

InFlight schedule_in_flight(ScheduleKind kind, int p, int v, int microbatches) {
  const Schedule s = make_schedule({kind, p, microbatches, v});
  const int S = s.stages();
  InFlight out;
  out.rank_chunks.assign(static_cast<std::size_t>(p), 0);
  out.rank_stages.resize(static_cast<std::size_t>(p));
  out.rank_states.resize(static_cast<std::size_t>(p));
  std::vector<int> stage_alive(static_cast<std::size_t>(S), 0);
  for (int r = 0; r < s.positions(); ++r) {
    const auto& ops = s.position_ops[static_cast<std::size_t>(r)];
    std::vector<int>& stages = out.rank_stages[static_cast<std::size_t>(r)];
    for (const Op& op : ops) {
      if (std::find(stages.begin(), stages.end(), op.stage) == stages.end()) stages.push_back(op.stage);
    }
    auto local = [&](int stage) {
      return static_cast<std::size_t>(std::find(stages.begin(), stages.end(), stage) - stages.begin());
    };
    std::vector<int> state(2 * stages.size(), 0);  // per local stage: before I's end, then waiting for W
    std::set<std::vector<int>> seen;
    std::vector<int> last;  // the state inserted last: a steady state repeats it every F
    int alive = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      int& here = stage_alive[static_cast<std::size_t>(op.stage)];
      const std::size_t j = local(op.stage);
      if (op.kind == OpKind::Forward) {
        ++alive, ++here, ++state[2 * j];
        out.rank_chunks[static_cast<std::size_t>(r)] = std::max(out.rank_chunks[static_cast<std::size_t>(r)], alive);
        if (op.stage == 0) out.first_chunk = std::max(out.first_chunk, here);
        if (op.stage == S - 1) out.last_chunk = std::max(out.last_chunk, here);
        // Only the last F of a run of them can peak (the next F covers this one).
        if ((i + 1 == ops.size() || ops[i + 1].kind != OpKind::Forward) && state != last) {
          seen.insert(state);
          last = state;
        }
      } else if (op.kind == OpKind::BackwardInput) {
        --state[2 * j], ++state[2 * j + 1];
      } else if (op.kind == OpKind::Backward) {
        --alive, --here, --state[2 * j];
      } else if (op.kind == OpKind::BackwardWeight) {
        --alive, --here, --state[2 * j + 1];
      }
    }
    // Bytes are never negative, so a state another one covers in every count never peaks.
    const std::vector<std::vector<int>> all(seen.begin(), seen.end());
    auto covers = [](const std::vector<int>& a, const std::vector<int>& b) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i] < b[i]) return false;
      }
      return a != b;
    };
    for (const std::vector<int>& x : all) {
      if (std::none_of(all.begin(), all.end(), [&](const std::vector<int>& y) { return covers(y, x); })) {
        out.rank_states[static_cast<std::size_t>(r)].push_back(x);
      }
    }
  }
  return out;
}

std::vector<double> peak_bytes(const InFlight& walked, const std::vector<double>& held,
                               const std::vector<double>& for_weight) {
  std::vector<double> out(walked.rank_states.size(), 0.0);
  for (std::size_t r = 0; r < walked.rank_states.size(); ++r) {
    const std::vector<int>& stages = walked.rank_stages[r];
    for (const std::vector<int>& state : walked.rank_states[r]) {
      double bytes = 0;
      for (std::size_t j = 0; j < stages.size(); ++j) {
        const auto st = static_cast<std::size_t>(stages[j]);
        bytes += state[2 * j] * held[st] + state[2 * j + 1] * for_weight[st];
      }
      out[r] = std::max(out[r], bytes);
    }
  }
  return out;
}

}  // namespace pipescope
