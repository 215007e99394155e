// The flags that ask for a step-time distribution instead of one deterministic step:
// --samples N --jitter CV|profile [--straggler P:SLOWDOWN] [--link-jitter CV] --seed S
// [--threads T]; shared by `simulate` and `plan --objective`. Without --samples
// nothing changes (a plain `simulate` stays deterministic and fast).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/cost_model.h"
#include "core/profile.h"
#include "sim/distribution.h"

namespace pipescope::cli {

struct DistributionOptions {
  int samples = 0;
  std::string jitter = "0";  // a CV, or "profile" (the profile's measured spread per layer)
  std::string straggler;     // "P:SLOWDOWN"
  double link_jitter = 0;
  uint64_t seed = 1;
  int threads = 0;

  void add_to(CLI::App* cmd);
  bool enabled() const { return samples > 0; }
  // The spec for a plan's cost model (`--jitter profile` reads the profile's spread per
  // stage); throws InputError naming the flag on a bad value.
  JitterSpec spec(const Profile& profile, const CostModel& costs) const;
};

// The lines `simulate --samples` adds under the report table.
std::string distribution_table(const StepDistribution& d);

}  // namespace pipescope::cli
