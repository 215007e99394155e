#include "core/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "core/error.h"

namespace pipescope {

namespace {

std::string temporary_path(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  // Appended, not "." + ...: GCC 12 warns -Wrestrict on literal + std::string&& (PR105329).
  std::string name = ".";
  name += target.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  return (dir / name).string();
}

// Writes `contents` to `tmp` completely, or removes it and throws.
void write_temporary(const std::string& path, const std::string& tmp, const std::string& contents) {
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path, "", "cannot write file (" + std::string(std::strerror(errno)) + ")");
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.flush();
  if (!out) {
    out.close();
    std::remove(tmp.c_str());
    throw InputError(path, "", "write failed");
  }
}

void rename_over(const std::string& path, const std::string& tmp) {
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw InputError(path, "", "cannot replace file: " + ec.message());
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  std::string tmp = temporary_path(path);
  write_temporary(path, tmp, contents);
  rename_over(path, tmp);
}

void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> written;
  try {
    for (const auto& [path, contents] : files) {
      std::string tmp = temporary_path(path);
      write_temporary(path, tmp, contents);
      written.push_back(tmp);
    }
  } catch (...) {
    for (const std::string& tmp : written) std::remove(tmp.c_str());
    throw;
  }
  // A folder in a target's place would fail its rename after earlier renames succeeded:
  // refuse it while nothing has been replaced yet.
  for (const auto& [path, contents] : files) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      for (const std::string& tmp : written) std::remove(tmp.c_str());
      throw InputError(path, "", "cannot replace a folder with a file");
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    try {
      rename_over(files[i].first, written[i]);
    } catch (...) {
      for (std::size_t j = i + 1; j < files.size(); ++j) std::remove(written[j].c_str());
      throw;
    }
  }
}

}  // namespace pipescope
