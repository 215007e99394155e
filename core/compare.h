// Puts a prediction and a measurement of the same plan side by side: step time,
// throughput, bubble, and per stage busy time, peak activation bytes and peak memory (with
// offload also the bytes sent to the host and the host peak),
// each with its relative error (measured - predicted) / predicted. Report code, so it
// lives beside core/report.h: `pipescope compare`, `run --compare` and the GUI's
// comparison table all take their rows from here.
//   Comparison c = compare_reports(load_report("p.json"), load_report("m.json"));
//   std::cout << comparison_table(c);
#pragma once

#include <string>
#include <vector>

#include "core/report.h"

namespace pipescope {

struct ComparedValue {
  std::string name;  // "step_time_ms", "stage 1 peak_activation_bytes", ...
  double predicted = 0;
  double measured = 0;
  // (measured - predicted) / predicted; 0 when both are 0; +inf when only predicted is 0.
  double relative_error() const;
};

struct Comparison {
  std::vector<ComparedValue> values;
  std::vector<std::string> warnings;  // the two reports describe different plans
};

// Which stages are compared: both reports must have the same (Exact: the CLI, which
// refuses otherwise), or those both have (Common: the GUI, which says they differ).
enum class StageMatch { Exact, Common };

// Throws InputError when the two reports have different numbers of stages (Exact).
Comparison compare_reports(const StepReport& prediction, const StepReport& measurement,
                           StageMatch match = StageMatch::Exact);
Json comparison_to_json(const Comparison& c);

std::string comparison_table(const Comparison& c);

}  // namespace pipescope
