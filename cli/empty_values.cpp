// refuse_empty_values (cli/commands.h): one validator on every option that takes a value,
// so that no command reads `--flag ""` as "not given". Flags (no value) are left alone.
#include <string>

#include "cli/commands.h"

namespace pipescope::cli {

void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& value) { return value.empty() ? std::string("expected a value, got an empty string") : ""; }, "",
      "NON_EMPTY");
  for (CLI::Option* option : app.get_options([](const CLI::Option* o) { return o->get_type_size() != 0; })) {
    option->check(non_empty);
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) refuse_empty_values(*sub);
}

}  // namespace pipescope::cli
