// zb-auto: a zero-bubble order searched for the plan at hand (Qi et al., ICLR 2024,
// section 3 and appendix G, without the ILP). Inputs: the cost model's per-op times
// (F, I, W per stage), the hardware's links, and a cap of N micro-batches alive per
// device (F started, W not done: the zero-bubble repository's max pending backward)
// and/or a byte budget per device: the stash bytes it holds at once, F adding the
// stage's activation_bytes, I freeing what W does not need (weight_grad_bytes), W the
// rest (core/op_rules.h) -- the paper's ZB-1p / ZB-2p bound memory this way (p M_F and
// 2 p M_F), so that with weight_grad_bytes more micro-batches wait for their W.
// Objective: the shortest longest device span, ties to the shorter step from time 0,
// both from one timeline-free simulation.
//   1. constructive: greedy list schedules (core/schedules/list_schedule.h) with the real times
//      and hops, for 3 warm-up depths x F-first/I-first x W look-ahead on/off, plus the
//      handcrafted 1f1b, zb-h1 and zb-h2 whenever they fit under the cap;
//   2. policy search from the best list policy: coordinate descent on each device's
//      warm-up depth (+-1), accepting strict improvements only;
//   3. order search from the best order: on the device with the longest span, an idle
//      gap is filled by moving the next F, I or deferred W of that device into it (same
//      kinds keep their order; the cap and W-after-I hold), accepted when the objective
//      strictly improves.
// Deterministic (a budget of simulations, no clocks, no randomness); never worse than
// any candidate of step 1. One function serves `plan` and `simulate`/`run --plan`
// (schedule_for_costs), so a plan's predicted step reproduces to the nanosecond.
//   Schedule s = search_zero_bubble(costs, hardware, 2 * K, M);
#pragma once

#include <cstdint>
#include <string>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/runtime_costs.h"
#include "core/schedule.h"

namespace pipescope {

struct ZeroBubbleSearchReport {
  int64_t span_ns = 0;        // the result's objective: longest device span
  int64_t step_ns = 0;        // its step from time 0 (the tie-break)
  int64_t bound_ns = 0;       // the busiest device's work: M (T_F + T_B + T_W) on uniform stages
  // A lower bound on any order's longest span under the cap (zero_bubble_cap_bound_ns).
  int64_t cap_bound_ns = 0;
  std::vector<int64_t> peak_stash_bytes;  // per device: the result's (peak_stash_bytes)
  int evaluations = 0;        // simulations run
  int order_moves = 0;        // moves the order search (step 3) kept
  std::string start;          // which constructive candidate the local search started from
};

// `costs` holds one stage per device (straight map, 1 chunk); throws InputError for a
// cap below 1 or a cost model with more stages than devices.
struct ZeroBubbleSearchOptions {
  // At most this many simulations (>= 1) in steps 1 and 2; the handcrafted zb-h2 and
  // zb-h1 come first, so even 2 keep the never-worse guarantees.
  int max_evaluations = 40;
  // At most this many more in step 3 (0: no order search).
  int max_order_evaluations = 40;
  // Per device: the most stash bytes it may hold at once (empty: no byte budget). Each
  // must hold one micro-batch's stash of every stage on the device.
  std::vector<int64_t> activation_budget_bytes;
  // The p2p every candidate is simulated with (core/p2p.h): under blocking p2p a
  // transfer holds both devices, so the best order differs from the overlapped one.
  P2p p2p = P2p::Overlapped;
  // What the runtime spends around the ops (core/runtime_costs.h), charged in every
  // candidate's simulation as in the plan's: the best order is the runtime's, and the byte
  // budget counts what its I frees (sim/simulator.h input_pass_freed_bytes). Null: none.
  const RuntimeCosts* runtime = nullptr;
};

Schedule search_zero_bubble(const CostModel& costs, const Hardware& hardware, int max_inflight, int microbatches,
                            ZeroBubbleSearchReport* report = nullptr, const ZeroBubbleSearchOptions& options = {});

// The limits zb-auto searches a plan under:
//   --activation-budget B (plan.activation_budget_bytes): B bytes on every device, and
//     the count only when --max-inflight is given too;
//   --max-inflight N alone: the count N, no byte budget;
//   neither: on hardware with a memory size, the byte budget each device's memory
//     leaves after its static bytes (weights, gradients, optimizer state) and the
//     transients of its largest op (StageMemory peaks above the stash; an all-reduce's
//     gradient copy), no count; without a memory size the count K (1F1B's first stage).
//     When the memory leaves less than one micro-batch's stash, the count K as well (the
//     prediction then reports the misfit).
struct ZeroBubbleLimits {
  int max_inflight = 0;
  std::vector<int64_t> budget_bytes;  // per device; empty: none
};
ZeroBubbleLimits zero_bubble_limits(const Plan& plan, const CostModel& costs, const Hardware& hardware);

// The plan's schedule given its costs: zb-auto searched with search_zero_bubble (default
// options, `runtime` charged) under zero_bubble_limits, any other kind as schedule_for(plan).
// The one function `plan`, resolve() (simulate/run --plan) and the GUI call.
Schedule schedule_for_costs(const Plan& plan, const CostModel& costs, const Hardware& hardware,
                            const RuntimeCosts* runtime = nullptr);

// The most stash bytes each device holds at once in `schedule` by the rules above (F
// adds activation_bytes, I frees freed_at_input_bytes, B or W the rest), from the order
// alone: what the simulator reports as peak_activation_bytes without re-materialisation.
std::vector<int64_t> peak_stash_bytes(const Schedule& schedule, const CostModel& costs);

// A lower bound on the longest device span of any one-stage-per-device order with at
// most N micro-batches alive per device: the busiest device's work, and device 0's
// span >= sum over cuts s < K-1 of (F_s + I_s + 2 hop_s) + M (F+I+W)_{K-1}
// - min(N, M) W_{K-1} + W_0. (Device K-1 starts a forward chain after device 0; after
// its last I it holds only W passes, at most min(N, M) of them; that I's gradient
// then crosses back to device 0, whose W of that micro-batch ends its span.) With
// uniform stages the bubble is at least (K-1)(T_F + T_B + 2 T_comm) - (min(N,M)-1) T_W.
// With a byte budget B on device K-1 (`last_budget_bytes` > 0) at most
// 1 + (B - stash) / weight_grad_bytes micro-batches wait for their W there.
int64_t zero_bubble_cap_bound_ns(const CostModel& costs, const Hardware& hardware, int max_inflight, int microbatches,
                                 int64_t last_budget_bytes = 0);

// A lower bound on the step from time 0 of any order of `schedule`'s ops (what `plan`
// prunes zb-auto candidates by before searching their order): each device starts after
// micro-batch 0's forward chain reaches it, works all its ops' durations, then its
// replicas' gradient all-reduce and the optimizer step, as the simulator runs them.
int64_t zero_bubble_step_bound_ns(const Schedule& schedule, const CostModel& costs, const Hardware& hardware);

// The largest number of micro-batches any device holds at once in `schedule` (F adds
// one, B or W removes one), counted from the order alone.
int max_alive_microbatches(const Schedule& schedule);

}  // namespace pipescope
