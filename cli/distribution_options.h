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

  // `for_search`: the plan search's variant (its --threads is the search's, and
  // --objective needs the jitter flags without --samples, which then defaults to 500).
  void add_to(CLI::App* cmd, bool for_search = false);
  // Whether --samples was given (then N must be >= 1).
  bool enabled() const { return samples_option_ != nullptr && samples_option_->count() > 0; }
  // Whether --jitter is "profile": the caller fills JitterSpec::stage_cv from the
  // profile's measured spread (stage_cv_from_profile) for each plan it samples.
  bool from_profile() const { return jitter == "profile"; }
  // The spec the flags describe; throws InputError naming the flag on a bad value.
  JitterSpec spec() const;

 private:
  CLI::Option* samples_option_ = nullptr;
};

// The lines `simulate --samples` adds under the report table.
std::string distribution_table(const StepDistribution& d);

}  // namespace pipescope::cli
