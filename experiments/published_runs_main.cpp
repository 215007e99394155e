// Predicts every row of a published-runs file with its own layout and prints per-row
// error and median / worst |error| by group (docs/llm-scale.md):
//   build/bin/published_runs [--runs FILE] [--gpu FILE] [--json] [--fit] [-o FILE]
// Defaults: profiles/published-runs/h100-fit.json, each row's own GPU file (profiles/gpus/).
// --fit: fit the GPU file's efficiency parameters (experiments/published_runs_fit.h) on the
// rows, print each fitted value (to stderr, with progress) and the table at the fitted values.
#include <iostream>
#include <string>

#include "core/atomic_file.h"
#include "core/data_dir.h"
#include "experiments/published_runs.h"
#include "experiments/published_runs_fit.h"

int main(int argc, char** argv) {
  using namespace pipescope;
  std::string output, gpu_file, runs_file;
  bool json = false, fit = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      output = argv[++i];
    } else if (arg == "--gpu" && i + 1 < argc) {
      gpu_file = argv[++i];
    } else if (arg == "--runs" && i + 1 < argc) {
      runs_file = argv[++i];
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--fit") {
      fit = true;
    } else {
      std::cerr << "usage: published_runs [--runs FILE] [--gpu FILE] [--json] [--fit] [-o FILE]\n";
      return 2;
    }
  }
  try {
    if (runs_file.empty()) runs_file = data_dir("profiles/published-runs") + "/h100-fit.json";
    const std::vector<PublishedRun> runs = load_published_runs(runs_file);
    std::vector<RunPrediction> predictions;
    if (fit) {
      const std::vector<FitParameter> params = gpu_fit_parameters();
      const GpuModel start = load_gpu(gpu_file.empty() ? runs.front().job.cluster.gpu : gpu_file);
      std::cerr << "fitting " << params.size() << " parameters on " << runs.size() << " rows (start: "
                << fit_objective(runs, start) << ")\n";
      const FitResult r = fit_gpu(runs, start, params, [](int n, double obj) {
        std::cerr << "  evaluation " << n << ": mean squared log error " << obj << "\n";
      });
      for (std::size_t i = 0; i < params.size(); ++i) std::cerr << params[i].name << " = " << r.values[i] << "\n";
      std::cerr << "objective " << r.objective << " after " << r.evaluations << " evaluations\n";
      for (const PublishedRun& run : runs) predictions.push_back(predict_run(run, r.gpu));
    } else {
      for (const PublishedRun& run : runs) {
        predictions.push_back(predict_run(run, load_gpu(gpu_file.empty() ? run.job.cluster.gpu : gpu_file)));
      }
    }
    const std::string text = json ? published_runs_json(runs, predictions).dump(1) + "\n"
                                  : published_runs_markdown(runs, predictions);
    if (output.empty()) {
      std::cout << text;
    } else {
      write_file_atomically(output, text);
    }
  } catch (const std::exception& e) {
    std::cerr << "published_runs: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
