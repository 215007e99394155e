// The InputError message a call throws, or "" when it returns: how reader and flag tests
// state the exact error they expect.
//   EXPECT_EQ(input_error_of([] { parse_offload_policy("x"); }), "--offload: ...");
#pragma once

#include <string>

#include "core/error.h"

namespace pipescope::testing {

template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace pipescope::testing
