// Helpers shared by the tests: uniform cost models with closed-form answers, a
// seeded random generator whose seed every failure message prints, and profiles read
// from inline JSON text (named p.json in their errors).
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/profile.h"
#include "core/schedule.h"

namespace pipescope::testing {

// S model stages, each with the same forward/backward time; backward splits evenly.
inline CostModel uniform_costs(int stages, int devices, int64_t forward_ns, int64_t backward_ns,
                               int64_t activation_bytes = 1000, int64_t input_bytes = 10) {
  CostModel c;
  for (int s = 0; s < stages; ++s) {
    StageCost st;
    st.first_layer = s;
    st.end_layer = s + 1;
    st.forward_ns = forward_ns;
    st.backward_ns = backward_ns;
    st.backward_input_ns = backward_ns / 2;
    st.backward_weight_ns = backward_ns - backward_ns / 2;
    st.recompute_ns = forward_ns;
    st.activation_bytes = activation_bytes;
    st.input_bytes = s == 0 ? 0 : input_bytes;
    st.send_bytes = input_bytes;
    c.stages.push_back(st);
  }
  for (int d = 0; d < devices; ++d) {
    c.position_device.push_back(d);
    c.position_devices.push_back({d});
  }
  c.microbatch_size = 1;
  c.batch_size = 1;
  return c;
}

inline std::string seed_note(uint64_t seed) { return "seed " + std::to_string(seed); }

// A profile read from inline JSON text; its errors name the file p.json.
inline Profile parse_profile_text(const std::string& text) {
  return profile_from_json(JsonReader::from_text(text, "p.json"));
}

// The InputError message that reading `text` as a profile throws, or "" when it reads.
inline std::string profile_error(const std::string& text) {
  try {
    parse_profile_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// `text` with the first `from` replaced by `to` (a test failure when `from` is absent).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

// One stage on one device, M = 3, every W deferred past the last I:
// F0 I0 F1 I1 F2 I2 W0 W1 W2 (the order that holds every micro-batch's W bytes at once).
inline Schedule deferred_weight_order() {
  using K = OpKind;
  Schedule one;
  one.num_microbatches = 3;
  one.stage_position = {0};
  one.position_ops = {{{K::Forward, 0, 0}, {K::BackwardInput, 0, 0}, {K::Forward, 0, 1}, {K::BackwardInput, 0, 1},
                     {K::Forward, 0, 2}, {K::BackwardInput, 0, 2}, {K::BackwardWeight, 0, 0},
                     {K::BackwardWeight, 0, 1}, {K::BackwardWeight, 0, 2}}};
  return one;
}

}  // namespace pipescope::testing
