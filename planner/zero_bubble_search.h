// zb-auto: a zero-bubble order searched for the plan at hand (Qi et al., ICLR 2024,
// section 3 and appendix G, without the ILP). Inputs: the cost model's per-op times
// (F, I, W per stage), the hardware's links, and a cap of N micro-batches alive per
// device (F started, W not done: the zero-bubble repository's max pending backward).
// Objective: the shortest longest device span, measured by the simulator.
//   1. constructive: greedy list schedules (core/list_schedule.h) with the real times
//      and hops, for 3 warm-up depths x F-first/I-first x W look-ahead on/off, plus the
//      handcrafted 1f1b, zb-h1 and zb-h2 whenever they fit under the cap;
//   2. local search from the best list policy: coordinate descent on each device's
//      warm-up depth (+-1), three passes and at most max_evaluations (60) simulations in all, accepting
//      strict improvements only.
// Deterministic (no clocks, no randomness); never worse than any candidate of step 1.
//   Schedule s = search_zero_bubble(costs, hardware, 2 * K, M);
#pragma once

#include <cstdint>
#include <string>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/schedule.h"

namespace pipescope {

struct ZeroBubbleSearchReport {
  int64_t span_ns = 0;        // the result's objective: longest device span (or step)
  int64_t bound_ns = 0;       // the busiest device's work: M (T_F + T_B + T_W) on uniform stages
  int evaluations = 0;        // simulations run
  std::string start;          // which constructive candidate the local search started from
};

// `costs` holds one stage per device (straight map, 1 chunk); throws InputError for a
// cap below 1 or a cost model with more stages than devices.
struct ZeroBubbleSearchOptions {
  // At most this many simulations (>= 1); the handcrafted zb-h2 and zb-h1 come first,
  // so even 2 keep the never-worse guarantees. 60: about 0.5 s of one core at K = 32,
  // M = 256.
  int max_evaluations = 60;
  // The objective: the longest device span (zero-bubble measure), or the simulator's
  // step from time 0 (what `plan` ranks by; no timeline recorded, several times faster).
  bool longest_span = true;
};

Schedule search_zero_bubble(const CostModel& costs, const Hardware& hardware, int max_inflight, int microbatches,
                            ZeroBubbleSearchReport* report = nullptr, const ZeroBubbleSearchOptions& options = {});

// The plan's schedule given its costs: zb-auto searched with search_zero_bubble under
// plan.max_inflight (0: K), any other kind as schedule_for(plan).
Schedule schedule_for_costs(const Plan& plan, const CostModel& costs, const Hardware& hardware,
                            const ZeroBubbleSearchOptions& options = {});

// The largest number of micro-batches any device holds at once in `schedule` (F adds
// one, B or W removes one), counted from the order alone.
int max_alive_microbatches(const Schedule& schedule);

}  // namespace pipescope
