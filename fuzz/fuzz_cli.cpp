// Fuzz target: the whole `pipescope` command line. The input is split at newlines into
// argv and parsed by the app main() parses (cli/app.cpp, add_all_commands), so every
// subcommand's parsing and callback runs: simulate, schedule, profile (measuring and
// synth), plan in both its forms, sweep, run, compare, export to every framework,
// validate, llm-time, llm-memory, llm-plan. The words come from the commands' own --help
// (fuzz/cli.dict, written by fuzz/make_cli_dict.py and held to it by ctest).
//
// The target works in a private temporary folder holding small input files: p.json,
// e.json (a profile with edges), h.json, plan.json, m.json (a tiny model to measure) and
// c.json (a two-layer Llama config), and the files the app itself writes from them once:
// s.json (c.json's analytic profile on h100-sxm), job.json, tjob.json and djob.json
// (version 3 plans of c.json on 8 GPUs for Megatron-LM, torch and DeepSpeed, each with its
// profile beside it), mp.json (m.json measured), pred.json (a prediction of
// mp.json on two stages) and meas.json (its run under the model clock). Inputs naming
// other folders ('/'), numbers of four or more digits, exponents or hex are skipped, so
// nothing outside the folder is touched and one input runs in milliseconds; `run` and
// measuring `profile` do real work, so their inputs keep to one-digit numbers and leave
// out --inject-fault (a crash on purpose) and --timeout.
// Like main(): CLI11 parse errors, InputError, RunError and GateError are expected
// outcomes; anything else escapes and is a crash.
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

const char* kModel = R"({"format": "pipescope.model", "version": 1, "name": "tiny",
 "layers": [
  {"name": "fc.0", "spec": {"type": "linear", "in": 8, "out": 16, "sequence": 2}},
  {"name": "gelu.0", "spec": {"type": "gelu", "features": 16, "sequence": 2}},
  {"name": "fc.1", "spec": {"type": "linear", "in": 16, "out": 8, "sequence": 2}}]})";

const char* kHfConfig = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 256,
 "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 512})";

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Parses argv with the app main() parses; an expected outcome returns, anything else escapes.
// What the commands print goes to a sink: only a crash is news.
void run_pipescope(std::vector<std::string> args) {
  static std::ostringstream sink;
  struct Quiet {
    std::streambuf* out = std::cout.rdbuf(sink.rdbuf());
    std::streambuf* err = std::cerr.rdbuf(sink.rdbuf());
    ~Quiet() {
      std::cout.rdbuf(out);
      std::cerr.rdbuf(err);
      sink.str("");
    }
  } quiet;
  args.insert(args.begin(), "pipescope");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  CLI::App app{"pipescope"};
  pipescope::cli::add_all_commands(app);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
  } catch (const pipescope::InputError&) {
  } catch (const pipescope::GateError&) {  // exit 4: a gate was violated
  } catch (const pipescope::RunError&) {
  }
}

// A private folder with the input files; the target runs inside it. reset() empties it
// and rewrites the files before every input, so an input that overwrites one (-o p.json)
// cannot change how the next input runs.
struct Workdir {
  std::filesystem::path dir;
  std::vector<std::pair<std::string, std::string>> files;

  Workdir() {
    char tmpl[] = "/tmp/pipescope-fuzz-cli-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    dir = tmpl;
    std::filesystem::current_path(dir);
    files = {{"p.json", kProfile}, {"e.json", kEdges}, {"h.json", kHardware}, {"plan.json", kPlan},
             {"m.json", kModel}, {"c.json", kHfConfig}};
    for (const auto& [name, text] : files) write(name, text);
    // What the app writes from them, once: each must exist, or the setup is wrong.
    const std::vector<std::pair<std::string, std::vector<std::string>>> made = {
        {"s.json", {"profile", "synth", "--hf-config", "c.json", "--gpu", "h100-sxm", "--seq", "128",
                    "--batch-sizes", "1,2", "-o", "s.json"}},
        {"job.json", {"plan", "--hf-config", "c.json", "--gpu", "h100-sxm", "--gpus", "8", "--global-batch-size",
                      "16", "--seq-length", "128", "--out", "job.json"}},
        {"mp.json", {"profile", "--model", "m.json", "--batch-sizes", "1,2", "--repeats", "1", "--warmup", "0", "-o",
                     "mp.json"}},
        {"tjob.json", {"plan", "--hf-config", "c.json", "--gpu", "h100-sxm", "--gpus", "8", "--global-batch-size",
                       "16", "--seq-length", "128", "--framework", "torch", "--out", "tjob.json"}},
        {"djob.json", {"plan", "--hf-config", "c.json", "--gpu", "h100-sxm", "--gpus", "8", "--global-batch-size",
                       "16", "--seq-length", "128", "--framework", "deepspeed", "--out", "djob.json"}},
        {"pred.json", {"simulate", "--profile", "mp.json", "-K", "2", "-M", "4", "--hardware", "h.json", "-o",
                       "pred.json"}},
        {"meas.json", {"run", "--profile", "mp.json", "-K", "2", "-M", "4", "--hardware", "h.json", "--clock", "model",
                       "--steps", "1", "-o", "meas.json"}}};
    for (const auto& [name, args] : made) {
      run_pipescope(args);
      if (!std::filesystem::exists(name)) {
        std::cerr << "fuzz_cli: setup: pipescope did not write " << name << "\n";
        std::abort();
      }
    }
    files.clear();  // everything in the folder now, a plan's profile beside it included
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      files.emplace_back(entry.path().filename().string(), read(entry.path()));
    }
  }
  ~Workdir() {
    std::error_code ignored;
    std::filesystem::current_path(std::filesystem::temp_directory_path(), ignored);
    std::filesystem::remove_all(dir, ignored);
  }
  void reset() const {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) std::filesystem::remove_all(entry.path());
    for (const auto& [name, text] : files) write(name, text);
  }
};

bool acceptable(const std::string& text, const std::vector<std::string>& args) {
  static const std::regex too_big(R"([0-9]{4}|[0-9][eE][+-]?[0-9]|0[xX])");
  static const std::regex not_one_digit(R"([0-9]{2}|[0-9][eE.])");
  if (text.find('/') != std::string::npos || text.find('\\') != std::string::npos) return false;
  if (std::regex_search(text, too_big)) return false;
  const bool real_work =
      !args.empty() && (args[0] == "run" || (args[0] == "profile" && (args.size() < 2 || args[1] != "synth")));
  if (real_work) {
    if (std::regex_search(text, not_one_digit)) return false;
    if (text.find("--inject-fault") != std::string::npos || text.find("--timeout") != std::string::npos) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static Workdir workdir;
  if (size > 512) return -1;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  std::stringstream in(text);
  for (std::string arg; std::getline(in, arg);) args.push_back(arg);
  if (!acceptable(text, args)) return -1;
  workdir.reset();
  run_pipescope(args);
  return 0;
}
