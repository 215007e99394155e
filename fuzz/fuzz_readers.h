// Shared body of the file-reader fuzz targets: parse bytes as JSON, read them with
// one of the core readers, write the result back and read that again. Invariant
// checked: only InputError may leave a reader (anything else, a sanitizer report or
// a failed round trip aborts and libFuzzer keeps the input as a crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/json_reader.h"

namespace pipescope::fuzz {

// Inputs above this size are skipped: the readers' cost is linear in the text and
// the interesting structure fits in a few kilobytes.
inline constexpr std::size_t kMaxInput = 64 * 1024;

// read(JsonReader) -> T, write(T) -> Json. The written JSON must read back and
// write out to the same text (a reader and its writer agree).
template <typename Read, typename Write>
int read_write_read(const uint8_t* data, std::size_t size, Read read, Write write) {
  if (size > kMaxInput) return -1;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string first;
  try {
    first = write(read(JsonReader::from_text(text, "fuzz"))).dump();
  } catch (const InputError&) {
    return 0;  // rejected with a message: the expected outcome for most inputs
  }
  std::string second;
  try {
    second = write(read(JsonReader::from_text(first, "fuzz-roundtrip"))).dump();
  } catch (const InputError& e) {
    std::fprintf(stderr, "written file does not read back: %s\n%s\n", e.what(), first.c_str());
    std::abort();
  }
  if (first != second) {
    std::fprintf(stderr, "round trip changed the file:\n%s\n%s\n", first.c_str(), second.c_str());
    std::abort();
  }
  return 0;
}

}  // namespace pipescope::fuzz
