// Model files, stage construction from profile specs, and the deterministic synthetic data.
#include "exec/layers/model.h"

#include "core/error.h"
#include "exec/backends/cpu_backend.h"

namespace pipescope::exec {

ModelFile model_from_json(const JsonReader& r) {
  r.expect_format("pipescope.model");
  ModelFile m;
  m.source = r.source();
  m.name = r["name"].as_string();
  JsonReader layers = r["layers"];
  if (layers.size() == 0) layers.fail("expected at least one layer");
  for (const JsonReader& l : layers.items()) {
    ModelLayer layer;
    layer.name = l["name"].as_string();
    if (!l["spec"].json().is_object()) l["spec"].fail("expected an object");
    l["spec"]["type"].as_string();
    layer.spec = l["spec"].json();
    m.layers.push_back(std::move(layer));
  }
  return m;
}

ModelFile load_model(const std::string& path) { return model_from_json(JsonReader::from_file(path)); }

namespace {

JsonReader spec_reader(const Profile& p, int i) {
  if (p.layers[i].spec.is_null()) {
    throw InputError(p.source, "layers[" + std::to_string(i) + "]",
                     "layer \"" + p.layers[i].name +
                         "\" has no spec, so it cannot be executed (profile a model file with "
                         "`pipescope profile --model`)");
  }
  auto root = std::make_shared<const Json>(p.layers[i].spec);
  return JsonReader(root, root.get(), p.source, "layers[" + std::to_string(i) + "].spec");
}

}  // namespace

StageLayers build_stage_layers(const Profile& profile, int first, int end, Context ctx) {
  if (!profile.is_chain()) {
    throw InputError(profile.source, "edges", "the executor runs chains of layers only; this profile has edges");
  }
  StageLayers layers;
  for (int i = first; i < end; ++i) {
    layers.push_back(make_layer(spec_reader(profile, i), ctx, kLayerSeed + static_cast<uint64_t>(i)));
    if (layers.size() > 1) {
      const Layer& a = *layers[layers.size() - 2];
      const Layer& b = *layers.back();
      if (a.out_features() != b.in_features() || a.sequence() != b.sequence()) {
        throw InputError(profile.source, "layers[" + std::to_string(i) + "].spec",
                         "input [sequence " + std::to_string(b.sequence()) + ", features " +
                             std::to_string(b.in_features()) + "] does not match the previous layer's output "
                             "[sequence " + std::to_string(a.sequence()) + ", features " +
                             std::to_string(a.out_features()) + "]");
      }
    }
  }
  return layers;
}

void check_executable(const Profile& profile) {
  CpuBackend backend;
  MemoryTracker tracker;
  Context ctx{backend, tracker};
  // Builds one layer at a time (parameters are freed at once) and checks the chain.
  int64_t prev_out = -1, prev_seq = -1;
  for (int i = 0; i < profile.num_layers(); ++i) {
    StageLayers one = build_stage_layers(profile, i, i + 1, ctx);
    if (prev_out >= 0 && (one[0]->in_features() != prev_out || one[0]->sequence() != prev_seq)) {
      throw InputError(profile.source, "layers[" + std::to_string(i) + "].spec",
                       "input features " + std::to_string(one[0]->in_features()) +
                           " do not match the previous layer's output features " + std::to_string(prev_out));
    }
    prev_out = one[0]->out_features();
    prev_seq = one[0]->sequence();
  }
}

namespace {

// Sample n's values come from its own seed, so any micro-batch split of the same
// mini-batch sees the same data.
std::vector<float> per_sample_data(uint64_t seed_base, int64_t first, int64_t count, int64_t sequence,
                                   int64_t features) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(count * sequence * features));
  for (int64_t n = first; n < first + count; ++n) {
    std::vector<float> v = uniform_values(seed_base + static_cast<uint64_t>(n), sequence * features, 1.0f);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

std::vector<float> input_data(int64_t first, int64_t count, int64_t sequence, int64_t features) {
  return per_sample_data(0xDA7A0000ull, first, count, sequence, features);
}

std::vector<float> target_data(int64_t first, int64_t count, int64_t sequence, int64_t features) {
  return per_sample_data(0x7A26E70000ull, first, count, sequence, features);
}

}  // namespace pipescope::exec
