// fuzz/cli.dict, the libFuzzer dictionary of fuzz_cli, from the command line's own
// definition: every subcommand's name, every flag's long and short names, the values its
// help offers (CLI11's {a,b} sets, "a | b | c" lists in a description, defaults), and the
// names of the files fuzz_cli's folder holds, with a few hostile values. Invariant: the
// dictionary names every flag of `pipescope` (add_all_commands); ctest's
// ReliabilityFuzzReplay.cli_dict runs this with --check and fails when fuzz/cli.dict is
// stale.
//   fuzz_cli_dict > fuzz/cli.dict           write it
//   fuzz_cli_dict --check fuzz/cli.dict     exit 1 naming what is missing or extra
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace {

// Words fuzz_cli's folder and a hostile user bring.
const char* kFixed[] = {"\n", "-", "0", "1", "2", "4", "8", "16", "-1", "0.5", "1.5", "nan", "inf", "-inf",
                        "p.json", "e.json", "h.json", "plan.json", "m.json", "c.json", "s.json", "job.json",
                        "job.profile.json", "tjob.json", "djob.json", "mp.json", "pred.json", "meas.json", "out.json", "h100-sxm", "h200"};

void add_values(const std::string& text, std::set<std::string>& words) {
  static const std::regex set_re(R"(\{([^}]*)\})");
  static const std::regex bar_re(R"(([A-Za-z0-9_.-]+)\s*\|\s*([A-Za-z0-9_.-]+))");
  for (std::sregex_iterator it(text.begin(), text.end(), set_re), end; it != end; ++it) {
    std::stringstream items((*it)[1].str());
    for (std::string item; std::getline(items, item, ',');) {
      if (!item.empty()) words.insert(item);
    }
  }
  // Overlapping pairs: "a | b | c" gives a, b and c.
  for (std::size_t from = 0; from < text.size();) {
    std::smatch m;
    const std::string rest = text.substr(from);
    if (!std::regex_search(rest, m, bar_re)) break;
    words.insert(m[1].str());
    words.insert(m[2].str());
    from += static_cast<std::size_t>(m.position(2));
  }
}

void collect(const CLI::App& app, std::set<std::string>& words) {
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) words.insert("--" + n);
    for (const std::string& n : o->get_snames()) words.insert("-" + n);
    add_values(o->get_type_name(), words);
    add_values(o->get_description(), words);
    if (!o->get_default_str().empty()) words.insert(o->get_default_str());
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    words.insert(sub->get_name());
    collect(*sub, words);
  }
}

std::string quoted(const std::string& word) {
  std::string out = "\"";
  for (unsigned char c : word) {
    if (c == '"' || c == '\\' || c < 0x20 || c > 0x7e) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pipescope"};
  pipescope::cli::add_all_commands(app);
  std::set<std::string> words(std::begin(kFixed), std::end(kFixed));
  collect(app, words);
  std::ostringstream dict;
  dict << "# Words of the pipescope command line, the libFuzzer -dict of fuzz_cli.\n"
       << "# Written by fuzz_cli_dict (fuzz/cli_dict_main.cpp) from the app's own flags; do not edit.\n";
  for (const std::string& w : words) dict << quoted(w) << "\n";
  if (argc == 3 && std::string(argv[1]) == "--check") {
    std::ifstream in(argv[2]);
    const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (kept == dict.str()) return 0;
    std::cerr << argv[2] << " is not what the command line defines now: rewrite it with fuzz_cli_dict > "
              << argv[2] << "\n";
    std::set<std::string> kept_lines, made_lines;
    std::stringstream a(kept), b(dict.str());
    for (std::string l; std::getline(a, l);) kept_lines.insert(l);
    for (std::string l; std::getline(b, l);) made_lines.insert(l);
    for (const std::string& l : made_lines) if (!kept_lines.count(l)) std::cerr << "  missing: " << l << "\n";
    for (const std::string& l : kept_lines) if (!made_lines.count(l)) std::cerr << "  extra: " << l << "\n";
    return 1;
  }
  if (argc != 1) {
    std::cerr << "usage: fuzz_cli_dict [--check FILE]\n";
    return 2;
  }
  std::cout << dict.str();
  return 0;
}
