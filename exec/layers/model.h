// Executable models: a model file (pipescope.model) lists layers with their specs; a
// profile measured from it carries the same specs, so any plan over that profile can be
// built and run. Layer i is initialised from seed kLayerSeed + i wherever it is built, so
// a pipeline stage and the single-process reference hold identical parameters.
// Training data is synthetic and deterministic: sample n's input and target depend on n
// only; the loss is the mean squared error over the whole mini-batch.
//   ModelFile m = load_model("models/gpt-tiny.json");
//   StageLayers layers = build_stage_layers(profile, 0, 4, ctx);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/profile.h"
#include "exec/layers/layer.h"

namespace pipescope::exec {

inline constexpr uint64_t kLayerSeed = 1000;

struct ModelLayer {
  std::string name;
  Json spec;
};

struct ModelFile {
  std::string name;
  std::vector<ModelLayer> layers;
  std::string source;
};

ModelFile load_model(const std::string& path);
ModelFile model_from_json(const JsonReader& reader);

using StageLayers = std::vector<std::unique_ptr<Layer>>;

// Builds layers [first, end) of the profile; throws InputError when a layer has no spec,
// the model is not a chain, or consecutive layers' shapes do not match.
StageLayers build_stage_layers(const Profile& profile, int first, int end, Context ctx);
// Checks that every layer of the profile can be built and that shapes chain.
void check_executable(const Profile& profile);

// Synthetic data for samples [first, first + count): [count x sequence, features].
std::vector<float> input_data(int64_t first, int64_t count, int64_t sequence, int64_t features);
std::vector<float> target_data(int64_t first, int64_t count, int64_t sequence, int64_t features);

}  // namespace pipescope::exec
