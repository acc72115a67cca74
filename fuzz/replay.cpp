// Replays every reproducer of fuzz/regressions/<target>/ through the entry
// function of its target (fuzz/entries.hpp), with the normal compiler: the
// findings of the fuzzers stay fixed in every build, the sanitizer build
// included. Usage: fuzz_replay REGRESSIONS_DIR. Exits 1 when a folder names no
// target or an entry function throws anything but an InputError (which it
// catches); a crash or sanitizer report fails the test by itself.
#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "entries.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::cerr << "usage: fuzz_replay REGRESSIONS_DIR\n";
    return 2;
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& dir : fs::directory_iterator(argv[1]))
    if (dir.is_directory())
      for (const fs::directory_entry& file : fs::directory_iterator(dir.path()))
        if (file.is_regular_file()) files.push_back(file.path());
  std::sort(files.begin(), files.end());
  int failed = 0;
  for (const fs::path& file : files) {
    const std::string target = file.parent_path().filename().string();
    const attn::fuzz::Entry entry = attn::fuzz::entry(target);
    if (!entry) {
      std::cerr << file.string() << ": no fuzz target named " << target << "\n";
      ++failed;
      continue;
    }
    std::ifstream in(file, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    try {
      entry(text);
      std::cout << "ok " << target << " " << file.filename().string() << "\n";
    } catch (const std::exception& e) {
      std::cerr << file.string() << ": " << e.what() << "\n";
      ++failed;
    }
  }
  std::cout << files.size() - static_cast<std::size_t>(failed) << " of " << files.size()
            << " reproducers passed\n";
  return failed ? 1 : 0;
}
