// CI gates: flag checks, evaluation against a step or a comparison, and the reports
// (JSON "gates", JUnit XML, Markdown). A gate passes when its value is at most its limit;
// an infinite value (relative error against a zero prediction) fails every limit.
#include "cli/gates.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "core/error.h"

namespace pipescope::cli {
namespace {

std::string num(double v, const char* fmt = "%.6g") {
  if (!std::isfinite(v)) return v > 0 ? "inf" : "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string percent(double v) { return std::isfinite(v) ? num(v, "%+.2f") + "%" : "n/a (predicted 0)"; }

std::string gib(int64_t bytes) { return format_bytes(static_cast<double>(bytes)); }

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

GateResult gate(const std::string& flag, double limit, double value, std::string message,
                const std::string& unit = "") {
  return {flag, limit, value, std::isfinite(value) && value <= limit, std::move(message), num(limit) + unit,
          num(value) + unit};
}

}  // namespace

StepFacts step_facts(const StepReport& r, int64_t memory_limit_bytes) {
  StepFacts f;
  f.title = r.model + ", " + r.schedule + ", K = " + std::to_string(r.num_positions) +
            (r.chunks > 1 ? ", v = " + std::to_string(r.chunks) : "") + ", M = " + std::to_string(r.microbatches);
  f.model = r.model;
  f.step_ms = static_cast<double>(r.step_ns) / 1e6;
  f.throughput_samples_per_s = r.throughput_samples_per_s;
  f.bubble_fraction = r.bubble_fraction;
  for (const PositionReport& s : r.positions) f.stage_peak_bytes.push_back(s.peak_memory_bytes);
  f.memory_limit_bytes = memory_limit_bytes;
  return f;
}

void GateOptions::add_step_gates(CLI::App* cmd) {
  cmd_ = cmd;
  cmd->add_option("--max-bubble", max_bubble_, "Gate: exit 4 when the bubble fraction exceeds FRACTION (0 to 1)");
  cmd->add_option("--max-step-ms", max_step_ms_, "Gate: exit 4 when the step takes longer than MS milliseconds");
  cmd->add_flag("--require-fit", require_fit_,
                "Gate: exit 4 when a stage's peak memory exceeds the hardware file's device memory");
  cmd->add_option("--baseline", baseline_path_,
                  "Gate: an earlier prediction or measurement of the same model (with --max-regression)");
  cmd->add_option("--max-regression", max_regression_,
                  "Gate: exit 4 when the step is more than PERCENT slower than --baseline's");
  cmd->add_option("--junit", junit_path_, "Write a JUnit XML report: one testcase per gate");
  cmd->add_flag("--markdown", markdown_, "Print a Markdown summary (for a CI step summary) instead of the table");
}

void GateOptions::add_compare_gates(CLI::App* cmd) {
  cmd_ = cmd;
  cmd->add_option("--max-step-error", max_step_error_,
                  "Gate: exit 4 when measured and predicted step time differ by more than PERCENT");
  cmd->add_option("--max-memory-error", max_memory_error_,
                  "Gate: exit 4 when a stage's measured and predicted peak memory differ by more than PERCENT");
  cmd->add_option("--junit", junit_path_, "Write a JUnit XML report: one testcase per gate");
  cmd->add_flag("--markdown", markdown_, "Print a Markdown summary (for a CI step summary) instead of the table");
}

CLI::Option* GateOptions::given(const char* flag) const {
  CLI::Option* o = cmd_ ? cmd_->get_option_no_throw(flag) : nullptr;
  return o && o->count() > 0 ? o : nullptr;
}

bool GateOptions::any() const {
  for (const char* f : {"--max-bubble", "--max-step-ms", "--require-fit", "--max-regression", "--max-step-error",
                        "--max-memory-error"}) {
    if (given(f)) return true;
  }
  return false;
}

void GateOptions::check(bool json, bool has_hardware, const std::vector<std::pair<std::string, std::string>>& outputs) {
  if (json && markdown_) throw InputError("--json and --markdown both print on stdout: give one of them");
  for (const auto& [flag, path] : outputs) {
    if (!junit_path_.empty() && path == junit_path_) {
      throw InputError("--junit and " + flag + " name the same file \"" + path + "\"");
    }
  }
  if (json || markdown_) {
    for (const auto& [flag, path] : outputs) {
      if (path == "-") {
        throw InputError(flag + " -: with " + (json ? "--json" : "--markdown") +
                         " stdout holds only that output; give " + flag + " a file name");
      }
    }
  }
  auto at_least = [&](const char* flag, double value, double min) {
    if (given(flag) && !(std::isfinite(value) && value >= min)) {
      throw InputError(std::string(flag) + ": expected a number >= " + num(min) + ", got " + num(value));
    }
  };
  at_least("--max-bubble", max_bubble_, 0);
  if (given("--max-bubble") && max_bubble_ > 1) {
    throw InputError("--max-bubble: expected a fraction from 0 to 1, got " + num(max_bubble_));
  }
  at_least("--max-step-ms", max_step_ms_, 0);
  at_least("--max-regression", max_regression_, -100);
  at_least("--max-step-error", max_step_error_, 0);
  at_least("--max-memory-error", max_memory_error_, 0);
  if (require_fit_ && !has_hardware) {
    throw InputError("--require-fit: give --hardware FILE (without it memory is unbounded and every plan fits)");
  }
  if (given("--baseline") && !given("--max-regression")) throw InputError("--baseline: give --max-regression PERCENT too");
  if (given("--max-regression") && !given("--baseline")) throw InputError("--max-regression: give --baseline FILE too");
  if (given("--baseline")) {
    baseline_ = load_report(baseline_path_);
    if (baseline_.step_ns <= 0) throw InputError(baseline_path_, "step_time_ms", "expected a positive step time");
  }
}

std::vector<GateResult> GateOptions::evaluate(const StepFacts& f) const {
  std::vector<GateResult> out;
  if (given("--max-bubble")) {
    out.push_back(gate("--max-bubble", max_bubble_, f.bubble_fraction,
                       "--max-bubble " + num(max_bubble_) + ": the bubble fraction is " + num(f.bubble_fraction)));
  }
  if (given("--max-step-ms")) {
    out.push_back(gate("--max-step-ms", max_step_ms_, f.step_ms,
                       "--max-step-ms " + num(max_step_ms_) + ": the step takes " + num(f.step_ms, "%.3f") + " ms",
                       " ms"));
  }
  if (require_fit_) {
    std::size_t worst = 0;
    for (std::size_t s = 0; s < f.stage_peak_bytes.size(); ++s) {
      if (f.stage_peak_bytes[s] > f.stage_peak_bytes[worst]) worst = s;
    }
    const int64_t peak = f.stage_peak_bytes.empty() ? 0 : f.stage_peak_bytes[worst];
    const double limit = static_cast<double>(f.memory_limit_bytes);
    out.push_back(gate("--require-fit", limit, static_cast<double>(peak),
                       "--require-fit: " + std::string(peak <= f.memory_limit_bytes ? "the largest stage, " : "") +
                           "stage " + std::to_string(worst) + " needs " + gib(peak) + " of " +
                           gib(f.memory_limit_bytes) + " device memory"));
    out.back().limit_text = gib(f.memory_limit_bytes);
    out.back().value_text = gib(peak);
  }
  if (given("--baseline")) {
    if (!baseline_.model.empty() && !f.model.empty() && baseline_.model != f.model) {
      throw InputError(baseline_path_, "model",
                       "the baseline is of model \"" + baseline_.model + "\", this step of \"" + f.model + "\"");
    }
    const double base_ms = static_cast<double>(baseline_.step_ns) / 1e6;
    const double regression = 100.0 * (f.step_ms - base_ms) / base_ms;
    out.push_back(gate("--max-regression", max_regression_, regression,
                       "--max-regression " + num(max_regression_) + "%: the step takes " + num(f.step_ms, "%.3f") +
                           " ms, " + percent(regression) + " against " + num(base_ms, "%.3f") + " ms in " +
                           baseline_path_,
                       "%"));
  }
  return out;
}

std::vector<GateResult> GateOptions::evaluate(const Comparison& c) const {
  std::vector<GateResult> out;
  if (given("--max-step-error")) {
    for (const ComparedValue& v : c.values) {
      if (v.name != "step_time_ms") continue;
      const double e = 100.0 * v.relative_error();
      out.push_back(gate("--max-step-error", max_step_error_, std::fabs(e),
                         "--max-step-error " + num(max_step_error_) + "%: the measured step time differs from the "
                         "prediction by " + percent(e),
                         "%"));
    }
  }
  if (given("--max-memory-error")) {
    const ComparedValue* worst = nullptr;
    for (const ComparedValue& v : c.values) {
      if (v.name.find("peak_memory_bytes") == std::string::npos) continue;
      if (!worst || !(std::fabs(v.relative_error()) <= std::fabs(worst->relative_error()))) worst = &v;
    }
    if (worst) {
      const double e = 100.0 * worst->relative_error();
      const std::string stage = worst->name.substr(0, worst->name.find(" peak"));
      out.push_back(gate("--max-memory-error", max_memory_error_, std::fabs(e),
                         "--max-memory-error " + num(max_memory_error_) + "%: " + stage +
                             "'s measured peak memory differs from the prediction by " + percent(e) +
                             " (the largest error of any stage)",
                         "%"));
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> GateOptions::junit_file(const std::string& command,
                                                                         const std::vector<GateResult>& r) const {
  if (junit_path_.empty()) return {};
  return {{junit_path_, junit_xml(command, r)}};
}

Json with_gates(Json object, const std::vector<GateResult>& results) {
  if (results.empty()) return object;
  Json gates = Json::array();
  for (const GateResult& g : results) {
    gates.push_back({{"gate", g.flag},
                     {"limit", g.limit},
                     {"value", std::isfinite(g.value) ? Json(g.value) : Json(nullptr)},
                     {"passed", g.passed},
                     {"message", g.message}});
  }
  object["gates"] = std::move(gates);
  return object;
}

std::string junit_xml(const std::string& command, const std::vector<GateResult>& results) {
  const auto failures = std::count_if(results.begin(), results.end(), [](const GateResult& g) { return !g.passed; });
  const std::string counts = " tests=\"" + std::to_string(results.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\"";
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"pipescope\"" << counts << ">\n"
      << "  <testsuite name=\"pipescope " << xml_escape(command) << "\"" << counts << " errors=\"0\" skipped=\"0\">\n";
  for (const GateResult& g : results) {
    out << "    <testcase classname=\"pipescope." << xml_escape(command) << "\" name=\"" << xml_escape(g.flag.substr(2))
        << "\">\n";
    if (!g.passed) out << "      <failure type=\"gate\" message=\"" << xml_escape(g.message) << "\"/>\n";
    out << "      <system-out>" << xml_escape(g.message) << "</system-out>\n    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

std::string step_markdown(const std::string& command, const StepFacts& f) {
  std::ostringstream out;
  int64_t peak = 0;
  for (int64_t b : f.stage_peak_bytes) peak = std::max(peak, b);
  out << "### pipescope " << command << ": " << f.title << "\n\n"
      << "| step time | throughput | bubble | peak memory per device |\n|---:|---:|---:|---:|\n"
      << "| " << num(f.step_ms, "%.3f") << " ms | " << num(f.throughput_samples_per_s, "%.2f") << " samples/s | "
      << num(100 * f.bubble_fraction, "%.2f") << "% | " << gib(peak)
      << (f.memory_limit_bytes > 0 ? " of " + gib(f.memory_limit_bytes) : "") << " |\n";
  return out.str();
}

std::string comparison_markdown(const Comparison& c) {
  std::ostringstream out;
  out << "\n| quantity | predicted | measured | error |\n|---|---:|---:|---:|\n";
  for (const ComparedValue& v : c.values) {
    out << "| " << v.name << " | " << num(v.predicted) << " | " << num(v.measured) << " | "
        << percent(100 * v.relative_error()) << " |\n";
  }
  for (const std::string& w : c.warnings) out << "\nwarning: " << w << "\n";
  return out.str();
}

std::string gates_markdown(const std::vector<GateResult>& results) {
  if (results.empty()) return "";
  std::ostringstream out;
  out << "\n| gate | limit | value | result |\n|---|---:|---:|---|\n";
  for (const GateResult& g : results) {
    out << "| `" << g.flag << "` | " << g.limit_text << " | " << g.value_text << " | "
        << (g.passed ? "pass" : "**FAIL**: " + g.message) << " |\n";
  }
  return out.str();
}

std::string gates_text(const std::vector<GateResult>& results) {
  std::string out;
  for (const GateResult& g : results) out += "gate " + g.message + ": " + (g.passed ? "ok" : "FAILED") + "\n";
  return out;
}

std::string result_text(const GateOptions& options, bool json, const std::string& json_text, const std::string& table,
                        const std::string& markdown, const std::vector<GateResult>& results) {
  if (json) return json_text;
  if (options.markdown()) return markdown + gates_markdown(results);
  return table + gates_text(results);
}

void enforce(const std::vector<GateResult>& results) {
  std::vector<std::string> violated;
  for (const GateResult& g : results) {
    if (!g.passed) violated.push_back(g.message);
  }
  if (!violated.empty()) throw GateError(std::move(violated));
}

}  // namespace pipescope::cli
