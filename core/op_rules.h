// What an op of a schedule means, stated once. The validator, the text diagram, the
// simulator, the planner's stage model, the GUI models and the executor's workers all
// ask here; no other file restates a rule.
//
//   waits for (besides its device's order), all of the same micro-batch m:
//     F(s,m): the output of F(s-1,m)                  (a message when s-1 is elsewhere)
//     R(s,m): F(s,m)
//     B(s,m), I(s,m): F(s,m); R(s,m) under re-materialisation; the input gradient made
//                     by B or I of (s+1,m)              (a message when s+1 is elsewhere)
//     W(s,m): I(s,m)
//   sends: F(s,m) its output to stage s+1; B(s,m) and I(s,m) the input gradient to
//          stage s-1 (the bytes that cross the cut between the two stages); R, W nothing.
//   costs: F forward, B backward, I backward_input, W backward_weight, R one more forward.
//   memory of a device (the rules the simulator and the executor's tracker follow, so
//   predicted and tracked activation peaks agree byte for byte):
//     static bytes        = parameters x (1 weights + 1 gradients + optimizer factor)
//     at the start of F   += stash: the stage's activation_bytes, or under
//                            re-materialisation only its input (0 for the first stage,
//                            whose input is data)
//     at the start of R   += the stage's activation_bytes (the recomputed activations)
//     at the end of I     -= what W does not need: activation_bytes - weight_grad_bytes
//                            (the profile's weight_grad_bytes; without it, nothing: the
//                            stash lives until W). The executor's layers drop exactly those
//                            tensors (exec/layers/layer.h: release_for_weight).
//     at the end of B / W -= everything held for (s,m) (W: the weight_grad_bytes I left).
//   transients (counted when the profile has workspace_bytes; core/profile.h): besides
//   the stash an op holds, while it runs, its input tensor (received, the data, or the
//   last stage's loss gradient), each layer's workspace (measured: what the layer's op
//   allocates above its start), the output it sends (until the send has copied it), and
//   on the last stage the loss's target and gradient. Across ops it holds the loss
//   gradient of the last stage (from F to its B or I) and, under split backward, the
//   output gradients each layer keeps from I to W (held_for_weight). stage_memory()
//   adds these up layer by layer in the executor's order (exec/runtime/stage_worker.cpp):
//     at the start of an op   the device's peak may rise to held + OpMemory::peak
//     at the end of an op     held += OpMemory::held (B and W: everything of (s,m) freed)
//   a replicated position's gradient all-reduce holds one flat copy of its gradients;
//   the optimizer step (SGD, Adam: in place) holds nothing more.
//   weight versions (Schedule::weight_update): under Flush a stage holds one version and
//   its optimizer steps once, after its device's last op (and the all-reduce). Otherwise
//   the op that frees (s,m) ends with the stage's weight update (an optimizer step of
//   the stage's profile optimizer time on its device), when:
//     Stash (PipeDream): after every micro-batch. F(s,m) runs on the stage's current
//       version and every later op of (s,m) on the same one (weight stashing).
//     DoubleBuffer (2BW): after the stage's M-th freed micro-batch of step t. Every op of
//       a step-t micro-batch runs on version max(t-1, 0): W(t+1) = W(t) - lr g(t), g(t)
//       computed on W(t-1).
//   An update first drops the kept versions no op will use again (Stash: the freed
//   micro-batch's; DoubleBuffer: version t-1), then keeps a copy of the current version
//   when an op will still run on it, then steps the optimizer in place (current + 1).
//   Each kept copy holds the stage's parameter bytes (weights only: one gradient buffer
//   and one optimizer state). The simulator and the executor replay WeightVersions.
//   step boundary (Plan::optimizer_step) under Flush, over several steps: synchronized,
//     the next step starts on every device once every device has stepped (a flush);
//     post-validation, a device's optimizer step follows its own last op of the step and
//     its next op (of the next step) starts as soon as the device is free and its input
//     has arrived.
//   replicated stage: runs at its slowest replica's speed; after its device's last op a
//   ring all-reduce of the device's gradients: 2 (r-1)/r x bytes / bandwidth + 2 (r-1)
//   latencies on the ring's slowest hop.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/hardware.h"
#include "core/schedule.h"

namespace pipescope {

// The results ops wait for: each op makes one.
enum class Product : uint8_t { Output, InputGradient, Recomputed, WeightGradient };
inline constexpr int kProducts = 4;
Product product_of(OpKind kind);

// A result of stage `stage` for the op's own micro-batch.
struct Need {
  Product product;
  int stage;
};

struct Needs {
  std::array<Need, 3> items{};
  int count = 0;
  const Need* begin() const { return items.data(); }
  const Need* end() const { return items.data() + count; }
};

// What `op` waits for besides its device's order, in a schedule of `stages` stages.
// `r_ops` here and below: the schedule holds R ops (Schedule::r_ops, re-materialisation;
// a plan's recompute == Recompute::Full, core/recompute.h).
Needs op_needs(const Op& op, int stages, bool r_ops);

enum class MessageKind : uint8_t { Activation, Gradient };

// A tensor between two stages for one micro-batch. `cut` is the boundary it crosses:
// the index of the later stage (its bytes are what crosses the end of stage cut - 1).
struct Message {
  MessageKind kind;
  int from_stage;
  int to_stage;
  int cut() const { return from_stage > to_stage ? from_stage : to_stage; }
};

// The rules the simulator asks for every op are defined here, inline: they sit on its
// hot path. Those that read a stage's costs take the cost type as a template parameter
// (always core/cost_model.h's StageCost, which includes this header).

// What `op` sends when it ends: F(s,m) its output to s+1, B/I(s,m) the input gradient to s-1.
inline std::optional<Message> op_sends(const Op& op, int stages) {
  const int s = op.stage;
  if (op.kind == OpKind::Forward) {
    if (s + 1 < stages) return Message{MessageKind::Activation, s, s + 1};
  } else if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) {
    if (s > 0) return Message{MessageKind::Gradient, s, s - 1};
  }
  return std::nullopt;
}

// What `op` receives before it starts: the mirror of op_sends.
inline std::optional<Message> op_receives(const Op& op, int stages) {
  const int s = op.stage;
  if (op.kind == OpKind::Forward) {
    if (s > 0) return Message{MessageKind::Activation, s - 1, s};
  } else if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) {
    if (s + 1 < stages) return Message{MessageKind::Gradient, s + 1, s};
  }
  return std::nullopt;
}

// The op's run time on its stage (integer ns, speed already applied in StageCost).
template <class StageCost>
inline int64_t op_duration_ns(OpKind kind, const StageCost& c) {
  switch (kind) {
    case OpKind::Forward: return c.forward_ns;
    case OpKind::Backward: return c.backward_ns;
    case OpKind::BackwardInput: return c.backward_input_ns;
    case OpKind::BackwardWeight: return c.backward_weight_ns;
    case OpKind::Recompute: return c.recompute_ns;
  }
  return 0;
}

// What the op charges at its start, symbolically (the planner counts these) ...
enum class Charge : uint8_t { Nothing, Stash, Activations };
inline Charge op_charge(OpKind kind) {
  if (kind == OpKind::Forward) return Charge::Stash;
  if (kind == OpKind::Recompute) return Charge::Activations;
  return Charge::Nothing;
}
// What F keeps per micro-batch: the activations, or under re-materialisation the input.
template <class StageCost>
inline int64_t stash_bytes(const StageCost& c, bool r_ops) { return r_ops ? c.input_bytes : c.activation_bytes; }
// ... and in bytes: Stash = stash_bytes(), Activations = the stage's activation_bytes.
template <class StageCost>
inline int64_t op_charge_bytes(OpKind kind, const StageCost& c, bool r_ops) {
  switch (op_charge(kind)) {
    case Charge::Stash: return stash_bytes(c, r_ops);
    case Charge::Activations: return c.activation_bytes;
    case Charge::Nothing: return 0;
  }
  return 0;
}
// Whether the op's end frees everything held for its (stage, micro-batch).
inline bool op_frees(OpKind kind) { return kind == OpKind::Backward || kind == OpKind::BackwardWeight; }
// What the op's end frees of its (stage, micro-batch)'s stash short of everything: I frees
// what W does not need (StageCost::freed_at_input_bytes = activation_bytes -
// weight_grad_bytes, 0 without the profile field); every other op nothing (op_frees).
template <class StageCost>
inline int64_t op_release_bytes(OpKind kind, const StageCost& c) {
  return kind == OpKind::BackwardInput ? c.freed_at_input_bytes : 0;
}

// One layer's bytes at one micro-batch size, as the memory rules add them up.
struct LayerBytes {
  int64_t input = 0, output = 0, activation = 0;
  int64_t forward = 0, forward_no_grad = 0, backward_input = 0, backward_weight = 0, held_for_weight = 0;
  int64_t freed_at_input = 0;  // activation - weight_grad_bytes: what I drops of the stash (0: nothing)
};
// A layer whose `shared` bytes the next layer of its stage saves again (its output, the
// next one's input; Profile::shared_with_next_bytes): the next layer keeps them, this one
// drops them from its activation and from what its I frees.
inline void hold_shared_once(LayerBytes& layer, int64_t shared) {
  layer.activation -= shared;
  layer.freed_at_input = std::max<int64_t>(0, layer.freed_at_input - shared);
}
// What an op of one stage adds to its device's bytes: `peak`, the most above what the
// device held when the op started, while it runs; `held`, what the op leaves held for
// its (stage, micro-batch) when it ends (may be negative: I uses up the loss gradient and
// frees what W does not need of the stash).
struct OpMemory {
  int64_t peak = 0;
  int64_t held = 0;
};
// Per op kind, for one stage: transients and stash together (the stash part is also
// op_charge_bytes, which the activation accounting keeps on its own).
struct StageMemory {
  std::array<OpMemory, 5> op{};  // indexed by OpKind
  const OpMemory& of(OpKind kind) const { return op[static_cast<std::size_t>(kind)]; }
};
// The executor's order of allocations over the stage's layers (exec/runtime/stage_worker.cpp):
// `first` / `last`: whether the stage is the model's first / last.
StageMemory stage_memory(const std::vector<LayerBytes>& layers, bool first, bool last, bool r_ops);
// The flat gradient copy a replicated position's all-reduce holds (0 when not replicated).
inline int64_t allreduce_buffer_bytes(int64_t gradient_bytes, int replicas) { return replicas > 1 ? gradient_bytes : 0; }

// Weights, gradients and optimizer state of `parameter_bytes` of parameters.
int64_t static_bytes(int64_t parameter_bytes, double optimizer_state_factor);
// A ring all-reduce over r devices (reduce-scatter, then all-gather): each device sends
// 2 (r - 1) / r of the buffer, in 2 (r - 1) hops that each pay the link's latency.
// The three functions below are the one statement of it; the simulator, the planner's
// cost tables, the limit check and the tensor-parallel profile all call them.
inline int ring_allreduce_hops(int r) { return r > 1 ? 2 * (r - 1) : 0; }
inline int64_t ring_allreduce_bytes(int64_t bytes, int r) { return r > 1 ? 2 * static_cast<int64_t>(r - 1) * bytes / r : 0; }
inline double ring_allreduce_bytes(double bytes, int r) { return r > 1 ? 2.0 * (r - 1) / r * bytes : 0.0; }
// A ring all-reduce of `gradient_bytes` over `replicas` devices joined by `ring`.
int64_t allreduce_ns(const Link& ring, int64_t gradient_bytes, int replicas);
// Its halves: a ring all-gather (or reduce-scatter) of a `bytes` buffer over r devices
// sends (r - 1) / r of it from each device in r - 1 hops; an all-reduce is one of each.
inline int ring_allgather_hops(int r) { return r > 1 ? r - 1 : 0; }
inline int64_t ring_allgather_bytes(int64_t bytes, int r) { return r > 1 ? static_cast<int64_t>(r - 1) * bytes / r : 0; }
// A ring all-gather (or reduce-scatter) of `bytes` over `devices` devices joined by `ring`.
int64_t allgather_ns(const Link& ring, int64_t bytes, int devices);
// A replicated stage runs at the pace of its slowest device.
double slowest_speed(const Hardware& hardware, const std::vector<int>& devices);

// The weight versions of one stage, replayed op by op in its device's order (the rules
// above). The simulator counts their bytes; the executor keeps real copies by the same
// calls and records the version each op ran on.
//   WeightVersions v(schedule);  int used = v.use(op);  ...  auto u = v.finish(op);
class WeightVersions {
 public:
  explicit WeightVersions(const Schedule& schedule);
  // The version `op` runs on; call at its start. Throws InputError when a 2bw op needs a
  // version its stage has not made yet or has dropped.
  int use(const Op& op);
  struct Update {
    bool happens = false;      // the op ends with the stage's optimizer step
    std::vector<int> dropped;  // kept versions freed first
    int kept = -1;             // then the current version kept as a copy (-1: none)
  };
  // What the end of `op` does to the versions (nothing unless op_frees(op.kind)).
  Update finish(const Op& op);
  int current() const { return current_; }
  int kept_copies() const { return static_cast<int>(kept_.size()); }
  WeightUpdate mode() const { return mode_; }

 private:
  bool available(int version) const;
  WeightUpdate mode_;
  int step_microbatches_, steps_;
  int current_ = 0;
  std::vector<int> kept_;               // versions kept as copies, ascending
  std::vector<int> version_of_;         // Stash: per micro-batch, the version its F ran on (-1 before)
  std::vector<int> users_;              // Stash: per version, micro-batches in flight on it
  std::vector<int> freed_in_step_;      // DoubleBuffer: per step, micro-batches freed so far
};

// Per (product, stage, micro-batch) flags: whether a result exists yet. The validator,
// the diagram and the longest-path oracle walk schedules with it.
class ProductTable {
 public:
  ProductTable(int stages, int microbatches)
      : S_(stages), M_(microbatches), done_(static_cast<std::size_t>(kProducts) * stages * microbatches, 0) {}
  bool has(Product p, int stage, int mb) const { return done_[index(p, stage, mb)] != 0; }
  void mark(Product p, int stage, int mb) { done_[index(p, stage, mb)] = 1; }
  // Whether every need of `op` is met.
  bool ready(const Op& op, bool r_ops) const {
    for (const Need& n : op_needs(op, S_, r_ops)) {
      if (!has(n.product, n.stage, op.microbatch)) return false;
    }
    return true;
  }

 private:
  std::size_t index(Product p, int stage, int mb) const {
    return (static_cast<std::size_t>(p) * S_ + stage) * M_ + mb;
  }
  int S_, M_;
  std::vector<uint8_t> done_;
};

}  // namespace pipescope
