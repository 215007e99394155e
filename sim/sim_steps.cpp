// What the simulator does around its one walk of a schedule: dualpipev's overlapped
// F&B savings per op, a flushed step repeated over several steps, a flushed schedule
// unrolled into one op list (post-validation), and the notes a prediction carries.
// Invariant: none of these changes a time the walk computed; a repeat shifts copies of
// the timeline by whole steps.
#include "sim/sim_steps.h"

#include <algorithm>
#include <tuple>

namespace pipescope {

// dualpipev's overlapped F&B pairs (Schedule::overlapped_backwards), per flat op: how
// much shorter the pair's B runs, min(the F stage's fb_overlap_ns, F, B), so the pair
// takes F + B - overlap and never less than max(F, B). Empty when nothing overlaps.
std::vector<int64_t> overlap_savings(const Schedule& s, const CostModel& c) {
  std::vector<int64_t> saved;
  const bool any = std::any_of(c.stages.begin(), c.stages.end(), [](const StageCost& st) { return st.fb_overlap_ns > 0; });
  if (s.overlapped_backwards.empty() || !any) return saved;
  auto key = [](const Op& a, const Op& b) { return std::tie(a.stage, a.microbatch) < std::tie(b.stage, b.microbatch); };
  saved.assign(s.num_ops(), 0);
  std::size_t flat = 0;
  for (const std::vector<Op>& ops : s.position_ops) {
    for (std::size_t i = 0; i < ops.size(); ++i, ++flat) {
      const Op& b = ops[i];
      if (i == 0 || b.kind != OpKind::Backward || ops[i - 1].kind != OpKind::Forward) continue;
      if (!std::binary_search(s.overlapped_backwards.begin(), s.overlapped_backwards.end(), b, key)) continue;
      const StageCost& f = c.stages[ops[i - 1].stage];
      saved[flat] = std::min({f.fb_overlap_ns, f.forward_ns, c.stages[b.stage].backward_ns});
    }
  }
  return saved;
}

// A flushed step repeated: step t spans [t T, (t + 1) T); the timeline gets every copy.
void repeat_step(StepReport& r, int steps) {
  const int64_t T = r.step_ns;
  std::vector<int64_t> ends;
  for (int t = 0; t < steps; ++t) ends.push_back((t + 1) * T);
  Timeline& tl = r.timeline;
  const std::size_t events = tl.events.size(), samples = tl.memory.size();
  tl.events.reserve(events * steps);
  tl.memory.reserve(samples * steps);
  for (int t = 1; t < steps; ++t) {
    for (std::size_t i = 0; i < events; ++i) {
      TimelineEvent e = tl.events[i];
      e.start_ns += t * T;
      tl.events.push_back(e);
    }
    for (std::size_t i = 0; i < samples; ++i) {
      MemorySample m = tl.memory[i];
      m.time_ns += t * T;
      tl.memory.push_back(m);
    }
  }
  for (PositionReport& st : r.positions) st.busy_ns *= steps;  // bubble fractions stay as they are
  set_step_ends(r, std::move(ends));
}

// A flushed schedule's op lists repeated `steps` times without a flush: step t's
// micro-batch n is t M + n (post-validation runs the steps as one op list).
Schedule unroll_steps(const Schedule& s, int steps) {
  Schedule u = s;
  const int M = s.microbatches();
  u.steps = steps;
  u.num_microbatches = M * steps;
  u.overlapped_backwards.clear();
  for (std::size_t d = 0; d < s.position_ops.size(); ++d) {
    std::vector<Op>& ops = u.position_ops[d];
    ops.clear();
    ops.reserve(s.position_ops[d].size() * steps);
    for (int t = 0; t < steps; ++t) {
      for (Op op : s.position_ops[d]) ops.push_back({op.kind, op.stage, op.microbatch + t * M});
    }
  }
  for (int t = 0; t < steps; ++t) {
    for (Op op : s.overlapped_backwards) u.overlapped_backwards.push_back({op.kind, op.stage, op.microbatch + t * M});
  }
  std::sort(u.overlapped_backwards.begin(), u.overlapped_backwards.end(),
            [](const Op& a, const Op& b) { return std::tie(a.stage, a.microbatch) < std::tie(b.stage, b.microbatch); });
  return u;
}

void add_prediction_notes(StepReport& r, const Schedule& s, const CostModel& c, const Hardware& h, bool blocking,
                          bool post_validation) {
  const bool split = s.has_split_backward();  // a scan over every op: once
  if (!c.split_measured && split) {
    r.notes.push_back("the profile has no split backward: I (input gradient) and W (weight gradient) "
                      "each take half of backward_ms");
  }
  if (split) {
    r.notes.push_back(c.weight_grad_counted
                          ? "split backward: I frees what W does not need of a micro-batch's stash (activation_bytes "
                            "- weight_grad_bytes), W frees the rest (core/op_rules.h)"
                          : "split backward: the profile has no weight_grad_bytes, so I frees nothing and a "
                            "micro-batch's whole stash lives until its W (an upper bound: a runtime that frees at "
                            "I holds less)");
  }
  if (!c.extrapolation_note.empty()) r.notes.push_back(c.extrapolation_note);
  if (h.memory_bytes == 0) r.notes.push_back("no hardware file: communication is free and memory is unbounded");
  if (s.asynchronous()) {
    r.notes.push_back(s.name + " is asynchronous: steps overlap without a flush and backward passes use stale "
                      "weights (" + (s.weight_update == WeightUpdate::Stash
                                         ? "weight stashing: each micro-batch's backward uses the version its "
                                           "forward saw; an optimizer step after every micro-batch"
                                         : "2BW: step t runs on version t-1; W(t+1) = W(t) - lr g(t), one "
                                           "optimizer step per step") +
                      "); peak memory counts the extra weight versions (weight_versions)");
  }
  if (blocking) {
    r.notes.push_back("p2p: blocking (as Megatron-LM without --overlap-p2p-communication): a sender waits until "
                      "its tensor has arrived and a receive holds the device for the transfer's time");
  }
  if (post_validation) {
    r.notes.push_back("optimizer step: post-validation (each position steps its optimizer after its own last op of "
                      "the step and runs on into the next step; the global gradient-norm and finite check runs "
                      "behind it and would roll a failed step back, which is not simulated)");
  }
  if (c.transients_counted) {
    r.notes.push_back("peak memory = weights + gradients + optimizer state + stashed activations + transients "
                      "(tensors received and sent, the loss gradient, output gradients held from I to W, each "
                      "layer's workspace from the profile's workspace_bytes, all-reduce buffers; core/op_rules.h)");
  } else {
    r.notes.push_back("peak memory = weights + gradients + optimizer state + stashed activations "
                      "(core/op_rules.h); transients are not counted: the profile has no workspace_bytes (a "
                      "layer's workspace, tensors received and sent, the loss gradient, output gradients held "
                      "from I to W, all-reduce buffers)");
  }
}

}  // namespace pipescope
