// The flags and the run of `profile synth --hf-config` (cli/profile_hf.h): resolve the GPU
// file, read the config, build the profile (interop/hf_profile.h), and check it reads back.
#include "cli/profile_hf.h"


#include "cli/plan_options.h"
#include "core/dtype.h"
#include "core/error.h"
#include "llm/gpu_model.h"

namespace pipescope::cli {

void HfSynthArgs::add_to(CLI::App* synth) {
  synth->add_option("--hf-config", config,
                    "Hugging Face config.json (llama, mistral, qwen2, gemma, mixtral): an analytic profile of it on --gpu");
  synth->add_option("--gpu", gpu, "GPU file or name (hf; gpt: its HBM bandwidth for the embedding and optimizer_ms): "
                                  "h100-sxm | h200 | a100-80gb | b200 | mi300x");
  synth->add_option("--dtype", dtype, "bf16 | fp16 (hf: the GPU file's dense peak for it)")->capture_default_str();
  synth->add_option("--tensor-parallel", tensor_parallel,
                    "GPUs per tensor-parallel group (hf); a profile device is then one group")
      ->capture_default_str();
  synth->add_flag("--no-selective-recompute", full_activations,
                  "hf: no selective recompute: keep the attention scores for backward (5 a s^2 b bytes, Korthikanti et "
                  "al. Table 2) instead of rerunning the attention core in it");
  synth->add_option("--gpus", gpus, "hf: GPUs in the cluster, for --hardware-output");
  synth->add_option("--hardware-output", hardware_output,
                    "hf: also write the pipescope.hardware file of --gpus GPUs seen as tensor-parallel groups");
}

GpuModel HfSynthArgs::load_gpu() const { return pipescope::load_gpu(gpu); }  // llm/gpu_model.h: --gpu's one lookup

std::string HfSynthArgs::run(const std::vector<double>& batch_sizes, int64_t sequence, const std::string& name) const {
  if (gpu.empty()) throw InputError("--gpu: required with --hf-config (h100-sxm, h200, a100-80gb, b200, mi300x or a file)");
  const GpuModel spec = load_gpu();
  HfModel model = load_hf_model(config);
  if (!name.empty()) model.shape.name = name;
  HfProfileOptions o;
  o.sequence = sequence;
  const std::optional<Dtype> format = dtype_from_name(dtype);
  if (!format) throw InputError("--dtype: expected bf16, fp16 or fp32, got \"" + dtype + "\"");
  o.dtype = *format;
  o.tensor_parallel = tensor_parallel;
  o.recompute = full_activations ? Recompute::None : Recompute::Selective;
  o.batch_sizes = batch_sizes;
  Profile p = make_hf_profile(model, spec, o);
  std::string text = profile_to_json(p).dump(1) + "\n";
  (void)profile_from_json(JsonReader::from_text(text, "profile synth (the generated profile)"));
  if (!hardware_output.empty()) {
    if (gpus < 1) throw InputError("--gpus: required with --hardware-output (GPUs in the cluster)");
    write_output(hardware_output, hardware_to_json(tensor_parallel_hardware(spec, gpus, tensor_parallel)).dump(1) + "\n");
  }
  return text;
}

}  // namespace pipescope::cli
