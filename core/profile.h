// A profile: each layer's forward/backward time and memory, measured (or modelled)
// at a few micro-batch sizes. Every per-batch-size array has one value per entry of
// `batch_sizes` (sorted, strictly increasing); values at other sizes are interpolated
// piecewise-linearly, extrapolated linearly from the last two points past either end,
// and scaled proportionally when there is a single point. Layers are listed in a
// topological order; `edges` (optional) make a DAG whose edges all go forward.
//   Profile p = load_profile("profiles/gpt-1.3b-h200.json");
//   double f = p.forward_ms(3, 6.0);   // layer 3 at micro-batch size 6
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.h"

namespace pipescope {

// Optional, per batch size (profile key "workspace_bytes", measured by `profile --model`
// through the tracking allocator; docs/memory.md): the bytes a layer's ops hold besides
// the weights and the stash, which the memory rules of core/op_rules.h add up into a
// stage's transients. All six arrays are present or the object is absent.
struct LayerWorkspace {
  std::vector<double> input;            // the layer's input tensor
  std::vector<double> forward;          // most bytes forward (with a stash) adds above its start
  std::vector<double> forward_no_grad;  // the same for a forward that keeps nothing (re-materialisation)
  std::vector<double> backward_input;   // most bytes backward_input adds above its start
  std::vector<double> backward_weight;  // most bytes backward_weight adds above its start
  std::vector<double> held_for_weight;  // output gradients backward_input keeps until backward_weight
  bool present() const { return !forward.empty(); }
};

struct LayerProfile {
  std::string name;
  std::vector<double> forward_ms;
  std::vector<double> backward_ms;
  std::vector<double> activation_bytes;  // kept for backward, per micro-batch
  // Optional, per batch size ("weight_grad_bytes"; docs/memory.md): the part of
  // activation_bytes the weight gradient W still needs after the input gradient I. Under
  // split backward I frees the rest (core/op_rules.h). At most activation_bytes; empty:
  // I frees nothing (the whole stash lives until W).
  std::vector<double> weight_grad_bytes;
  std::vector<double> output_bytes;      // handed to the next layer
  // Optional, per batch size ("shared_with_next_bytes", a chain's layers but the last;
  // `pipescope_torch profile` measures it): of this layer's activation_bytes, the tensor
  // it saves of its output that the next layer saves again as its input (a ReLU's result,
  // the next Linear's input). One forward keeps it once, so a stage holding both layers
  // counts it once (Profile::stash_bytes); a cut between them leaves each stage its own.
  std::vector<double> shared_with_next_bytes;
  int64_t parameter_bytes = 0;
  // Split backward for zero-bubble schedules; both present or both absent.
  std::vector<double> backward_input_ms;
  std::vector<double> backward_weight_ms;
  LayerWorkspace workspace;  // empty when the profile does not have it
  // Optional, per batch size ("fb_overlap_ms", dualpipev; docs/schedules-new.md): how
  // much shorter an overlapped forward-and-backward pair runs when this layer's forward
  // is its F (DualPipe hides one micro-batch's communication under the other's
  // compute). At most min(forward_ms, backward_ms); empty: pairs run back to back.
  std::vector<double> fb_overlap_ms;
  // Optional ("optimizer_ms"): one optimizer step (Adam) over the layer's parameters,
  // measured by `profile --model`; < 0 when absent.
  double optimizer_ms = -1;
  Json spec;  // null when absent: a layer the executor can build
  // Optional measured spread: the coefficient of variation (sd / mean) of the forward
  // and backward times, per batch size; both present or both absent. The CPU profiler
  // writes them; `simulate --jitter profile` samples with them.
  std::vector<double> forward_cv;
  std::vector<double> backward_cv;
};

// Whether the layer is a profile's loss (spec {"type": "loss"}: `pipescope_torch profile
// --loss`), which a runtime runs as the last stage's loss_fn, not as a module.
inline bool is_loss_layer(const LayerProfile& layer) {
  return layer.spec.is_object() && layer.spec.contains("type") && layer.spec["type"] == "loss";
}

// What a profile without "device" or "backend" says (both are optional in the file).
inline constexpr const char* kUnspecified = "unspecified";

struct Profile {
  std::string model;
  std::string device_name;
  int64_t device_memory_bytes = 0;  // 0: not given
  std::string backend;
  std::string dtype;
  std::vector<double> batch_sizes;
  std::vector<LayerProfile> layers;
  std::vector<std::pair<int, int>> edges;  // empty: the layers form a chain
  std::string source;                      // file it was read from, for messages

  int num_layers() const { return static_cast<int>(layers.size()); }
  bool has_split_backward() const;
  // Whether every layer has workspace_bytes (then predictions count transients).
  bool has_workspace() const;
  // Whether every layer has optimizer_ms (then predictions end the step with it).
  bool has_optimizer_time() const;
  bool has_spread() const;  // every layer carries forward_cv and backward_cv
  // Whether some layer has weight_grad_bytes (then I frees part of its stash).
  bool has_weight_grad_bytes() const;
  bool is_chain() const { return edges.empty(); }
  // Edges of the model graph: `edges` when present, else i -> i+1.
  std::vector<std::pair<int, int>> graph_edges() const;

  double forward_ms(int layer, double batch) const;
  double backward_ms(int layer, double batch) const;
  // Split backward; when the profile has no split, each is half of backward_ms.
  double backward_input_ms(int layer, double batch) const;
  double backward_weight_ms(int layer, double batch) const;
  double fb_overlap_ms(int layer, double batch) const;  // 0 without the field
  int64_t activation_bytes(int layer, double batch) const;
  int64_t output_bytes(int layer, double batch) const;
  // What W still needs of the layer's stash after I: its weight_grad_bytes, or without the
  // field all of activation_bytes (I frees nothing).
  int64_t weight_grad_bytes(int layer, double batch) const;
  // LayerProfile::shared_with_next_bytes at `batch` (0 without the field).
  int64_t shared_with_next_bytes(int layer, double batch) const;
  // The stash of layers [first, end) run as one stage: their activation_bytes less what
  // adjacent layers of it share (shared_with_next_bytes of every layer but the last). The
  // one statement of a stage's stash: the cost model and the planner's stage model use it.
  int64_t stash_bytes(int first, int end, double batch) const;
  // The stash of the profile's loss layer (is_loss_layer, always the last) at `batch`; 0
  // without one.
  int64_t loss_bytes(double batch) const;
  double interpolate(const std::vector<double>& values, double batch) const;
};

// Piecewise-linear interpolation of ys over strictly increasing xs; linear
// extrapolation from the nearest two points outside; y0 * x / x0 for one point.
double interpolate_piecewise(const std::vector<double>& xs, const std::vector<double>& ys, double x);

// Limits of a profile, checked by the reader and by the synthetic generators.
inline constexpr int kMaxProfileLayers = 1'000'000;
inline constexpr double kMaxProfileBytes = 1125899906842624.0;  // 2^50 (1 PiB) per value
inline constexpr double kMaxProfileMs = 1.0e9;                   // per value

Profile load_profile(const std::string& path);
Profile profile_from_json(const JsonReader& reader);
Json profile_to_json(const Profile& profile);

}  // namespace pipescope
