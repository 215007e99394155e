// Measures each layer of a model file on a backend into a v1 profile that can be
// executed (every layer keeps its spec). Per layer and micro-batch size: forward,
// backward, backward_input and backward_weight times (warm-up runs, then the median of
// `repeats`), activation_bytes = what the tracking allocator charged as activations
// during forward (the layer's stash, which is exactly what a stage worker keeps),
// output_bytes = the output tensor, parameter_bytes = the weights.
//   Profile p = profile_model(load_model("models/gpt-tiny.json"), {.batch_sizes = {1, 2, 4}});
#pragma once

#include <string>
#include <vector>

#include "core/profile.h"
#include "exec/model.h"

namespace pipescope::exec {

struct ProfileOptions {
  std::string backend = "cpu";
  std::vector<double> batch_sizes = {1, 2, 4, 8};
  int warmup = 2;
  int repeats = 7;
};

Profile profile_model(const ModelFile& model, const ProfileOptions& options);

}  // namespace pipescope::exec
