// bench_load: how fast lessons are read, against toml++'s own parse of the
// same text, for generated lessons of about 1, 10 and 100 MB in two layouts
// (one matrix row per line; a whole matrix on one line, as numpy-fed scripts
// write TOML). `--write` only writes one generated lesson, for timing `run`.
//
// Shape key: n tokens, d_model columns of X, h heads; W_Q, W_K, W_V and W_O
// are all (d_model, d_model), so d_k = d_v = d_model / h.
#include <fmt/format.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <armadillo>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/lesson.hpp"
#include "core/lesson_library.hpp"
#include "core/toml.hpp"

namespace {

enum class Layout { rows, line };

const char* layout_name(Layout layout) {
  return layout == Layout::rows ? "rows" : "line";
}

struct LessonShape {
  std::size_t n = 0;
  std::size_t d_model = 0;
  std::size_t heads = 1;
};

// Numbers in [-1, 1] with three decimals, as a script rounding its floats writes them.
arma::mat random_matrix(std::size_t rows, std::size_t cols, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> thousandths(-1000, 1000);
  arma::mat m(rows, cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) m(r, c) = thousandths(rng) / 1000.0;
  return m;
}

// `key = [[...], [...]]`: one row per line, or the whole matrix on one line.
void write_matrix(fmt::memory_buffer& out, std::string_view key, const arma::mat& m,
                  Layout layout) {
  fmt::format_to(std::back_inserter(out), "{} = [", key);
  const std::string row_break =
      layout == Layout::rows ? ",\n" + std::string(key.size() + 4, ' ') : ", ";
  for (std::size_t r = 0; r < m.n_rows; ++r) {
    if (r > 0) fmt::format_to(std::back_inserter(out), "{}", row_break);
    out.push_back('[');
    for (std::size_t c = 0; c < m.n_cols; ++c)
      fmt::format_to(std::back_inserter(out), "{}{:.3f}", c > 0 ? ", " : "", m(r, c));
    out.push_back(']');
  }
  fmt::format_to(std::back_inserter(out), "]\n");
}

struct GeneratedLesson {
  std::string text;
  arma::mat X, W_O;  // to check that the loader read what was written
};

GeneratedLesson generate_lesson(const LessonShape& shape, Layout layout) {
  std::mt19937_64 rng(20240517);
  GeneratedLesson g;
  g.X = random_matrix(shape.n, shape.d_model, rng);
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "[lesson]\nid = \"bench-{}-n{}-d{}\"\n"
                 "title = \"Generated for bench_load: {} tokens, d_model {}, {} heads\"\n\n"
                 "[model]\nheads = {}\n\n[input]\ntokens = [",
                 layout_name(layout), shape.n, shape.d_model, shape.n, shape.d_model, shape.heads,
                 shape.heads);
  for (std::size_t i = 0; i < shape.n; ++i)
    fmt::format_to(std::back_inserter(out), "{}\"t{}\"", i > 0 ? ", " : "", i);
  out.append(std::string_view("]\n"));
  write_matrix(out, "X", g.X, layout);
  out.append(std::string_view("\n[weights]\n"));
  for (const char* key : {"W_Q", "W_K", "W_V", "W_O"}) {
    g.W_O = random_matrix(shape.d_model, shape.d_model, rng);
    write_matrix(out, key, g.W_O, layout);
  }
  g.text = fmt::to_string(out);
  return g;
}

// About `megabytes` of lesson: d_model 128, 8 heads, as many tokens as it takes.
LessonShape shape_for_size(double megabytes) {
  constexpr std::size_t kDModel = 128;
  constexpr double kBytesPerNumber = 8.0;  // "-0.123, " and "0.123, " alike
  const double numbers = megabytes * 1e6 / kBytesPerNumber;
  const double weights = 4.0 * kDModel * kDModel;
  const std::size_t n = numbers > weights + kDModel
                            ? static_cast<std::size_t>((numbers - weights) / kDModel)
                            : std::size_t{1};
  return {n, kDModel, 8};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The fastest of `repeats` runs of `work`, in seconds.
template <typename Work>
double best_time(int repeats, Work&& work) {
  double best = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    const double t = seconds_since(start);
    if (i == 0 || t < best) best = t;
  }
  return best;
}

// A fresh folder under the system's temp folder, removed when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "attn-bench-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw attn::InputError(fmt::format("{}: cannot create a temporary folder", pattern));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void bench(const std::vector<double>& sizes, const std::vector<std::string>& layouts) {
  const TempDir dir;
  fmt::print(
      "toml++: toml::parse of the text in memory. lesson load: attn::find_lesson(path), what "
      "`run`\n"
      "does: read the file, parse, read every key and check every shape. Best of 3 below 20 "
      "MB.\n\n");
  fmt::print("{:<6} {:>9} {:>7} {:>10} {:>11} {:>9} {:>13} {:>9} {:>10}\n", "layout", "size MB",
             "tokens", "longest", "toml++ s", "MB/s", "lesson load s", "MB/s", "load/toml");
  for (const std::string& name : layouts) {
    const Layout layout = name == "rows" ? Layout::rows : Layout::line;
    for (double megabytes : sizes) {
      const LessonShape shape = shape_for_size(megabytes);
      const GeneratedLesson g = generate_lesson(shape, layout);
      const std::string path = (dir.path() / fmt::format("{}-{}mb.toml", name, megabytes)).string();
      attn::write_file_atomically(path, g.text);
      const double mb = static_cast<double>(g.text.size()) / 1e6;
      std::size_t longest = 0;
      for (std::size_t start = 0; start < g.text.size();) {
        std::size_t end = g.text.find('\n', start);
        if (end == std::string::npos) end = g.text.size();
        longest = std::max(longest, end - start);
        start = end + 1;
      }
      const int repeats = mb < 20 ? 3 : 1;

      const double toml_s = best_time(repeats, [&] {
        const toml::table table = toml::parse(g.text, path);
        if (!table.contains("weights")) throw attn::InputError(path + ": no [weights] parsed");
      });
      const double load_s = best_time(repeats, [&] {
        const attn::Lesson lesson = attn::find_lesson(path);
        if (!arma::approx_equal(lesson.X, g.X, "absdiff", 0.0) || !lesson.W_O ||
            !arma::approx_equal(*lesson.W_O, g.W_O, "absdiff", 0.0))
          throw attn::InputError(path + ": the lesson loaded is not the lesson written");
      });
      fmt::print("{:<6} {:>9.1f} {:>7} {:>10} {:>11.3f} {:>9.1f} {:>13.3f} {:>9.1f} {:>10.2f}\n",
                 name, mb, shape.n, longest, toml_s, mb / toml_s, load_s, mb / load_s,
                 load_s / toml_s);
      std::fflush(stdout);
      std::filesystem::remove(path);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Times reading generated lessons: toml++'s own parse, then the full lesson load the CLI "
      "does. Not a test: it prints a table."};
  std::vector<double> sizes{1, 10, 100};
  std::vector<std::string> layouts{"rows", "line"};
  std::string write_path;
  LessonShape shape{1024, 512, 8};
  std::string write_layout = "rows";
  app.add_option("--sizes", sizes, "Lesson sizes in MB (default 1 10 100)")
      ->check(CLI::PositiveNumber);
  app.add_option("--layouts", layouts, "rows (one matrix row per line), line (matrix on one line)")
      ->check(CLI::IsMember({"rows", "line"}));
  app.add_option("--write", write_path, "Only write one generated lesson to this file");
  app.add_option("--n", shape.n, "With --write: tokens (default 1024)")->check(CLI::PositiveNumber);
  app.add_option("--d-model", shape.d_model, "With --write: d_model (default 512)")
      ->check(CLI::PositiveNumber);
  app.add_option("--heads", shape.heads, "With --write: heads, dividing d_model (default 8)")
      ->check(CLI::PositiveNumber);
  app.add_option("--layout", write_layout, "With --write: rows or line (default rows)")
      ->check(CLI::IsMember({"rows", "line"}));
  CLI11_PARSE(app, argc, argv);
  try {
    if (!write_path.empty()) {
      const Layout layout = write_layout == "rows" ? Layout::rows : Layout::line;
      const std::string text = generate_lesson(shape, layout).text;
      attn::write_file_atomically(write_path, text);
      fmt::print("{}: {:.1f} MB, {} tokens, d_model {}, {} heads, {} layout\n", write_path,
                 static_cast<double>(text.size()) / 1e6, shape.n, shape.d_model, shape.heads,
                 write_layout);
      return 0;
    }
    bench(sizes, layouts);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_load: {}\n", e.what());
    return 1;
  }
  return 0;
}
