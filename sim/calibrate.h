// `pipescope calibrate`: the runtime terms of core/runtime_costs.h fitted to one measured
// run (sim/measured_trace.h) of a plan whose profiled costs are `costs`.
//
// Invariant: every term is read off spans the run measured, never off the step time
// alone, so the fit explains time rather than absorbing it: a term is the least-squares
// fit of the samples that isolate it, and its residual (RMS, same unit) is reported.
//   action_us[k]  the gaps between a rank's ops less the p2p issues and waits and the
//                 loss inside them, fitted as one constant per kind of the op after the gap
//                 plus the step's prologue (the gap before its first op);
//   op_us[k]      an op's measured span less the profile's time for its (kind, stage),
//                 one constant per kind (the loss added to the last stage's F when the
//                 profile has it as a layer); on the first stage I and W are compared
//                 with both the profile's split and the runtime's (I empty, W the whole
//                 backward) and the better fit is kept as first_stage split;
//   message       each p2p issue's span ~ a_send x sends + a_recv x recvs (one cost per
//                 message when sends and receives are always posted together);
//   loss_us       the loss spans' mean, when the profile has no loss layer;
//   step          the time after a rank's last op less what is accounted for, ~ e + e_last
//                 on the last stage's rank; the optimizer's spans ~ c x parameter bytes.
// A step longer than kOutlierStepFactor x the median step (a collector pause, a page-in, a
// profiler's own first step: one GPipe step of 49.7 ms among ten of 6.8-10.2 ms under
// torch.profiler, 2026-12-06) is left out of the fit and named in a note. A run with fewer
// than kMinSteps timed steps, with more than a quarter of its steps left out, or whose
// remaining step times vary by more than kMaxStepCv (their coefficient of variation), is
// refused: InputError naming the trace.
#pragma once

#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/runtime_costs.h"
#include "sim/measured_trace.h"

namespace pipescope {

inline constexpr int kMinSteps = 3;
inline constexpr double kMaxStepCv = 0.25;
inline constexpr double kOutlierStepFactor = 2.0;

struct FitTerm {
  std::string name;       // "action_us.F", "message.send_issue_us", ...
  double value_us = 0;    // the fitted value (per MiB for per-byte terms)
  int samples = 0;
  double residual_us = 0;  // RMS of the samples less the fit
};

struct Calibration {
  RuntimeCosts runtime;
  std::vector<FitTerm> terms;
  std::vector<double> step_ms;  // each timed step: the earliest rank's start to the latest rank's end
  double step_cv = 0;
  std::vector<std::string> notes;
};

struct CalibrationOptions {
  bool loss_in_profile = false;  // the profile's last layer is the loss (`profile --loss`)
  std::string framework;
  std::string schedule_class;
};

Calibration calibrate(const MeasuredTrace& trace, const CostModel& costs, const CalibrationOptions& options);

}  // namespace pipescope
