// Names of the layout's enums, parsed once here at the edge (llm/layout.h).
#include "llm/layout.h"

namespace pipescope {

std::string to_string(Sharding sharding) {
  switch (sharding) {
    case Sharding::None: return "none";
    case Sharding::DistributedOptimizer: return "distributed-optimizer";
    case Sharding::Zero2: return "zero-2";
    case Sharding::Zero3: return "zero-3";
  }
  return "none";
}

std::optional<Sharding> sharding_from_name(const std::string& name) {
  if (name == "none") return Sharding::None;
  if (name == "distributed-optimizer" || name == "zero-1") return Sharding::DistributedOptimizer;
  if (name == "zero-2") return Sharding::Zero2;
  if (name == "zero-3" || name == "fsdp") return Sharding::Zero3;
  return std::nullopt;
}

std::string to_string(PrecisionRecipe recipe) {
  switch (recipe) {
    case PrecisionRecipe::Bf16Mixed: return "bf16-mixed";
    case PrecisionRecipe::Fp32: return "fp32";
    case PrecisionRecipe::Fp8Params: return "fp8-params";
  }
  return "bf16-mixed";
}

std::optional<PrecisionRecipe> precision_recipe_from_name(const std::string& name) {
  if (name == "bf16-mixed") return PrecisionRecipe::Bf16Mixed;
  if (name == "fp32") return PrecisionRecipe::Fp32;
  if (name == "fp8-params") return PrecisionRecipe::Fp8Params;
  return std::nullopt;
}

// bf16 mixed (Megatron --bf16): bf16 weights, fp32 main gradients, fp32 master weights
// + Adam m + v. fp32: 4 + 4 + 8 (no master copy). fp8 parameters (Transformer Engine
// --fp8-param-gather): 1-byte weights, the rest as bf16 mixed.
Precision precision_of(PrecisionRecipe recipe) {
  switch (recipe) {
    case PrecisionRecipe::Bf16Mixed: return {2, 4, 12};
    case PrecisionRecipe::Fp32: return {4, 4, 8};
    case PrecisionRecipe::Fp8Params: return {1, 4, 12};
  }
  return {};
}

double optimizer_state_factor(const Precision& precision) {
  return static_cast<double>(precision.gradient_bytes + precision.optimizer_bytes) / precision.parameter_bytes - 1.0;
}

}  // namespace pipescope
