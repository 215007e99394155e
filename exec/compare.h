// Puts a prediction and a measurement of the same plan side by side: step time,
// throughput, bubble, and per stage busy time, peak activation bytes and peak memory,
// each with its relative error (measured - predicted) / predicted.
//   Comparison c = compare_reports(load_report("p.json"), load_report("m.json"));
//   std::cout << comparison_table(c);
#pragma once

#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/report.h"

namespace pipescope::exec {

struct ComparedValue {
  std::string name;  // "step_time_ms", "stage 1 peak_activation_bytes", ...
  double predicted = 0;
  double measured = 0;
  double relative_error() const;  // (measured - predicted) / predicted; 0 when both are 0
};

struct Comparison {
  std::vector<ComparedValue> values;
  std::vector<std::string> warnings;  // the two reports describe different plans
};

// Throws InputError when the two reports have different numbers of stages.
Comparison compare_reports(const StepReport& prediction, const StepReport& measurement);
Json comparison_to_json(const Comparison& c);

// A copy of `costs` whose op times are the measurement's: for every model stage and op
// kind, the mean duration of that kind's ops in the measurement's timeline (kinds it did
// not run keep the model's time). Simulating it replays the measured step with the
// measured op times, which splits an error in two: replayed - predicted is what the op
// times explain, measured - replayed what the pipeline adds (waiting, transfers, the
// executor's own work, ops whose durations vary from one to the next).
CostModel with_measured_op_times(CostModel costs, const StepReport& measurement);
std::string comparison_table(const Comparison& c);

}  // namespace pipescope::exec
