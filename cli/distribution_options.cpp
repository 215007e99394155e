// Parses the distribution flags (cli/distribution_options.h) into a JitterSpec.
#include "cli/distribution_options.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/limits.h"

namespace pipescope::cli {
namespace {

double parse_number(const std::string& text, const std::string& flag, const std::string& expected) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
    throw InputError(flag + ": expected " + expected + ", got \"" + text + "\"");
  }
  return v;
}

}  // namespace

void DistributionOptions::add_to(CLI::App* cmd, bool for_search) {
  CLI::Option* n = cmd->add_option(
      "--samples", samples,
      for_search ? "Jittered samples per fitting candidate under --objective mean|p50|p99 (default 500)"
                 : "Replay the step N times with jittered op times and report its distribution");
  samples_option_ = n;
  if (for_search) n = nullptr;
  std::vector<CLI::Option*> opts;
  opts.push_back(cmd->add_option("--jitter", jitter,
                  "Op-time coefficient of variation (lognormal around each op's time), or \"profile\" for the "
                  "profile's measured spread per layer")
      ->capture_default_str());
  opts.push_back(cmd->add_option("--straggler", straggler,
                                 "P:SLOWDOWN: each device runs SLOWDOWN x slower with probability P per step"));
  opts.push_back(
      cmd->add_option("--link-jitter", link_jitter, "Transfer-time coefficient of variation")->capture_default_str());
  opts.push_back(cmd->add_option("--seed", seed, "Seed of the samples (the same seed gives the same bytes whatever --threads)")
                     ->capture_default_str());
  if (!for_search) {
    opts.push_back(cmd->add_option("--threads", threads, "Threads sampling in parallel (0: all cores)")->capture_default_str());
  }
  if (n) {
    for (CLI::Option* o : opts) o->needs(n);
  }
}

JitterSpec DistributionOptions::spec() const {
  JitterSpec j;
  j.samples = samples;
  if (enabled()) check_range("--samples", samples, 1, kMaxJitterSamples);
  j.seed = seed;
  j.threads = threads;
  j.link_cv = link_jitter;
  if (!from_profile()) {
    j.cv = parse_number(jitter, "--jitter", "a coefficient of variation >= 0 or \"profile\"");
  }
  if (!straggler.empty()) {
    const auto colon = straggler.find(':');
    if (colon == std::string::npos) throw InputError("--straggler: expected P:SLOWDOWN, got \"" + straggler + "\"");
    j.straggler_probability = parse_number(straggler.substr(0, colon), "--straggler", "P:SLOWDOWN");
    j.straggler_slowdown = parse_number(straggler.substr(colon + 1), "--straggler", "P:SLOWDOWN");
  }
  return j;
}

}  // namespace pipescope::cli

namespace pipescope::cli {

std::string distribution_table(const StepDistribution& d) {
  auto ms = [](double ns) { return ns / 1e6; };
  char line[256];
  std::string out = "\nstep time over " + std::to_string(d.samples) + " samples (deterministic " +
                    std::to_string(ms(static_cast<double>(d.deterministic_ns))) + " ms):\n";
  std::snprintf(line, sizeof line, "  mean %.3f ms  p50 %.3f  p90 %.3f  p99 %.3f  (sd %.3f, min %.3f, max %.3f)\n",
                ms(d.mean_ns), ms(static_cast<double>(d.p50_ns)), ms(static_cast<double>(d.p90_ns)),
                ms(static_cast<double>(d.p99_ns)), ms(d.stddev_ns), ms(static_cast<double>(d.min_ns)),
                ms(static_cast<double>(d.max_ns)));
  out += line;
  std::snprintf(line, sizeof line, "  bubble mean %.1f%%  p50 %.1f%%  p99 %.1f%%\n", 100 * d.bubble_mean,
                100 * d.bubble_p50, 100 * d.bubble_p99);
  out += line;
  out += "  critical path (share of its op time / samples where the position was the bottleneck):\n";
  for (std::size_t p = 0; p < d.critical_share.size(); ++p) {
    std::snprintf(line, sizeof line, "    position %zu: %5.1f%%  %lld\n", p, 100 * d.critical_share[p],
                  static_cast<long long>(d.critical_counts[p]));
    out += line;
  }
  return out;
}

}  // namespace pipescope::cli
