// Recompute's names, parsed once here (core/recompute.h), and its profile-world refusal.
#include "core/recompute.h"

#include "core/error.h"

namespace pipescope {

std::string to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "none";
}

std::optional<Recompute> recompute_from_name(const std::string& name) {
  if (name == "none") return Recompute::None;
  if (name == "selective") return Recompute::Selective;
  if (name == "full") return Recompute::Full;
  return std::nullopt;
}

bool has_r_ops(Recompute recompute, const std::string& where) {
  if (recompute == Recompute::Selective) {
    throw InputError(where + ": selective re-runs a transformer layer's attention core; a profile's plan re-runs "
                             "whole stages (none or full). Selective belongs in the profile itself "
                             "(profile synth --recompute-granularity selective)");
  }
  return recompute == Recompute::Full;
}

}  // namespace pipescope
