// pipescope-gui: explore pipeline plans visually. With --screenshot FILE it renders
// the main window at --size (default 1400x900) once the plan is simulated, writes a
// PNG and exits: 0 on success, 2 on bad input (a bad flag or file, an impossible plan):
// a --plan or --llm-plan file that does not read prints its reader's message (file and field).
#include <QApplication>
#include <cstdio>
#include <exception>

#include "core/error.h"
#include "gui/app/app_options.h"
#include "gui/app/export.h"
#include "gui/app/main_window.h"

using namespace pipescope;
using namespace pipescope::gui;

// --screenshot and --help need no display.
static bool headless(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const QByteArray a(argv[i]);
    if (a.startsWith("--screenshot") || a == "--help" || a == "-h" || a == "-?") return true;
  }
  return false;
}

int main(int argc, char** argv) {
  // Without a display, fall back to the offscreen platform where none is needed.
  if (headless(argc, argv) && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") &&
      qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("pipescope-gui");
  AppOptions options;
  try {
    options = parse_app_options(QApplication::arguments());
  } catch (const InputError& e) {
    std::fprintf(stderr, "pipescope-gui: %s\n", e.what());
    return 2;
  }
  if (!options.help_text.isEmpty()) {
    std::fputs(options.help_text.toStdString().c_str(), stdout);
    return 0;
  }
  MainWindow window(options);
  if (options.screenshot_path.isEmpty()) {
    window.show();
    return QApplication::exec();
  }
  window.show();
  window.wait_for_plan();
  if (options.run_sweep) window.sweep_worker().wait();
  if (options.tab == "plans") window.wait_for_plans();
  if (!options.pin_path.isEmpty()) window.wait_for_pin();
  QApplication::processEvents();
  if (!window.startup_error().isEmpty()) {  // a --plan or --llm-plan file that does not read
    std::fprintf(stderr, "pipescope-gui: %s\n", window.startup_error().toStdString().c_str());
    return 2;
  }
  if (!window.evaluation()) {
    std::fprintf(stderr, "pipescope-gui: %s\n", window.status_text().toStdString().c_str());
    return 2;
  }
  try {
    save_png(&window, options.screenshot_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipescope-gui: %s\n", e.what());
    return 2;
  }
  std::printf("wrote %s (%dx%d)\n", options.screenshot_path.toStdString().c_str(), window.width(), window.height());
  return 0;
}
