#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

// Every attn-cli the tests start keeps its per-user cache (attn-cli tune's file) in a folder of
// this test process, never in the user's own ~/.cache; and runs with tuning on, whatever the
// user's environment says.
int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path cache = fs::temp_directory_path() / ("attn-cli-test-cache-" + std::to_string(::getpid()));
  setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  unsetenv("ATTN_CLI_TUNING");
  doctest::Context context(argc, argv);
  const int code = context.run();
  std::error_code ec;
  fs::remove_all(cache, ec);
  return code;
}
