// Names of the layout's enums, parsed once here at the edge (llm/layout.h).
#include "llm/layout.h"

#include "core/error.h"

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

std::string to_string(AttentionKernel kernel) { return kernel == AttentionKernel::Flash ? "flash" : "unfused"; }

std::optional<AttentionKernel> attention_kernel_from_name(const std::string& name) {
  // Megatron-LM's AttnBackend (megatron/core/transformer/enums.py): flash, fused (cuDNN
  // through Transformer Engine), unfused, local (Megatron's own unfused), auto (TE picks a
  // fused kernel where one applies).
  if (name == "flash" || name == "fused" || name == "auto") return AttentionKernel::Flash;
  if (name == "unfused" || name == "local") return AttentionKernel::Unfused;
  return std::nullopt;
}

namespace {

// One record per recipe (llm/layout.h's Fp8RecipeInfo says what each field means).
const Fp8RecipeInfo kFp8Recipes[] = {
    {Fp8Recipe::None, "none", "", "", GemmClass::Bf16, 0, "bf16 GEMMs"},
    {Fp8Recipe::Delayed, "delayed", "delayed", "", GemmClass::Fp8TensorScaled, 4,
     "Transformer Engine DelayedScaling (fp8_format HYBRID: e4m3 forward, e5m2 gradients; the scale from an amax "
     "history); Megatron-LM --fp8-format hybrid --fp8-recipe delayed"},
    {Fp8Recipe::Tensorwise, "tensorwise", "tensorwise", "tensorwise", GemmClass::Fp8TensorScaled, 8,
     "torchao Float8 dynamic scaling, one scale per tensor (Float8LinearConfig.from_recipe_name(\"tensorwise\")); "
     "Transformer Engine Float8CurrentScaling (Megatron-LM --fp8-recipe tensorwise)"},
    {Fp8Recipe::Rowwise, "rowwise", "", "rowwise", GemmClass::Fp8RowScaled, 10,
     "torchao Float8 dynamic scaling, one scale per row of each operand (from_recipe_name(\"rowwise\"))"},
    {Fp8Recipe::Mxfp8, "mxfp8", "mxfp8", "mxfp8", GemmClass::Mxfp8, 4,
     "OCP microscaling: one e8m0 scale per 32 elements, Blackwell tensor cores (Transformer Engine MXFP8BlockScaling, "
     "Megatron-LM --fp8-recipe mxfp8; torchao MXLinear)"},
};

}  // namespace

const Fp8RecipeInfo& fp8_recipe_info(Fp8Recipe recipe) {
  for (const Fp8RecipeInfo& r : kFp8Recipes) {
    if (r.recipe == recipe) return r;
  }
  return kFp8Recipes[0];
}

std::string to_string(Fp8Recipe recipe) { return fp8_recipe_info(recipe).name; }

std::optional<Fp8Recipe> fp8_recipe_from_name(const std::string& name) {
  if (name == "bf16") return Fp8Recipe::None;
  for (const Fp8RecipeInfo& r : kFp8Recipes) {
    if (name == r.name) return r.recipe;
  }
  return std::nullopt;
}

Fp8Recipe fp8_recipe_from_flags(const std::string& fp8_format, const std::string& fp8_recipe) {
  if (!fp8_format.empty() && fp8_format != "hybrid" && fp8_format != "e4m3") {
    throw InputError("--fp8-format: expected hybrid or e4m3, got \"" + fp8_format + "\"");
  }
  const std::string name = fp8_recipe.empty() ? (fp8_format.empty() ? "none" : "delayed") : fp8_recipe;
  const std::optional<Fp8Recipe> recipe = fp8_recipe_from_name(name);
  if (!recipe) throw InputError("--fp8-recipe: expected delayed, tensorwise, rowwise or mxfp8, got \"" + name + "\"");
  return *recipe;
}

Fp8Recipe implied_fp8(PrecisionRecipe precision, Fp8Recipe fp8) {
  return precision == PrecisionRecipe::Fp8Params && fp8 == Fp8Recipe::None ? Fp8Recipe::Delayed : fp8;
}

AttentionKernel attention_kernel_from_flag(const std::string& backend) {
  const std::optional<AttentionKernel> kernel = attention_kernel_from_name(backend);
  if (!kernel) {
    throw InputError("--attention-backend: expected flash, fused, auto, unfused or local, got \"" + backend + "\"");
  }
  return *kernel;
}

std::string kernels_text(const ParallelLayout& l) {
  std::string out = "attention " + to_string(l.attention) + ", linears ";
  out += l.fp8 == Fp8Recipe::None ? std::string("bf16") : "fp8 " + to_string(l.fp8);
  if (!l.fused_elementwise) out += ", elementwise eager";
  return out;
}

double optimizer_state_factor(const Precision& precision) {
  return static_cast<double>(precision.gradient_bytes + precision.optimizer_bytes) / precision.parameter_bytes - 1.0;
}

}  // namespace pipescope
