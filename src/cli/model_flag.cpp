#include "model_flag.hpp"

namespace attn::cli {

CLI::Option* add_model_option(CLI::App* cmd, std::string& folder, const std::string& help) {
  const CLI::Validator named(
      [](std::string& value) { return value.empty() ? std::string("an empty folder name: name a model folder") : ""; },
      "FOLDER");
  return cmd->add_option("--model", folder, help)->check(named);
}

}  // namespace attn::cli
