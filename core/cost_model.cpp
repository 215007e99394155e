#include "core/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/op_rules.h"

namespace pipescope {

namespace {

// The layers whose outputs cross the cut before layer `cut`.
std::vector<int> crossing_layers(const Profile& profile, int cut) {
  if (cut <= 0 || cut >= profile.num_layers()) return {};
  if (profile.is_chain()) return {cut - 1};
  std::vector<char> crosses(static_cast<std::size_t>(cut), 0);
  for (auto [from, to] : profile.edges) {
    if (from < cut && to >= cut) crosses[from] = 1;
  }
  std::vector<int> out;
  for (int i = 0; i < cut; ++i) {
    if (crosses[i]) out.push_back(i);
  }
  return out;
}

// boundary_bytes before rounding, for the limit check.
double boundary_bytes_real(const Profile& profile, int cut, double batch) {
  double bytes = 0;
  for (int i : crossing_layers(profile, cut)) bytes += profile.interpolate(profile.layers[i].output_bytes, batch);
  return bytes;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// What one model stage adds to the totals the int64 limits bound, in floating point
// (computed before anything is rounded to an integer).
struct StageTotals {
  double op_ms;           // all its ops for one micro-batch (per replica, speed applied)
  double longest_op_ms;
  double activation_bytes, input_bytes, send_bytes, parameter_bytes;
  double workspace_bytes = 0;  // every workspace_bytes value of its layers, added up (bounds its transients)
};

// Adds up, stage by stage, the bytes each device holds and the time every op,
// transfer and all-reduce of the step takes; throws InputError naming the stage that
// takes a total past the limits of cost_model.h.
class LimitCheck {
 public:
  LimitCheck(const Plan& plan, const Hardware& hardware)
      : plan_(plan),
        device_bytes_(static_cast<std::size_t>(plan.pipeline_devices()), 0.0),
        device_params_(device_bytes_) {
    // The slowest link and the largest latency bound every transfer.
    bandwidth_ = hardware.link.bandwidth_gb_per_s;
    latency_ns_ = hardware.link.latency_us * 1e3;
    if (hardware.devices_per_node > 0) {
      double inter = hardware.inter_node.bandwidth_gb_per_s;
      if (inter > 0 && (bandwidth_ <= 0 || inter < bandwidth_)) bandwidth_ = inter;
      latency_ns_ = std::max(latency_ns_, hardware.inter_node.latency_us * 1e3);
    }
  }

  void add(std::size_t s, std::size_t device, const StageTotals& t, double microbatch) {
    auto fail = [&](const std::string& what) {
      throw InputError(plan_.source.empty() ? "plan" : plan_.source, "stages[" + std::to_string(s) + "]",
                       what + " (layers [" + std::to_string(plan_.stages[s].first_layer) + ", " +
                           std::to_string(plan_.stages[s].end_layer) + ") at micro-batch size " +
                           number(microbatch) + ")");
    };
    const double M = plan_.microbatches;
    const int replicas = static_cast<int>(plan_.stages[s].devices.size());
    const double r = replicas;
    for (double v : {t.activation_bytes, t.input_bytes, t.send_bytes}) {
      if (!(v <= kMaxDeviceBytes)) {
        fail("a tensor of " + number(v) + " bytes exceeds the limit of 2^62 bytes");
      }
    }
    device_bytes_[device] += t.parameter_bytes * (2.0 + plan_.optimizer_state_factor) +
                             M * (t.activation_bytes + t.input_bytes);
    // Transients (counted with workspace_bytes): per micro-batch at most its layers'
    // workspace values and the stage output, plus the all-reduce's copy of the gradients.
    if (t.workspace_bytes > 0) device_bytes_[device] += M * (t.workspace_bytes + t.send_bytes) + t.parameter_bytes;
    device_params_[device] += t.parameter_bytes;
    if (!(device_bytes_[device] <= kMaxDeviceBytes)) {
      fail("device " + std::to_string(device) + " would hold " + number(device_bytes_[device]) +
           " bytes (weights, gradients, optimizer state and " + number(M) +
           " micro-batches of activations), beyond the limit of 2^62 bytes");
    }
    if (!(2.0 * r * device_params_[device] <= kMaxDeviceBytes)) {
      fail("the all-reduce over " + number(r) + " replicas would move " +
           number(2.0 * r * device_params_[device]) + " bytes, beyond the limit of 2^62 bytes");
    }
    if (!(t.longest_op_ms * 1e6 <= kMaxStepNs)) {
      fail("an op would take " + number(t.longest_op_ms) + " ms, beyond the limit of 2^62 ns");
    }
    // Activations forward and gradients back over the stage's output boundary, then
    // a ring all-reduce of its gradients over its replicas.
    step_ns_ += M * (t.op_ms * 1e6 + 2 * transfer_ns(t.send_bytes)) +
                (replicas > 1 ? transfer_ns(ring_allreduce_bytes(t.parameter_bytes, replicas)) +
                                    ring_allreduce_hops(replicas) * latency_ns_
                              : 0);
    if (!(step_ns_ <= kMaxStepNs)) {
      fail("the step's ops and transfers add up to " + number(step_ns_ / 3.15576e16) +
           " years, beyond the simulator's limit of 2^62 ns (146 years)");
    }
  }

 private:
  double transfer_ns(double bytes) const { return (bandwidth_ > 0 ? bytes / bandwidth_ : 0.0) + latency_ns_; }

  const Plan& plan_;
  std::vector<double> device_bytes_, device_params_;
  double bandwidth_ = 0, latency_ns_ = 0, step_ns_ = 0;
};

// The stage's StageMemory: from the layers' workspace_bytes when the profile has them,
// else the stash alone (F charges and holds stash_bytes, R activation_bytes).
StageMemory stage_memory_of(const Profile& profile, const StageCost& st, double b, bool first, bool last,
                            bool r_ops) {
  if (!profile.has_workspace()) {
    StageMemory m;
    const int64_t stash = stash_bytes(st, r_ops);
    m.op[static_cast<std::size_t>(OpKind::Forward)] = {stash, stash};
    m.op[static_cast<std::size_t>(OpKind::Recompute)] = {st.activation_bytes, st.activation_bytes};
    m.op[static_cast<std::size_t>(OpKind::BackwardInput)] = {0, -st.freed_at_input_bytes};
    return m;
  }
  std::vector<LayerBytes> layers;
  for (int l = st.first_layer; l < st.end_layer; ++l) {
    const LayerWorkspace& w = profile.layers[l].workspace;
    auto at = [&](const std::vector<double>& v) { return std::llround(profile.interpolate(v, b)); };
    layers.push_back({at(w.input), profile.output_bytes(l, b), profile.activation_bytes(l, b), at(w.forward),
                      at(w.forward_no_grad), at(w.backward_input), at(w.backward_weight), at(w.held_for_weight),
                      profile.activation_bytes(l, b) - profile.weight_grad_bytes(l, b)});
  }
  for (int l = st.first_layer; l + 1 < st.end_layer; ++l) {
    hold_shared_once(layers[static_cast<std::size_t>(l - st.first_layer)], profile.shared_with_next_bytes(l, b));
  }
  return stage_memory(layers, first, last, r_ops);
}

}  // namespace

int64_t boundary_bytes(const Profile& profile, int cut, double batch) {
  int64_t bytes = 0;
  for (int i : crossing_layers(profile, cut)) bytes += profile.output_bytes(i, batch);
  return bytes;
}

// A note when a stage's micro-batch (per replica) lies outside the sizes the profile
// measured: its times and bytes were then extrapolated, not interpolated.
static std::string extrapolation_note(const Profile& profile, const Plan& plan) {
  const std::vector<double>& sizes = profile.batch_sizes;
  if (sizes.empty()) return "";
  for (const PlanStage& ps : plan.stages) {
    const double b = plan.microbatch_size() / static_cast<double>(std::max<std::size_t>(ps.devices.size(), 1));
    const double tolerance = 1e-9 * sizes.back();
    if (b >= sizes.front() - tolerance && b <= sizes.back() + tolerance) continue;
    char text[320];
    std::snprintf(text, sizeof text,
                  "micro-batch size %g (per replica) is outside the profile's measured sizes %g to %g: its times "
                  "and bytes were extrapolated (%s)",
                  b, sizes.front(), sizes.back(),
                  sizes.size() == 1 ? "scaled in proportion to the one measured size" : "linearly from the nearest two sizes");
    return text;
  }
  return "";
}

namespace {

// Each position's devices (replicas), checked against the hardware file.
void place_positions(const Plan& plan, const Hardware& hardware, CostModel& c) {
  const int K = plan.pipeline_devices();
  for (int p = 0; p < K; ++p) {
    const std::vector<int>& devices = plan.stages[p].devices;
    for (int d : devices) {
      if (d >= hardware.devices) {
        throw InputError(plan.source, "stages[" + std::to_string(p) + "].devices",
                         "device " + std::to_string(d) + " does not exist (" + hardware.name +
                             " has " + std::to_string(hardware.devices) + " devices)");
      }
    }
    c.position_device.push_back(devices.front());
    c.position_devices.push_back(devices);
  }
}

// A stage's layers added up at b samples, in floating point (the times in ms, before
// the stage's speed is applied).
struct LayerSums {
  double forward = 0, backward = 0, backward_input = 0, backward_weight = 0, overlap = 0;
  double activation_bytes = 0, parameter_bytes = 0, workspace_bytes = 0;
};

LayerSums sum_layers(const Profile& profile, const PlanStage& ps, double b) {
  LayerSums t;
  for (int l = ps.first_layer; l < ps.end_layer; ++l) {
    t.forward += profile.forward_ms(l, b);
    t.overlap += profile.fb_overlap_ms(l, b);
    t.backward += profile.backward_ms(l, b);
    t.backward_input += profile.backward_input_ms(l, b);
    t.backward_weight += profile.backward_weight_ms(l, b);
    t.activation_bytes += profile.interpolate(profile.layers[l].activation_bytes, b);
    t.parameter_bytes += static_cast<double>(profile.layers[l].parameter_bytes);
    const LayerWorkspace& ws = profile.layers[l].workspace;
    if (ws.present()) {
      for (const auto* v : {&ws.input, &ws.forward, &ws.forward_no_grad, &ws.backward_input, &ws.backward_weight,
                            &ws.held_for_weight}) {
        t.workspace_bytes += profile.interpolate(*v, b);
      }
    }
  }
  return t;
}

// The integer costs and bytes of one stage from its sums (times divided by `speed`).
void fill_stage_cost(const Profile& profile, const PlanStage& ps, double b, double speed, const LayerSums& t,
                     StageCost& st) {
  const int64_t act = profile.stash_bytes(ps.first_layer, ps.end_layer, b);
  int64_t params = 0, weight_grad = 0;
  for (int l = ps.first_layer; l < ps.end_layer; ++l) {
    weight_grad += profile.weight_grad_bytes(l, b);
    params += profile.layers[l].parameter_bytes;
  }
  st.forward_ns = ms_to_ns(t.forward / speed);
  st.backward_ns = ms_to_ns(t.backward / speed);
  st.backward_input_ns = ms_to_ns(t.backward_input / speed);
  st.backward_weight_ns = ms_to_ns(t.backward_weight / speed);
  st.recompute_ns = st.forward_ns;
  st.fb_overlap_ns = ms_to_ns(t.overlap / speed);
  if (profile.has_optimizer_time()) {
    double opt = 0;
    for (int l = ps.first_layer; l < ps.end_layer; ++l) opt += profile.layers[l].optimizer_ms;
    st.optimizer_ns = ms_to_ns(opt / speed);
  }
  st.send_bytes = boundary_bytes(profile, ps.end_layer, b);
  st.input_bytes = boundary_bytes(profile, ps.first_layer, b);
  st.activation_bytes = act;
  st.freed_at_input_bytes = std::max<int64_t>(0, act - weight_grad);  // a shared tensor W reads twice: none freed
  if (ps.end_layer == profile.num_layers()) st.loss_bytes = profile.loss_bytes(b);
  if (ps.first_layer > 0) st.shared_with_previous_bytes = profile.shared_with_next_bytes(ps.first_layer - 1, b);
  st.parameter_bytes = params;
  for (bool r_ops : {false, true}) {
    st.memory[r_ops] = stage_memory_of(profile, st, b, ps.first_layer == 0, ps.end_layer == profile.num_layers(), r_ops);
  }
}

}  // namespace

CostModel build_cost_model(const Profile& profile, const Plan& plan, const Hardware& hardware) {
  check_plan_layers(plan, profile.num_layers(), profile.source);
  CostModel c;
  c.microbatch_size = plan.microbatch_size();
  c.batch_size = plan.batch_size;
  c.optimizer_state_factor = plan.optimizer_state_factor;
  c.split_measured = profile.has_split_backward();
  c.transients_counted = profile.has_workspace();
  c.weight_grad_counted = profile.has_weight_grad_bytes();
  place_positions(plan, hardware, c);
  c.stage_position = plan.stage_positions();
  LimitCheck limits(plan, hardware);
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const PlanStage& ps = plan.stages[s];
    StageCost st;
    st.first_layer = ps.first_layer;
    st.end_layer = ps.end_layer;
    st.replicas = static_cast<int>(ps.devices.size());
    const double b = c.microbatch_size / st.replicas;
    const double speed = slowest_speed(hardware, ps.devices);
    const LayerSums t = sum_layers(profile, ps, b);
    const double f = t.forward / speed, bw = t.backward / speed, bi = t.backward_input / speed,
                 w = t.backward_weight / speed;
    // Whichever backward the schedule runs (B, or I then W), the larger bounds the step.
    limits.add(s, static_cast<std::size_t>(c.stage_position[s]),
               {f * (has_r_ops(plan.recompute) ? 2 : 1) + std::max(bw, bi + w), std::max({f, bw, bi, w}), t.activation_bytes,
                boundary_bytes_real(profile, ps.first_layer, b), boundary_bytes_real(profile, ps.end_layer, b),
                t.parameter_bytes, t.workspace_bytes},
               b);
    fill_stage_cost(profile, ps, b, speed, t, st);
    c.stages.push_back(st);
  }
  c.extrapolation_note = extrapolation_note(profile, plan);
  return c;
}

}  // namespace pipescope
