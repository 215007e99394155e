// Looks up bundled data relative to the executable first (an installed tree), then in
// the source tree the binary was built from (a build-tree run).
#include "core/data_dir.h"

#include <filesystem>
#include <system_error>

#ifndef PIPESCOPE_DATA_FROM_BIN
#define PIPESCOPE_DATA_FROM_BIN "../share/pipescope"
#endif

namespace pipescope {

std::string executable_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

std::string data_dir(const std::string& relative) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string exe = executable_path();
  if (!exe.empty()) {
    const fs::path installed = fs::path(exe).parent_path() / PIPESCOPE_DATA_FROM_BIN / relative;
    if (fs::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
#ifdef PIPESCOPE_SOURCE_DATA
  const fs::path source = fs::path(PIPESCOPE_SOURCE_DATA) / relative;
  if (fs::is_directory(source, ec)) return source.lexically_normal().string();
#endif
  return {};
}

}  // namespace pipescope
