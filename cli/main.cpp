// pipescope: plans pipeline-parallel training and proves its plans.
// Exit codes: 0 ok, 1 internal error, 2 bad input or impossible request, 3 run failed,
// 4 a CI gate was violated (the full result is printed first).
#include <cstdio>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "exec/backends/blas_kernels.h"

int main(int argc, char** argv) {
  pipescope::exec::use_native_blas_kernels(argv);  // may re-execute this program once
  CLI::App app{"pipescope: plan pipeline-parallel training, simulate it, run it, compare."};
  pipescope::cli::add_all_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const pipescope::InputError& e) {
    std::cerr << "pipescope: error: " << e.what() << "\n";
    return 2;
  } catch (const pipescope::RunError& e) {
    std::cerr << "pipescope: run failed: " << e.what() << "\n";
    return 3;
  } catch (const pipescope::GateError& e) {
    for (const std::string& v : e.violations()) std::cerr << "pipescope: gate failed: " << v << "\n";
    return 4;
  } catch (const std::exception& e) {
    std::cerr << "pipescope: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
