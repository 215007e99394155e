// PS_INVARIANT(cond, what): an internal invariant, checked in every build (the release
// builds define NDEBUG, which would silence assert). A violation is a bug in
// pipescope, never bad input: it throws std::logic_error naming file:line, which
// main() reports as an internal error (exit 1).
#pragma once

#include <stdexcept>
#include <string>

#define PS_INVARIANT(cond, what)                                                                   \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      throw std::logic_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +             \
                             ": invariant violated: " + (what));                                  \
    }                                                                                              \
  } while (0)
