// Fuzz target: the `pipescope` command line. The input is split at newlines into
// argv and parsed by the same CLI11 app main() builds, so every subcommand's parsing
// and callback runs (simulate with its gates, schedule, profile synth, validate, plan in
// both its forms and llm-plan, plan's old name for its model form). The
// target works in a private temporary folder holding small input files (p.json,
// e.json, h.json, plan.json; c.json, a two-layer Llama config, and s.json, its analytic
// profile on h100-sxm, which plan --profile --framework plans as its job); inputs naming
// other folders ('/') or numbers of four or
// more digits are skipped, so nothing outside that folder is touched and one input
// runs in milliseconds. Like main(): CLI11 parse errors, InputError, RunError and
// GateError are expected outcomes; anything else escapes and is a crash.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "interop/hf_config.h"
#include "interop/hf_profile.h"

namespace {

const char* kProfile = R"({"format": "pipescope.profile", "version": 1, "model": "m",
 "device": {"name": "d", "memory_bytes": 1000000000}, "backend": "cpu", "dtype": "fp32",
 "batch_sizes": [1, 2, 4],
 "layers": [
  {"name": "a", "forward_ms": [1, 2, 4], "backward_ms": [2, 4, 8], "activation_bytes": [100, 200, 400],
   "output_bytes": [10, 20, 40], "parameter_bytes": 1000},
  {"name": "b", "forward_ms": [1, 2, 4], "backward_ms": [2, 4, 8], "activation_bytes": [100, 200, 400],
   "output_bytes": [10, 20, 40], "parameter_bytes": 1000,
   "backward_input_ms": [1, 2, 4], "backward_weight_ms": [1, 2, 4]},
  {"name": "c", "forward_ms": [3, 5, 9], "backward_ms": [6, 9, 17], "activation_bytes": [100, 200, 400],
   "output_bytes": [10, 20, 40], "parameter_bytes": 3000},
  {"name": "d", "forward_ms": [1, 2, 4], "backward_ms": [2, 4, 8], "activation_bytes": [100, 200, 400],
   "output_bytes": [10, 20, 40], "parameter_bytes": 1000}]})";

const char* kEdges = R"({"format": "pipescope.profile", "version": 1, "model": "dag",
 "device": {"name": "d", "memory_bytes": 1000000000}, "backend": "cpu", "dtype": "fp32",
 "batch_sizes": [2],
 "layers": [
  {"name": "a", "forward_ms": [1], "backward_ms": [2], "activation_bytes": [100], "output_bytes": [10], "parameter_bytes": 10},
  {"name": "b", "forward_ms": [1], "backward_ms": [2], "activation_bytes": [100], "output_bytes": [10], "parameter_bytes": 10},
  {"name": "c", "forward_ms": [1], "backward_ms": [2], "activation_bytes": [100], "output_bytes": [10], "parameter_bytes": 10}],
 "edges": [[0, 1], [0, 2], [1, 2]]})";

const char* kHardware = R"({"format": "pipescope.hardware", "version": 1, "name": "h", "devices": 4,
 "memory_bytes": 100000, "link": {"bandwidth_gb_per_s": 1.0, "latency_us": 5.0},
 "nodes": {"devices_per_node": 2, "link": {"bandwidth_gb_per_s": 0.1, "latency_us": 20.0}},
 "speed": [1.0, 2.0, 1.0, 0.5]})";

const char* kPlan = R"({"format": "pipescope.plan", "version": 1, "profile": "p.json",
 "batch_size": 8, "microbatches": 4, "schedule": {"kind": "1f1b", "chunks": 1}, "recompute": false,
 "stages": [{"layers": [0, 2], "devices": [0, 1]}, {"layers": [2, 4], "devices": [2]}]})";

const char* kHfConfig = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 256,
 "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 512})";

void write(const std::filesystem::path& p, const char* text) { std::ofstream(p) << text; }

// s.json: what `profile synth --hf-config c.json --gpu h100-sxm --seq 128` writes.
std::string hf_profile_text() {
  write("c.json", kHfConfig);
  pipescope::HfProfileOptions o;
  o.sequence = 128;
  o.batch_sizes = {1, 2};
  const pipescope::Profile p =
      pipescope::make_hf_profile(pipescope::load_hf_model("c.json"), pipescope::load_gpu("h100-sxm"), o);
  return pipescope::profile_to_json(p).dump(1);
}

// A private folder with the input files; the target runs inside it.
// reset() empties it and rewrites the files before every input, so an input that
// overwrites one (-o p.json) cannot change how the next input runs.
struct Workdir {
  std::filesystem::path dir;
  Workdir() {
    char tmpl[] = "/tmp/pipescope-fuzz-cli-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    dir = tmpl;
    std::filesystem::current_path(dir);
  }
  void reset() const {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::filesystem::remove_all(entry.path());
    }
    write("p.json", kProfile);
    write("e.json", kEdges);
    write("h.json", kHardware);
    write("plan.json", kPlan);
    write("c.json", kHfConfig);
    static const std::string hf_profile = hf_profile_text();
    write("s.json", hf_profile.c_str());
  }
};

bool acceptable(const std::string& text) {
  static const std::regex too_big(R"([0-9]{4}|[0-9][eE][+-]?[0-9]|0[xX])");
  return text.find('/') == std::string::npos && text.find('\\') == std::string::npos &&
         !std::regex_search(text, too_big);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static Workdir workdir;
  static std::ostringstream sink;
  if (size > 512) return -1;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (!acceptable(text)) return -1;
  workdir.reset();
  std::vector<std::string> args = {"pipescope"};
  std::stringstream in(text);
  for (std::string arg; std::getline(in, arg);) args.push_back(arg);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());

  CLI::App app{"pipescope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pipescope 0.1.0");
  pipescope::cli::add_simulate_command(app);
  pipescope::cli::add_schedule_command(app);
  pipescope::cli::add_profile_command(app);
  pipescope::cli::add_validate_command(app);
  pipescope::cli::add_plan_command(app);
  pipescope::cli::add_llm_plan_command(app);
  pipescope::cli::refuse_empty_values(app);
  std::streambuf* out = std::cout.rdbuf(sink.rdbuf());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
  } catch (const pipescope::InputError&) {
  } catch (const pipescope::GateError&) {  // exit 4: a gate was violated
  } catch (const pipescope::RunError&) {
  }
  std::cout.rdbuf(out);
  sink.str("");
  return 0;
}
