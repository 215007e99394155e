// CI gates shared by simulate, plan, run and compare: thresholds a result must meet
// (--max-bubble, --max-step-ms, --require-fit, --baseline + --max-regression on a step;
// --max-step-error, --max-memory-error on a comparison), the --junit report (one
// testcase per gate) and the --markdown summary. Invariant: a command checks its flags
// (GateOptions::check) before any work, prints its full result, writes its files, and
// only then enforce() throws GateError (exit 4) naming every violated gate.
//   GateOptions gates;  gates.add_step_gates(cmd);
//   gates.check(json, has_hardware, {{"--output", out}});          // before any work
//   std::vector<GateResult> g = gates.evaluate(step_facts(report, memory_limit));
//   ... print, write files (gates.junit_file(...)) ...; enforce(g);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/json_reader.h"
#include "core/report.h"
#include "core/compare.h"

namespace pipescope::cli {

// What the step gates look at: one training step of a plan, predicted or measured.
struct StepFacts {
  std::string title;  // "gpt-1.3b, 1f1b, K = 4, M = 16, micro-batch 2" or a plan label
  std::string model;
  double step_ms = 0;
  double throughput_samples_per_s = 0;
  double bubble_fraction = 0;
  std::vector<int64_t> stage_peak_bytes;  // one per pipeline position
  int64_t memory_limit_bytes = 0;         // 0: no hardware file, memory unbounded
};
// `memory_limit_bytes` overrides the report's own (a measurement does not carry one).
StepFacts step_facts(const StepReport& report, int64_t memory_limit_bytes);

struct GateResult {
  std::string flag;     // "--max-bubble"
  double limit = 0;
  double value = 0;     // may be infinite (a relative error against a zero prediction)
  bool passed = true;
  std::string message;  // "--max-bubble 0.15: the bubble fraction is 0.1997"
  std::string limit_text, value_text;  // for tables: "131.32 GiB", "+4.37%"
};

class GateOptions {
 public:
  void add_step_gates(CLI::App* cmd);     // simulate, plan, run
  void add_compare_gates(CLI::App* cmd);  // compare
  // Checks the gate flags and what prints on stdout before any work: --json and
  // --markdown exclude each other and exclude an output named "-" (stdout then holds
  // one JSON object or one summary); --junit names a file of its own; --require-fit
  // needs a hardware file; --baseline and --max-regression come together (the baseline
  // is read here). Throws InputError.
  void check(bool json, bool has_hardware, const std::vector<std::pair<std::string, std::string>>& outputs);

  std::vector<GateResult> evaluate(const StepFacts& facts) const;
  std::vector<GateResult> evaluate(const Comparison& comparison) const;

  bool markdown() const { return markdown_; }
  bool any() const;
  // ("--junit FILE", its JUnit XML) to append to a command's outputs, or nothing.
  std::vector<std::pair<std::string, std::string>> junit_file(const std::string& command,
                                                              const std::vector<GateResult>& results) const;

 private:
  CLI::Option* given(const char* flag) const;
  CLI::App* cmd_ = nullptr;
  double max_bubble_ = 0, max_step_ms_ = 0, max_regression_ = 0, max_step_error_ = 0, max_memory_error_ = 0;
  bool require_fit_ = false;
  bool markdown_ = false;
  std::string baseline_path_, junit_path_;
  StepReport baseline_;
};

// The object with "gates" added (one entry per gate) when any gate was given.
Json with_gates(Json object, const std::vector<GateResult>& results);
// JUnit XML: one testsuite "pipescope COMMAND", one testcase per gate, a <failure> for each violated one.
std::string junit_xml(const std::string& command, const std::vector<GateResult>& results);
// Markdown for a CI step summary ($GITHUB_STEP_SUMMARY).
std::string step_markdown(const std::string& command, const StepFacts& facts);
std::string comparison_markdown(const Comparison& comparison);
std::string gates_markdown(const std::vector<GateResult>& results);
// One line per gate for the text table ("gate --max-bubble 0.15: ... : ok").
std::string gates_text(const std::vector<GateResult>& results);
// What a command prints on stdout: with --json `json` (one object), with --markdown
// `markdown` and the gates table, else `table` and one line per gate.
std::string result_text(const GateOptions& options, bool json, const std::string& json_text, const std::string& table,
                        const std::string& markdown, const std::vector<GateResult>& results);
// Throws GateError (exit 4) naming every violated gate; returns when all passed.
void enforce(const std::vector<GateResult>& results);

}  // namespace pipescope::cli
