// A layer the executor can run, built from a profile layer's `spec`. Inputs and outputs
// are [rows, features] with rows = samples x sequence. Backward is split in two so that
// zero-bubble schedules run for real: backward_input (the gradient for the previous
// layer) and backward_weight (accumulates parameter gradients).
// Stash rule (what makes the activation accounting exact): forward stashes only its
// input and tensors it creates itself, never its output, so every stashed buffer is
// charged by exactly one layer; backward_input keeps the output gradients that
// backward_weight needs in `pending` (transient, not activations). Under split backward
// the worker may call release_for_weight after backward_input: the layer drops the saved
// tensors its backward_weight does not read (what the profile's weight_grad_bytes leaves:
// core/op_rules.h's rule for I); the rest goes when the whole stash is dropped after
// backward_weight.
//   auto layer = make_layer(spec_reader, ctx, seed);
//   LayerStash st; Tensor y = layer->forward(x, &st);
//   Tensor dx = layer->backward_input(dy, st); layer->release_for_weight(st); layer->backward_weight(st);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "exec/memory/tensor.h"

namespace pipescope::exec {

struct Parameter {
  std::string name;
  Tensor value;  // Category::Parameters
  Tensor grad;   // Category::Gradients, accumulated over micro-batches
};

struct LayerStash {
  std::vector<Tensor> saved;     // kept from forward for backward (activations)
  std::vector<Tensor> pending;   // output gradients kept from backward_input for backward_weight
  std::vector<LayerStash> children;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // stash == nullptr: run forward keeping nothing (the first pass under re-materialisation).
  virtual Tensor forward(const Tensor& x, LayerStash* stash) = 0;
  virtual Tensor backward_input(const Tensor& dy, LayerStash& stash) = 0;
  virtual void backward_weight(LayerStash& stash) = 0;
  // After backward_input: drop the saved tensors backward_weight does not read. A layer
  // without parameters reads none; layers with parameters keep theirs unless they say
  // otherwise (linear: its input; layernorm: input, mean and rstd for dgamma).
  virtual void release_for_weight(LayerStash& stash) {
    if (parameters().empty()) stash.saved.clear();
  }
  Tensor backward(const Tensor& dy, LayerStash& stash) {
    Tensor dx = backward_input(dy, stash);
    backward_weight(stash);
    return dx;
  }
  virtual std::vector<Parameter*> parameters() { return {}; }
  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
  // Rows per sample (the sequence length); 1 for a plain feature vector.
  virtual int64_t sequence() const { return sequence_; }

 protected:
  int64_t sequence_ = 1;
};

// Builds a layer from its spec ({"type": "linear", "in": 64, "out": 64}, ...); throws
// InputError naming the spec's JSON path on an unknown type or a bad field. Parameters
// are initialised deterministically from `seed`.
std::unique_ptr<Layer> make_layer(const JsonReader& spec, Context ctx, uint64_t seed);
std::vector<std::string> layer_types();

// Deterministic uniform values in [-scale, scale] (splitmix64), for weights and data.
std::vector<float> uniform_values(uint64_t seed, int64_t n, float scale);

}  // namespace pipescope::exec
