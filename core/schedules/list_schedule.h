// A greedy list scheduler that writes zero-bubble style orders: it plays the pipeline
// forward in time with given per-op times and a fixed hop delay, and whenever a device
// is idle it appends the op its policy picks among those ready. The zero-bubble paper
// builds ZB-H1/H2 and its heuristic schedule this way (Qi et al., ICLR 2024, section 3
// and appendix G); zb-h2 uses unit times, zb-auto the plan's real times.
// Invariant: the result holds every op of every (stage, micro-batch) exactly once, on
// its stage's device, and walking it with the op rules always makes progress (a
// device only appends an op whose inputs exist); W follows its I.
//   ListPolicy p = ListPolicy::unit(stage_position_map(...), M);  p.max_alive = {...};
//   Schedule s = list_schedule(p, "zb-h2");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule.h"

namespace pipescope {

struct ListPolicy {
  std::vector<int> stage_position;   // model stage -> device
  int microbatches = 1;
  std::vector<int64_t> forward_ns, input_ns, weight_ns;  // per stage (I = backward input)
  int64_t hop_ns = 0;              // added when a result crosses to another device
  // Per device, in (stage, micro-batch) units: at most max_alive held at once (F
  // started, W not done) and at most max_warmup forwarded whose I has not started.
  std::vector<int> max_alive, max_warmup;
  // Optional byte budget per device (empty: none): an F starts only when the device's
  // held stash bytes plus the stage's stash_bytes stay within max_bytes. F holds
  // stash_bytes, I frees freed_at_input_bytes of it, W the rest (core/op_rules.h).
  std::vector<int64_t> max_bytes;
  std::vector<int64_t> stash_bytes, freed_at_input_bytes;  // per stage (with max_bytes)
  bool forward_first = true;       // an allowed F before a ready I (1F1B's warm-up); else I first
  // Run W only when neither F nor I can run (fill bubbles); else right after its I.
  bool defer_weight = true;
  // A deferred W waits (the device idles) when an I of the device will be ready
  // before the W could end: the zero-bubble heuristic's "insert W only into a bubble
  // of at least T_W", which keeps the backward critical path moving at the tail.
  bool weight_lookahead = false;

  // Unit times (F = I = W = 1), free hops, limits of M everywhere.
  static ListPolicy unit(std::vector<int> stage_position, int microbatches);
};

// Throws InputError when the policy cannot finish (a limit below 1).
Schedule list_schedule(const ListPolicy& policy, const std::string& name);

}  // namespace pipescope
