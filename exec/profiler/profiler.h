// Measures each layer of a model file on a backend into a v1 profile that can be
// executed (every layer keeps its spec). Per layer and micro-batch size: forward,
// backward, backward_input and backward_weight times (warm-up rounds, then the median
// of `repeats` rounds, or their trimmed mean; each round times every layer once, so the
// machine's slow spells fall on all layers alike), activation_bytes = what the tracking allocator charged as activations
// during forward (the layer's stash, which is exactly what a stage worker keeps),
// output_bytes = the output tensor, parameter_bytes = the weights. Before each timed op
// the profiler overwrites a buffer larger than the per-core cache, because in a pipelined
// step a layer's weights and stash have left the cache by the time its op runs.
//   Profile p = profile_model(load_model("models/gpt-tiny.json"), {.batch_sizes = {1, 2, 4}});
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/profile.h"
#include "exec/layers/model.h"

namespace pipescope::exec {

// What each op keeps of its timings: the median, or the mean less the fastest and
// slowest tenth (--statistic median | trimmed-mean).
enum class ProfileStatistic { Median, TrimmedMean };
ProfileStatistic parse_profile_statistic(const std::string& name);  // throws InputError naming --statistic
std::string to_string(ProfileStatistic statistic);

struct ProfileOptions {
  std::string backend = "cpu";
  std::vector<double> batch_sizes = {1, 2, 4, 8};
  int warmup = 2;
  int repeats = 20;
  ProfileStatistic statistic = ProfileStatistic::Median;  // of each op's `repeats` timings
  int64_t cache_flush_bytes = 8 << 20;  // 0: time with warm caches
  std::ostream* progress = nullptr;     // one line per micro-batch size: time taken, timing spread
};

Profile profile_model(const ModelFile& model, const ProfileOptions& options);

}  // namespace pipescope::exec
