// A K x M sweep computed the plain way, call for call as `pipescope simulate` does
// (make_plan, make_schedule, validate_schedule, build_cost_model, simulate), with no
// code from gui/models, to hold compute_sweep and the sweep tab to.
#pragma once

#include "core/cost_model.h"
#include "core/error.h"
#include "core/schedule.h"
#include "gui/models/sweep.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

namespace pipescope::gui {

// The sweep computed the plain way, call for call as `pipescope simulate` does, to
// hold compute_sweep to: same cells, same best (highest throughput among fitting
// cells, first in row-major order on ties).
struct BruteForce {
  std::vector<double> throughput;  // -1: invalid, -2: does not fit
  int best = -1;
};
inline BruteForce brute_force(const PlanInputs& base, const SweepAxes& axes) {
  BruteForce out;
  double best_tp = -1;
  for (int k : axes.stages) {
    for (int m : axes.microbatches) {
      PlanChoice c = base.choice;
      c.stages = k;
      c.microbatches = m;
      c.hardware = base.hardware.get();  // as the CLI: the optimal partitioner sees the hardware
      double tp = -1;
      try {
        if (k > base.hardware->devices) throw InputError("more stages than devices");
        const MadePlan made = make_plan(*base.profile, c);
        const Plan& plan = made.plan;
        Schedule s = schedule_for(plan);
        validate_schedule(s);
        CostModel costs = build_cost_model(made.profile, plan, *base.hardware);  // what the ranges index
        SimOptions o;
        o.record_timeline = false;
        StepReport r = simulate(s, costs, *base.hardware, o);
        tp = r.fits() ? r.throughput_samples_per_s : -2;
      } catch (const InputError&) {
      }
      if (tp > best_tp) {
        best_tp = tp;
        out.best = static_cast<int>(out.throughput.size());
      }
      out.throughput.push_back(tp);
    }
  }
  if (best_tp < 0) out.best = -1;
  return out;
}

}  // namespace pipescope::gui
