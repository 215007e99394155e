#include "core/cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace pipescope {

int64_t boundary_bytes(const Profile& profile, int cut, double batch) {
  if (cut <= 0 || cut >= profile.num_layers()) return 0;
  if (profile.is_chain()) return profile.output_bytes(cut - 1, batch);
  std::vector<char> crosses(static_cast<std::size_t>(cut), 0);
  for (auto [from, to] : profile.edges) {
    if (from < cut && to >= cut) crosses[from] = 1;
  }
  int64_t bytes = 0;
  for (int i = 0; i < cut; ++i) {
    if (crosses[i]) bytes += profile.output_bytes(i, batch);
  }
  return bytes;
}

CostModel build_cost_model(const Profile& profile, const Plan& plan, const Hardware& hardware) {
  check_plan_layers(plan, profile.num_layers(), profile.source);
  CostModel c;
  c.microbatch_size = plan.microbatch_size();
  c.batch_size = plan.batch_size;
  c.optimizer_state_factor = plan.optimizer_state_factor;
  c.split_estimated = plan.schedule == ScheduleKind::ZeroBubbleH1 && !profile.has_split_backward();
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
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const PlanStage& ps = plan.stages[s];
    StageCost st;
    st.first_layer = ps.first_layer;
    st.end_layer = ps.end_layer;
    st.replicas = static_cast<int>(ps.devices.size());
    const double b = c.microbatch_size / st.replicas;
    // The slowest replica sets the pace of a replicated stage.
    double speed = 1e300;
    for (int d : ps.devices) speed = std::min(speed, hardware.device_speed(d));
    double f = 0, bw = 0, bi = 0, w = 0;
    int64_t act = 0, params = 0;
    for (int l = ps.first_layer; l < ps.end_layer; ++l) {
      f += profile.forward_ms(l, b);
      bw += profile.backward_ms(l, b);
      bi += profile.backward_input_ms(l, b);
      w += profile.backward_weight_ms(l, b);
      act += profile.activation_bytes(l, b);
      params += profile.layers[l].parameter_bytes;
    }
    st.forward_ns = ms_to_ns(f / speed);
    st.backward_ns = ms_to_ns(bw / speed);
    st.backward_input_ns = ms_to_ns(bi / speed);
    st.backward_weight_ns = ms_to_ns(w / speed);
    st.recompute_ns = st.forward_ns;
    st.send_bytes = boundary_bytes(profile, ps.end_layer, b);
    st.input_bytes = boundary_bytes(profile, ps.first_layer, b);
    st.activation_bytes = act;
    st.parameter_bytes = params;
    c.stages.push_back(st);
  }
  return c;
}

}  // namespace pipescope
