// Puts a prediction and a measurement of the same plan side by side: step time,
// throughput, bubble, and per stage busy time, peak activation bytes and peak memory,
// each with its relative error (measured - predicted) / predicted.
//   Comparison c = compare_reports(load_report("p.json"), load_report("m.json"));
//   std::cout << comparison_table(c);
#pragma once

#include <string>
#include <vector>

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

std::string comparison_table(const Comparison& c);

}  // namespace pipescope::exec
