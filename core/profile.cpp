#include "core/profile.h"

#include <algorithm>

#include <cmath>
#include <set>

#include "core/error.h"

namespace pipescope {

double interpolate_piecewise(const std::vector<double>& xs, const std::vector<double>& ys,
                             double x) {
  if (xs.size() == 1) return ys[0] * x / xs[0];
  std::size_t hi = 1;
  while (hi + 1 < xs.size() && x > xs[hi]) ++hi;  // segment [hi-1, hi], clamped to the ends
  double x0 = xs[hi - 1], x1 = xs[hi];
  double t = (x - x0) / (x1 - x0);
  return ys[hi - 1] + t * (ys[hi] - ys[hi - 1]);
}

bool Profile::has_split_backward() const {
  for (const LayerProfile& l : layers) {
    if (l.backward_input_ms.empty()) return false;
  }
  return !layers.empty();
}

bool Profile::has_optimizer_time() const {
  for (const LayerProfile& l : layers) {
    if (l.optimizer_ms < 0) return false;
  }
  return !layers.empty();
}

bool Profile::has_workspace() const {
  for (const LayerProfile& l : layers) {
    if (!l.workspace.present()) return false;
  }
  return !layers.empty();
}

std::vector<std::pair<int, int>> Profile::graph_edges() const {
  if (!edges.empty()) return edges;
  std::vector<std::pair<int, int>> chain;
  for (int i = 0; i + 1 < num_layers(); ++i) chain.emplace_back(i, i + 1);
  return chain;
}

double Profile::interpolate(const std::vector<double>& values, double batch) const {
  return std::max(0.0, interpolate_piecewise(batch_sizes, values, batch));
}

double Profile::forward_ms(int layer, double batch) const {
  return interpolate(layers[layer].forward_ms, batch);
}
double Profile::backward_ms(int layer, double batch) const {
  return interpolate(layers[layer].backward_ms, batch);
}
bool Profile::has_weight_grad_bytes() const {
  return std::any_of(layers.begin(), layers.end(), [](const LayerProfile& l) { return !l.weight_grad_bytes.empty(); });
}
bool Profile::has_spread() const {
  return std::all_of(layers.begin(), layers.end(), [](const LayerProfile& l) { return !l.forward_cv.empty(); });
}

double Profile::backward_input_ms(int layer, double batch) const {
  const LayerProfile& l = layers[layer];
  if (l.backward_input_ms.empty()) return backward_ms(layer, batch) / 2;
  return interpolate(l.backward_input_ms, batch);
}
double Profile::backward_weight_ms(int layer, double batch) const {
  const LayerProfile& l = layers[layer];
  if (l.backward_weight_ms.empty()) return backward_ms(layer, batch) - backward_input_ms(layer, batch);
  return interpolate(l.backward_weight_ms, batch);
}
double Profile::fb_overlap_ms(int layer, double batch) const {
  const LayerProfile& l = layers[layer];
  return l.fb_overlap_ms.empty() ? 0.0 : interpolate(l.fb_overlap_ms, batch);
}
int64_t Profile::activation_bytes(int layer, double batch) const {
  return std::llround(interpolate(layers[layer].activation_bytes, batch));
}
int64_t Profile::weight_grad_bytes(int layer, double batch) const {
  const LayerProfile& l = layers[layer];
  if (l.weight_grad_bytes.empty()) return activation_bytes(layer, batch);
  // Interpolated on its own, then clamped: W never needs more than the stash holds.
  return std::min<int64_t>(activation_bytes(layer, batch), std::llround(interpolate(l.weight_grad_bytes, batch)));
}
int64_t Profile::shared_with_next_bytes(int layer, double batch) const {
  const LayerProfile& l = layers[layer];
  if (l.shared_with_next_bytes.empty()) return 0;
  return std::min<int64_t>(activation_bytes(layer, batch), std::llround(interpolate(l.shared_with_next_bytes, batch)));
}
int64_t Profile::stash_bytes(int first, int end, double batch) const {
  int64_t bytes = 0;
  for (int l = first; l < end; ++l) bytes += activation_bytes(l, batch) - (l + 1 < end ? shared_with_next_bytes(l, batch) : 0);
  return bytes;
}
int64_t Profile::loss_bytes(double batch) const {
  return !layers.empty() && is_loss_layer(layers.back()) ? activation_bytes(num_layers() - 1, batch) : 0;
}
int64_t Profile::output_bytes(int layer, double batch) const {
  return std::llround(interpolate(layers[layer].output_bytes, batch));
}

namespace {

// Byte counts are bounded at 2^50 bytes (1 PiB) per value; sums over layers and
// micro-batches are checked against int64 by build_cost_model.
constexpr double kMaxBytes = kMaxProfileBytes;
constexpr double kMaxMs = kMaxProfileMs;
constexpr double kMaxCv = 100.0;  // a coefficient of variation beyond this is not a measurement

std::vector<double> per_batch(const JsonReader& layer, const char* key, std::size_t n,
                              double max) {
  JsonReader field = layer[key];
  std::vector<double> values = field.as_doubles(0.0);
  if (values.size() != n) {
    field.fail("expected " + std::to_string(n) + " values (one per batch_sizes entry), got " +
               std::to_string(values.size()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (values[i] > max) field.items()[i].fail("value is implausibly large");
  }
  return values;
}

constexpr const char* kWorkspaceKeys[] = {"input", "forward", "forward_no_grad", "backward_input",
                                          "backward_weight", "held_for_weight"};

std::vector<double>* workspace_field(LayerWorkspace& w, int i) {
  std::vector<double>* fields[] = {&w.input, &w.forward, &w.forward_no_grad, &w.backward_input,
                                   &w.backward_weight, &w.held_for_weight};
  return fields[i];
}

LayerWorkspace read_workspace(const JsonReader& r, std::size_t n) {
  if (!r.json().is_object()) r.fail("expected an object");
  LayerWorkspace w;
  for (int i = 0; i < 6; ++i) *workspace_field(w, i) = per_batch(r, kWorkspaceKeys[i], n, kMaxBytes);
  return w;
}

// Optional, for hand-written profiles: device {"name": "unspecified"} with unknown
// memory (0; the hardware file sets the memory limit), backend "unspecified", dtype "fp32".
void read_device(const JsonReader& r, Profile& p) {
  p.device_name = kUnspecified;
  if (r.has("device")) {
    JsonReader device = r["device"];
    if (!device.json().is_object()) device.fail("expected an object {\"name\": ..., \"memory_bytes\": ...}");
    p.device_name = device.has("name") ? device["name"].as_string() : kUnspecified;
    p.device_memory_bytes = device.has("memory_bytes") ? device["memory_bytes"].as_int(1) : 0;
  }
  p.backend = r.has("backend") ? r["backend"].as_string() : kUnspecified;
  p.dtype = r.has("dtype") ? r["dtype"].as_string() : "fp32";
}

// Positive, strictly increasing, at least one.
std::vector<double> read_batch_sizes(const JsonReader& sizes) {
  std::vector<double> b = sizes.as_doubles();
  if (b.empty()) sizes.fail("expected at least one batch size");
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!(b[i] > 0)) sizes.items()[i].fail("batch sizes must be positive");
    if (b[i] > 1e9) sizes.items()[i].fail("batch size is implausibly large");
    if (i > 0 && !(b[i] > b[i - 1])) sizes.items()[i].fail("batch_sizes must be strictly increasing");
  }
  return b;
}

// Two optional per-batch fields that come together or not at all.
bool read_pair(const JsonReader& l, const char* a, const char* b, std::size_t n, double max,
               std::vector<double>& va, std::vector<double>& vb) {
  const bool has_a = l.has(a), has_b = l.has(b);
  if (has_a != has_b) {
    l.fail(std::string(a) + " and " + b + " go together; only " + (has_a ? a : b) + " is present");
  }
  if (!has_a) return false;
  va = per_batch(l, a, n, max);
  vb = per_batch(l, b, n, max);
  return true;
}

// W needs part of the stash, never more.
void check_weight_grad_bytes(const JsonReader& l, const LayerProfile& layer, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (layer.weight_grad_bytes[i] > layer.activation_bytes[i]) {
      l["weight_grad_bytes"].items()[i].fail(
          "expected at most activation_bytes[" + std::to_string(i) + "] = " +
          std::to_string(static_cast<int64_t>(layer.activation_bytes[i])) +
          " (the weight gradient needs part of what the forward keeps), got " +
          std::to_string(static_cast<int64_t>(layer.weight_grad_bytes[i])));
    }
  }
}

// A pair never runs shorter than its longer op.
void check_fb_overlap(const JsonReader& l, const LayerProfile& layer, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double most = std::min(layer.forward_ms[i], layer.backward_ms[i]);
    if (layer.fb_overlap_ms[i] > most) {
      l["fb_overlap_ms"].items()[i].fail("expected at most min(forward_ms, backward_ms) = " + std::to_string(most) +
                                         " ms (an overlapped pair never runs shorter than its longer op), got " +
                                         std::to_string(layer.fb_overlap_ms[i]));
    }
  }
}

// One entry of "layers", with n values per per-batch field.
LayerProfile read_layer(const JsonReader& l, std::size_t n) {
  LayerProfile layer;
  layer.name = l["name"].as_string();
  layer.forward_ms = per_batch(l, "forward_ms", n, kMaxMs);
  layer.backward_ms = per_batch(l, "backward_ms", n, kMaxMs);
  layer.activation_bytes = per_batch(l, "activation_bytes", n, kMaxBytes);
  layer.output_bytes = per_batch(l, "output_bytes", n, kMaxBytes);
  if (l.has("weight_grad_bytes")) {
    layer.weight_grad_bytes = per_batch(l, "weight_grad_bytes", n, kMaxBytes);
    check_weight_grad_bytes(l, layer, n);
  }
  if (l.has("shared_with_next_bytes")) {
    layer.shared_with_next_bytes = per_batch(l, "shared_with_next_bytes", n, kMaxBytes);
    for (std::size_t i = 0; i < n; ++i) {
      if (layer.shared_with_next_bytes[i] > layer.activation_bytes[i]) {
        l["shared_with_next_bytes"].items()[i].fail("expected at most activation_bytes (" +
                                                    std::to_string(static_cast<int64_t>(layer.activation_bytes[i])) +
                                                    "): a layer shares part of what it saves");
      }
    }
  }
  layer.parameter_bytes = l["parameter_bytes"].as_int(0, static_cast<int64_t>(kMaxBytes));
  read_pair(l, "backward_input_ms", "backward_weight_ms", n, kMaxMs, layer.backward_input_ms, layer.backward_weight_ms);
  if (l.has("optimizer_ms")) layer.optimizer_ms = l["optimizer_ms"].as_double(0.0, kMaxMs);
  if (l.has("workspace_bytes")) layer.workspace = read_workspace(l["workspace_bytes"], n);
  if (l.has("fb_overlap_ms")) {
    layer.fb_overlap_ms = per_batch(l, "fb_overlap_ms", n, kMaxMs);
    check_fb_overlap(l, layer, n);
  }
  read_pair(l, "forward_cv", "backward_cv", n, kMaxCv, layer.forward_cv, layer.backward_cv);
  if (l.has("spec")) {
    if (!l["spec"].json().is_object()) l["spec"].fail("expected an object");
    layer.spec = l["spec"].json();
  }
  return layer;
}

// [from, to] pairs between listed layers, each forward in the listed (topological) order, once.
std::vector<std::pair<int, int>> read_edges(const JsonReader& edges, std::size_t layers) {
  std::vector<std::pair<int, int>> out;
  std::set<std::pair<int, int>> seen;
  const int64_t last = static_cast<int64_t>(layers) - 1;
  for (const JsonReader& e : edges.items()) {
    if (e.size() != 2) e.fail("expected [from, to]");
    int from = static_cast<int>(e.items()[0].as_int(0, last));
    int to = static_cast<int>(e.items()[1].as_int(0, last));
    if (to <= from) {
      e.fail("edge " + std::to_string(from) + " -> " + std::to_string(to) +
             " goes backward; layers must be listed in a topological order");
    }
    if (!seen.insert({from, to}).second) e.fail("duplicate edge");
    out.emplace_back(from, to);
  }
  return out;
}

}  // namespace

Profile profile_from_json(const JsonReader& r) {
  r.expect_format("pipescope.profile");
  Profile p;
  p.source = r.source();
  p.model = r["model"].as_string();
  read_device(r, p);
  p.batch_sizes = read_batch_sizes(r["batch_sizes"]);
  JsonReader layers = r["layers"];
  if (layers.size() == 0) layers.fail("expected at least one layer");
  if (layers.size() > static_cast<std::size_t>(kMaxProfileLayers)) {
    layers.fail("more than " + std::to_string(kMaxProfileLayers) + " layers is not supported, got " +
                std::to_string(layers.size()));
  }
  for (const JsonReader& l : layers.items()) p.layers.push_back(read_layer(l, p.batch_sizes.size()));
  if (r.has("edges")) p.edges = read_edges(r["edges"], p.layers.size());
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    if (p.layers[i].shared_with_next_bytes.empty()) continue;
    if (i + 1 == p.layers.size()) layers.items()[i]["shared_with_next_bytes"].fail("the last layer has no next layer");
    if (!p.edges.empty()) {
      layers.items()[i]["shared_with_next_bytes"].fail("only a chain profile (no \"edges\") says what a layer shares "
                                                       "with the next");
    }
  }
  return p;
}

Profile load_profile(const std::string& path) {
  return profile_from_json(JsonReader::from_file(path));
}

Json profile_to_json(const Profile& p) {
  Json layers = Json::array();
  for (const LayerProfile& l : p.layers) {
    Json j = {{"name", l.name},
              {"forward_ms", json_numbers(l.forward_ms)},
              {"backward_ms", json_numbers(l.backward_ms)},
              {"activation_bytes", json_numbers(l.activation_bytes)},
              {"output_bytes", json_numbers(l.output_bytes)},
              {"parameter_bytes", l.parameter_bytes}};
    if (!l.weight_grad_bytes.empty()) j["weight_grad_bytes"] = json_numbers(l.weight_grad_bytes);
    if (!l.shared_with_next_bytes.empty()) j["shared_with_next_bytes"] = json_numbers(l.shared_with_next_bytes);
    if (!l.backward_input_ms.empty()) {
      j["backward_input_ms"] = json_numbers(l.backward_input_ms);
      j["backward_weight_ms"] = json_numbers(l.backward_weight_ms);
    }
    if (l.optimizer_ms >= 0) j["optimizer_ms"] = l.optimizer_ms;
    if (!l.fb_overlap_ms.empty()) j["fb_overlap_ms"] = json_numbers(l.fb_overlap_ms);
    if (l.workspace.present()) {
      Json w = Json::object();
      LayerWorkspace copy = l.workspace;
      for (int i = 0; i < 6; ++i) w[kWorkspaceKeys[i]] = json_numbers(*workspace_field(copy, i));
      j["workspace_bytes"] = std::move(w);
    }
    if (!l.forward_cv.empty()) {
      j["forward_cv"] = json_numbers(l.forward_cv);
      j["backward_cv"] = json_numbers(l.backward_cv);
    }
    if (!l.spec.is_null()) j["spec"] = l.spec;
    layers.push_back(std::move(j));
  }
  Json device = {{"name", p.device_name}};
  if (p.device_memory_bytes > 0) device["memory_bytes"] = p.device_memory_bytes;
  Json out = {{"format", "pipescope.profile"},
              {"version", 1},
              {"model", p.model},
              {"device", std::move(device)},
              {"backend", p.backend},
              {"dtype", p.dtype},
              {"batch_sizes", json_numbers(p.batch_sizes)},
              {"layers", std::move(layers)}};
  if (!p.edges.empty()) {
    Json edges = Json::array();
    for (auto [a, b] : p.edges) edges.push_back({a, b});
    out["edges"] = std::move(edges);
  }
  return out;
}

}  // namespace pipescope
