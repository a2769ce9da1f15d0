// A main for a fuzz target without libFuzzer: feeds it every file of the folders (or the files)
// named on the command line, in name order, once each. The default build links each target
// with it, and CTest replays the target's seed corpus and found cases (data/fuzz/<target>/)
// as a regression test under any compiler; a crash or a failed check aborts with the file
// named. Exit 1 when nothing was replayed: a test that ran no input must not pass.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::filesystem::path> inputs_under(const std::filesystem::path& arg) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(arg)) {
    for (const auto& entry : std::filesystem::directory_iterator(arg))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
  } else if (std::filesystem::is_regular_file(arg)) {
    files.push_back(arg);
  }
  return files;
}

std::string contents(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t replayed = 0;
  for (int a = 1; a < argc; ++a) {
    for (const auto& file : inputs_under(argv[a])) {
      const std::string bytes = contents(file);
      std::cerr << "replay: " << file.string() << "\n";  // names the culprit if it crashes
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::cout << "replayed " << replayed << " input(s) without a finding\n";
  return replayed > 0 ? 0 : 1;
}
