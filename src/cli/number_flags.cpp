#include "number_flags.hpp"

#include <cstdio>
#include <string>

#include "attn/io/numbers.hpp"

namespace attn::cli {
namespace {

// CLI11's type name of an option's value ("UINT", "FLOAT", ...), without the validators'
// descriptions that get_type_name() appends after ':'.
std::string value_type(const CLI::Option& opt) {
  const std::string full = opt.get_type_name();
  return full.substr(0, full.find(':'));
}

CLI::Validator number_reader(const std::string& type, const std::string& flag) {
  // A transform (it may rewrite the text), with no description so --help stays as it was.
  return CLI::Validator(
      [type, flag](std::string& text) {
        if (type == "FLOAT") {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.17g", parse_number(text, flag));
          text = buf;
        } else if (type == "UINT") {
          text = std::to_string(parse_count(text, flag));
        } else {
          text = std::to_string(parse_integer(text, flag));
        }
        return std::string();
      },
      "");
}

}  // namespace

void check_number_flags(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = value_type(*opt);
    if (type == "FLOAT" || type == "UINT" || type == "INT") opt->transform(number_reader(type, opt->get_name()));
  }
  for (CLI::App* sub : app.get_subcommands({})) check_number_flags(*sub);
}

}  // namespace attn::cli
