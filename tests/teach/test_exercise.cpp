// The exercise generator: the generator's published test vectors, the
// reproducibility of a student's variant, the roster, and every rejection rule.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "backend/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/pipeline.hpp"
#include "teach/exercise.hpp"
#include "teach/names.hpp"

namespace {

attn::ExerciseSpec spec_with(std::size_t tokens, std::size_t d_model, std::size_t d_k,
                             std::size_t heads) {
  attn::ExerciseSpec spec;
  spec.seed = 2026;
  spec.tokens = tokens;
  spec.d_model = d_model;
  spec.d_k = d_k;
  spec.heads = heads;
  spec.command = "attn-trace exercise --seed 2026";
  attn::normalise_spec(spec);
  return spec;
}

attn::Trace trace_of(const std::string& toml) {
  attn::CpuBackend cpu;
  return attn::run_pipeline(attn::parse_lesson(toml, "test.toml"), cpu);
}

// Checks, independently of trace_rule_broken, that an exercise keeps every rule.
void check_rules_hold(const attn::ExerciseSpec& spec, const attn::Exercise& e) {
  const double grid = std::pow(10.0, spec.decimals);
  for (const arma::mat* M : {&e.lesson.X, &e.lesson.W_Q, &e.lesson.W_K, &e.lesson.W_V})
    for (double v : *M) {
      CHECK(std::abs(v * grid - std::round(v * grid)) < 1e-9);  // on the grid
      CHECK(std::abs(v) <= 1.0);
    }
  for (std::size_t h = 0; h < spec.heads; ++h) {
    const arma::mat& A = e.trace.at(fmt::format("head{}.weights", h)).value;
    for (std::size_t i = 0; i < A.n_rows; ++i) {
      std::vector<double> open;
      for (std::size_t j = 0; j < A.n_cols; ++j)
        if (e.trace.mask(i, j) == 0) open.push_back(A(i, j));
      REQUIRE(!open.empty());
      if (open.size() < 2) continue;
      const auto [low, high] = std::minmax_element(open.begin(), open.end());
      CHECK(*low >= std::pow(10.0, 1 - spec.answer_decimals));
      CHECK(*high - *low >= 0.05);
    }
  }
  for (const attn::Step* step : attn::key_steps(spec, e.trace))
    for (double v : step->value) {
      if (!std::isfinite(v)) continue;
      const double scaled = v * std::pow(10.0, spec.answer_decimals);
      CHECK(std::abs(scaled - std::floor(scaled) - 0.5) > 1e-9);
    }
}

}  // namespace

TEST_CASE("SplitMix64 reproduces the reference implementation's outputs") {
  // Vigna's splitmix64.c: state 0 and state 1234567 (the outputs used to test ports).
  attn::SplitMix64 zero(0);
  CHECK(zero.next() == 0xe220a8397b1dcdafull);
  CHECK(zero.next() == 0x6e789e6aa1b965f4ull);
  CHECK(zero.next() == 0x06c45d188009454full);
  attn::SplitMix64 rng(1234567);
  for (std::uint64_t expected :
       {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull,
        4593380528125082431ull, 16408922859458223821ull})
    CHECK(rng.next() == expected);
}

TEST_CASE("FNV-1a 64 matches its published test vectors") {
  CHECK(attn::fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(attn::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(attn::fnv1a64("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("bounded draws are in range and uniform (no modulo bias)") {
  attn::SplitMix64 rng(42);
  SUBCASE("a bound of 1 always gives 0") {
    for (int i = 0; i < 100; ++i) CHECK(rng.below(1) == 0);
  }
  SUBCASE("six faces, 60000 throws: each within 3% of 10000") {
    std::array<int, 6> counts{};
    for (int i = 0; i < 60000; ++i) ++counts.at(rng.below(6));
    for (int c : counts) CHECK(std::abs(c - 10000) < 300);
  }
  SUBCASE("between covers both ends and nothing outside") {
    std::set<std::int64_t> seen;
    for (int i = 0; i < 2000; ++i) seen.insert(rng.between(-10, 10));
    CHECK(seen.size() == 21);
    CHECK(*seen.begin() == -10);
    CHECK(*seen.rbegin() == 10);
  }
  SUBCASE("a bound just above 2^63 rejects about half the outputs and keeps the range") {
    const std::uint64_t bound = (1ull << 63) + 1;
    for (int i = 0; i < 200; ++i) CHECK(rng.below(bound) < bound);
  }
}

TEST_CASE("a student's stream depends on the seed and the name only") {
  CHECK(attn::student_stream_seed(7, "Ada") == attn::student_stream_seed(7, "Ada"));
  CHECK(attn::student_stream_seed(7, "Ada") != attn::student_stream_seed(8, "Ada"));
  CHECK(attn::student_stream_seed(7, "Ada") != attn::student_stream_seed(7, "Ada "));
  // Defined as mix64(mix64(seed) ^ fnv1a64(name)): check the formula itself.
  CHECK(attn::student_stream_seed(7, "Ada") == attn::mix64(attn::mix64(7) ^ attn::fnv1a64("Ada")));
}

TEST_CASE(
    "generation is reproducible, differs between students, and ignores the rest of the roster") {
  attn::ExerciseSpec spec = spec_with(3, 3, 2, 1);
  const std::vector<attn::Student> small = attn::parse_roster("Ada\nBob\n", "a.txt");
  const std::vector<attn::Student> large = attn::parse_roster("Zed\nCleo\nAda\nDan\n", "b.txt");
  const attn::Exercise ada_small = attn::generate_exercise(spec, small[0]);
  const attn::Exercise ada_large = attn::generate_exercise(spec, large[2]);
  const attn::Exercise ada_again = attn::generate_exercise(spec, small[0]);
  const attn::Exercise bob = attn::generate_exercise(spec, small[1]);
  CHECK(ada_small.lesson_toml == ada_again.lesson_toml);
  CHECK(ada_small.lesson_toml == ada_large.lesson_toml);
  CHECK_FALSE(arma::approx_equal(ada_small.lesson.X, bob.lesson.X, "absdiff", 1e-12));
  CHECK(ada_small.stream_seed == attn::student_stream_seed(2026, "Ada"));
  // The lesson the key is computed from is the file as written, parsed by the ordinary loader.
  const attn::Trace reparsed = trace_of(ada_small.lesson_toml);
  CHECK(arma::approx_equal(reparsed.at("head0.context").value,
                           ada_small.trace.at("head0.context").value, "absdiff", 0.0));
}

TEST_CASE("the first draw of a stream is the documented sequence of grid values") {
  // X (3×3), then W_Q, W_K, W_V (3×2 each), row by row, each uniform on [-10, 10].
  attn::ExerciseSpec spec = spec_with(3, 3, 2, 1);
  attn::SplitMix64 rng(99);
  const attn::ExerciseDraw draw = attn::draw_inputs(spec, rng);
  attn::SplitMix64 replay(99);
  std::vector<std::int64_t> expected;
  for (int i = 0; i < 9 + 3 * 6; ++i) {
    // 21 values: reject outputs below 2^64 mod 21, then take the remainder.
    std::uint64_t x;
    do x = replay.next();
    while (x < (0 - std::uint64_t{21}) % 21);
    expected.push_back(static_cast<std::int64_t>(x % 21) - 10);
  }
  std::vector<std::int64_t> drawn;
  for (const auto* M : {&draw.X, &draw.W_Q, &draw.W_K, &draw.W_V})
    for (const auto& row : *M) drawn.insert(drawn.end(), row.begin(), row.end());
  CHECK(drawn == expected);
}

TEST_CASE("every kept exercise keeps every rule") {
  SUBCASE("defaults") {
    const attn::ExerciseSpec spec = spec_with(3, 3, 2, 1);
    for (const attn::Student& s : attn::numbered_students(25))
      check_rules_hold(spec, attn::generate_exercise(spec, s));
  }
  SUBCASE("two heads, causal, key padding, two decimals") {
    attn::ExerciseSpec spec;
    spec.seed = 5;
    spec.tokens = 4;
    spec.d_model = 3;
    spec.heads = 2;
    spec.d_k = 2;
    spec.causal = true;
    spec.key_padding = true;
    spec.decimals = 2;
    spec.answer_decimals = 4;
    attn::normalise_spec(spec);
    for (const attn::Student& s : attn::numbered_students(10))
      check_rules_hold(spec, attn::generate_exercise(spec, s));
  }
  SUBCASE("cross-attention from a memory of 4 tokens") {
    attn::ExerciseSpec spec = spec_with(2, 3, 2, 1);
    spec.memory_tokens = 4;
    attn::normalise_spec(spec);
    for (const attn::Student& s : attn::numbered_students(10)) {
      const attn::Exercise e = attn::generate_exercise(spec, s);
      REQUIRE(e.lesson.memory.has_value());
      CHECK(e.lesson.memory->n_rows == 4);
      check_rules_hold(spec, e);
    }
  }
}

TEST_CASE("input rules: zero rows, equal rows, zero columns") {
  attn::ExerciseDraw draw;
  draw.X = {{1, 2}, {3, 4}};
  draw.W_Q = draw.W_K = draw.W_V = {{1, 0}, {0, 1}};
  CHECK_FALSE(attn::input_rule_broken(draw).has_value());
  SUBCASE("a token of zeros") {
    draw.X[1] = {0, 0};
    CHECK(attn::input_rule_broken(draw)->rule == "zero row");
  }
  SUBCASE("two equal tokens") {
    draw.X[1] = draw.X[0];
    CHECK(attn::input_rule_broken(draw)->rule == "equal rows");
  }
  SUBCASE("a memory token of zeros") {
    draw.memory = {{0, 0}, {1, 1}};
    CHECK(attn::input_rule_broken(draw)->detail == "memory row 0 is all zeros");
  }
  SUBCASE("a weight column of zeros") {
    draw.W_K = {{1, 0}, {1, 0}};
    CHECK(attn::input_rule_broken(draw)->detail == "W_K column 1 is all zeros");
  }
}

TEST_CASE("trace rules: dominated rows, flat rows, rounding midpoints") {
  attn::ExerciseSpec spec;
  spec.tokens = 2;
  spec.d_model = 2;
  spec.d_k = 1;
  spec.answer_decimals = 3;
  spec.ask = {"head0.scores"};
  SUBCASE("a row where one exponent dominates: scores 0 and 8 give a weight of 0.0003") {
    // d_k = 1: scaled = scores. Q = [1, 1]·[[1],[1]]... row 0: q = 1, keys 0 and 8.
    const attn::Trace t = trace_of(R"([input]
X = [[1, 0], [0, 8]]
[weights]
W_Q = [[1], [1]]
W_K = [[0], [1]]
W_V = [[1], [1]]
)");
    const auto broken = attn::trace_rule_broken(spec, t);
    REQUIRE(broken.has_value());
    CHECK(broken->rule == "dominated row");
    CHECK(broken->detail.find("head0.weights row 0") != std::string::npos);
  }
  SUBCASE("a row of equal weights teaches nothing") {
    const attn::Trace t = trace_of(R"([input]
X = [[0.1, 0.2], [0.2, 0.1]]
[weights]
W_Q = [[0.3], [0.3]]
W_K = [[0.5], [0.5]]
W_V = [[1], [1]]
)");
    const auto broken = attn::trace_rule_broken(spec, t);
    REQUIRE(broken.has_value());
    CHECK(broken->rule == "flat row");
  }
  SUBCASE("a score of exactly 0.0625 has two 3-decimal roundings") {
    // q = 0.25 for both tokens; keys 0.25 and 1.0: scores 0.0625 and 0.25 (weights differ enough).
    const attn::Trace t = trace_of(R"([input]
X = [[0.25, 0], [0, 1]]
[weights]
W_Q = [[1], [0.25]]
W_K = [[1], [1]]
W_V = [[1], [2]]
)");
    const auto broken = attn::trace_rule_broken(spec, t);
    REQUIRE(broken.has_value());
    CHECK(broken->rule == "rounding midpoint");
    CHECK(broken->detail.find("head0.scores[0,0] = 0.0625") != std::string::npos);
  }
}

TEST_CASE("the lesson file writes the grid numbers exactly and loads") {
  attn::ExerciseSpec spec = spec_with(2, 2, 1, 1);
  spec.key_padding = true;
  attn::ExerciseDraw draw;
  draw.X = {{-5, 10}, {3, -10}};
  draw.W_Q = {{1}, {-2}};
  draw.W_K = {{0}, {7}};
  draw.W_V = {{-1}, {9}};
  const std::string toml =
      attn::exercise_lesson_toml(spec, {{}, "O\"Neil \\ Ada", "o-neil-ada"}, draw, 3);
  CHECK(toml.find("X = [[-0.5, 1.0],\n     [0.3, -1.0]]\n") != std::string::npos);
  CHECK(toml.find("W_K = [[0.0],\n       [0.7]]\n") != std::string::npos);
  CHECK(toml.find("tokens = [\"the\", \"<pad>\"]") != std::string::npos);
  CHECK(toml.find("key_padding = [false, true]") != std::string::npos);
  const attn::Lesson lesson = attn::parse_lesson(toml, "test.toml");
  CHECK(lesson.title == "Attention exercise: O\"Neil \\ Ada");
  CHECK(lesson.X(0, 0) == -0.5);
  CHECK(lesson.X(1, 0) == 0.3);  // the same double as 3 / 10.0
  CHECK(lesson.W_V(1, 0) == 0.9);
  CHECK(lesson.key_padding == std::vector<bool>{false, true});
}

TEST_CASE("normalise_spec: defaults, short names, trace order, limits") {
  SUBCASE("the default asks scores, scaled, weights and context of head 0") {
    const attn::ExerciseSpec spec = spec_with(3, 3, 2, 1);
    CHECK(spec.ask == std::vector<std::string>{"head0.scores", "head0.scaled", "head0.weights",
                                               "head0.context"});
  }
  SUBCASE("short names become head 0 steps, in trace order, each once") {
    attn::ExerciseSpec spec;
    spec.heads = 2;
    spec.d_k = 2;
    spec.ask = {"context", "Q", "head1.weights", "scores", "Q"};
    attn::normalise_spec(spec);
    CHECK(spec.ask ==
          std::vector<std::string>{"Q", "head0.scores", "head0.context", "head1.weights"});
  }
  SUBCASE("an unknown step lists the valid ones") {
    attn::ExerciseSpec spec;
    spec.ask = {"softmax"};
    try {
      attn::normalise_spec(spec);
      FAIL("expected an InputError");
    } catch (const attn::InputError& e) {
      const std::string message = e.what();
      CHECK(message.find("--ask softmax") != std::string::npos);
      CHECK(message.find("head0.weights") != std::string::npos);
    }
  }
  SUBCASE("masked is asked only when something is masked") {
    attn::ExerciseSpec spec;
    spec.ask = {"masked"};
    CHECK_THROWS_WITH_AS(attn::normalise_spec(spec), doctest::Contains("nothing is masked"),
                         attn::InputError);
    spec.causal = true;
    attn::normalise_spec(spec);
    CHECK(spec.ask == std::vector<std::string>{"head0.masked"});
  }
  SUBCASE("the inputs are given, not asked") {
    attn::ExerciseSpec spec;
    spec.ask = {"X"};
    CHECK_THROWS_AS(attn::normalise_spec(spec), attn::InputError);
  }
  SUBCASE("limits") {
    attn::ExerciseSpec spec;
    spec.tokens = 9;
    CHECK_THROWS_WITH_AS(attn::normalise_spec(spec), doctest::Contains("--tokens 9"),
                         attn::InputError);
    spec = {};
    spec.heads = 3;
    spec.d_k = 3;
    CHECK_THROWS_WITH_AS(attn::normalise_spec(spec), doctest::Contains("heads × d_k"),
                         attn::InputError);
    spec = {};
    spec.tokens = 1;
    spec.key_padding = true;
    CHECK_THROWS_WITH_AS(attn::normalise_spec(spec), doctest::Contains("--key-padding"),
                         attn::InputError);
    spec = {};
    spec.decimals = 3;
    CHECK_THROWS_WITH_AS(attn::normalise_spec(spec), doctest::Contains("--decimals 3"),
                         attn::InputError);
    spec = {};
    spec.answer_decimals = 1;
    CHECK_THROWS_WITH_AS(attn::normalise_spec(spec), doctest::Contains("--answer-decimals 1"),
                         attn::InputError);
  }
}

TEST_CASE("rosters: names, comments, duplicates, folders") {
  SUBCASE("blank lines, comments, spaces and a byte-order mark are skipped") {
    const auto students =
        attn::parse_roster("\xEF\xBB\xBF# class 3B\n  Ada Lovelace \r\n\nAlan Turing\n", "r.txt");
    REQUIRE(students.size() == 2);
    CHECK(students[0].name == "Ada Lovelace");
    CHECK(students[0].slug == "ada-lovelace");
    CHECK(students[1].slug == "alan-turing");
  }
  SUBCASE("a duplicate names both lines") {
    CHECK_THROWS_WITH_AS(attn::parse_roster("Ada\nBob\nAda\n", "r.txt"),
                         doctest::Contains("r.txt:3: \"Ada\" is already on line 1"),
                         attn::InputError);
  }
  SUBCASE("an empty roster") {
    CHECK_THROWS_WITH_AS(attn::parse_roster("# nobody\n\n", "r.txt"),
                         doctest::Contains("r.txt: the roster has no names"), attn::InputError);
  }
  SUBCASE("a name longer than 200 characters names the line (a 66 MiB lesson otherwise)") {
    const std::string longest(attn::kMaxNameChars, 'a');
    CHECK(attn::parse_roster(longest + "\n", "r.txt")[0].name == longest);
    std::string chinese;
    for (std::size_t i = 0; i < attn::kMaxNameChars; ++i) chinese += "张";
    CHECK(attn::parse_roster(chinese + "\n", "r.txt")[0].name == chinese);  // 600 bytes
    CHECK_THROWS_WITH_AS(attn::parse_roster("Ada\n" + longest + "b\n", "r.txt"),
                         doctest::Contains("r.txt:2: this name is 201 characters long; a name is "
                                           "at most 200 characters"),
                         attn::InputError);
    CHECK_THROWS_WITH_AS(attn::parse_roster(std::string(1 << 20, 'x'), "r.txt"),
                         doctest::Contains("r.txt:1: this name is 1048576 characters long"),
                         attn::InputError);
  }
  SUBCASE("a control character") {
    CHECK_THROWS_WITH_AS(attn::parse_roster("Ada\x01\n", "r.txt"), doctest::Contains("r.txt:1"),
                         attn::InputError);
  }
  SUBCASE("folders keep letters and digits of any script, whoever else is on the roster") {
    const auto students = attn::parse_roster(
        "José Núñez\n张伟\nO'Brien\nŁukasz Dvořák\nАлексей Смирнов\n!!!\n", "r.txt");
    REQUIRE(students.size() == 6);
    CHECK(students[0].slug == "josé-núñez");
    CHECK(students[1].slug == "张伟");
    CHECK(students[2].slug == "o-brien");
    CHECK(students[3].slug == "łukasz-dvořák");
    CHECK(students[4].slug == "алексей-смирнов");
    CHECK(students[5].slug == fmt::format("student-{:08x}", attn::fnv1a64("!!!") >> 32));
    for (const attn::Student& s : students) {
      CHECK(attn::parse_roster(s.name + "\n", "one.txt")[0].slug == s.slug);
      CHECK(attn::student_folder(s.name) == s.slug);
    }
  }
  SUBCASE("two names with one folder: an error naming both lines and the fix") {
    CHECK_THROWS_WITH_AS(attn::parse_roster("Ana B\nBob\nana-b\n", "r.txt"),
                         doctest::Contains("r.txt:3: \"ana-b\" gets the folder \"ana-b\", as "
                                           "\"Ana B\" on line 1 does"),
                         attn::InputError);
    CHECK_THROWS_WITH_AS(attn::parse_roster("Ana B\nana-b\n", "r.txt"),
                         doctest::Contains("make the names differ in a letter or digit"),
                         attn::InputError);
  }
  SUBCASE("names are NFC: an NFD spelling is the same student") {
    const std::string nfc_name = "Jos\u00e9 N\u00fa\u00f1ez";
    const std::string nfd_name = "Jose\u0301 Nu\u0301n\u0303ez";
    REQUIRE(nfc_name != nfd_name);
    const auto from_nfd = attn::parse_roster(nfd_name + "\n", "r.txt");
    CHECK(from_nfd[0].name == nfc_name);
    CHECK(from_nfd[0].slug == "jos\u00e9-n\u00fa\u00f1ez");
    CHECK(attn::student_stream_seed(5, nfd_name) == attn::student_stream_seed(5, nfc_name));
    // An NFC name hashes its own bytes, as before normalisation existed.
    CHECK(attn::student_stream_seed(5, nfc_name) ==
          attn::mix64(attn::mix64(5) ^ attn::fnv1a64(nfc_name)));
    const std::string message = "r.txt:3: \"" + nfc_name +
                                "\" is already on line 1 (the same letters, written with other "
                                "code points)";
    CHECK_THROWS_WITH_AS(attn::parse_roster(nfc_name + "\nBob\n" + nfd_name + "\n", "r.txt"),
                         doctest::Contains(message.c_str()), attn::InputError);
  }
  SUBCASE("a line that is not UTF-8 names the file and the line") {
    CHECK_THROWS_WITH_AS(attn::parse_roster("Ada\nJos\xe9 N\xfa\xf1"
                                            "ez\n",
                                            "class.txt"),
                         doctest::Contains("class.txt:2: this line is not UTF-8 (byte 0xE9 at "
                                           "column 4); save the roster as UTF-8"),
                         attn::InputError);
  }
  SUBCASE("numbered students: the folder does not depend on how many there are") {
    const auto three = attn::numbered_students(3);
    CHECK(three[2].name == "Student 3");
    CHECK(three[2].slug == "student-03");
    const auto many = attn::numbered_students(120);
    CHECK(many[2].slug == "student-03");
    CHECK(many[99].slug == "student-100");
  }
}

TEST_CASE("rosters with IDs: an id,name header, 学号, quoting, and every bad row named") {
  SUBCASE("BOM, CRLF, quoting, a Chinese header, full-width digits, extra columns") {
    const auto students = attn::parse_roster(
        "\xEF\xBB\xBF# class 3B\r\n学号,姓名,email\r\n２０２４００１,张伟,z@x\r\n"
        "\"2024-002\",\"Lovelace, Ada\"\r\n\r\n s2024.3_b , José Núñez \r\n",
        "class.csv");
    REQUIRE(students.size() == 3);
    CHECK(students[0].id == "2024001");  // NFKC: full-width digits as ASCII
    CHECK(students[0].name == "张伟");
    CHECK(students[0].slug == "张伟");
    CHECK(students[1].id == "2024-002");
    CHECK(students[1].name == "Lovelace, Ada");
    CHECK(students[1].slug == "lovelace-ada");
    CHECK(students[2].id == "s2024.3_b");
    CHECK(students[2].name == "José Núñez");
    // The header may be name,id in either case and order.
    const auto swapped = attn::parse_roster("Name,ID\nAda,A7\n", "r.csv");
    REQUIRE(swapped.size() == 1);
    CHECK(swapped[0].id == "A7");
    CHECK(swapped[0].name == "Ada");
  }
  SUBCASE("a names-only roster is unchanged, commas and all: no IDs") {
    const auto students = attn::parse_roster("Lovelace, Ada\nid\nname\n", "r.txt");
    REQUIRE(students.size() == 3);
    CHECK(students[0].name == "Lovelace, Ada");
    CHECK(students[0].id == "");
    CHECK(students[1].name == "id");
  }
  SUBCASE("the ID never changes the variant: the stream is the seed's and the name's") {
    const attn::ExerciseSpec spec = spec_with(3, 3, 2, 1);
    const auto with_id = attn::parse_roster("id,name\n2024001,张伟\n", "r.csv");
    const auto other_id = attn::parse_roster("id,name\nX-9,张伟\n", "r.csv");
    const auto without = attn::parse_roster("张伟\n", "r.txt");
    const attn::Exercise a = attn::generate_exercise(spec, with_id[0]);
    const attn::Exercise b = attn::generate_exercise(spec, other_id[0]);
    const attn::Exercise c = attn::generate_exercise(spec, without[0]);
    CHECK(a.stream_seed == attn::student_stream_seed(2026, "张伟"));
    CHECK(a.stream_seed == b.stream_seed);
    CHECK(a.stream_seed == c.stream_seed);
    CHECK(a.lesson_toml == c.lesson_toml);  // and so the fingerprint
    CHECK(b.lesson_toml == c.lesson_toml);
  }
  SUBCASE("bad rows: exit-2 errors naming the file, the line and the fix") {
    const std::pair<std::string, std::string> cases[] = {
        {"id,name\n1,Ada\n1,Bob\n",
         "r.csv:3: ID 1 is already on line 2; each student has an ID of their own"},
        {"id,name\n1,Ada\n,Bob\n", "r.csv:3: the ID of \"Bob\" is empty; an ID is 1 to 32"},
        {"id,name\n1,Ada\n" + std::string(33, '7') + ",Bob\n",
         "r.csv:3: the ID of \"Bob\" is 33 characters long (at most 32)"},
        {"id,name\n1\t2,Ada\n", "r.csv:2: the ID of \"Ada\" has a control character"},
        {"id,name\n1 2,Ada\n", "r.csv:2: the ID of \"Ada\" has the character ' '"},
        {"id,name\n=1+2,Ada\n", "r.csv:2: the ID of \"Ada\" does not start with a letter or digit"},
        {"id,name\n1\u202e2,Ada\n", "r.csv:2: the ID of \"Ada\" has the character U+202E"},
        {"id,name\n1,\"Ada\nLovelace\"\n", "r.csv:2: the name contains a control character"},
        {"id,name\n1,\n", "r.csv:2: no name for ID 1; write the student's name"},
        {"id,name\n1,Ada\n2,Ada\n", "r.csv:3: \"Ada\" is already on line 2"},
        {"id,name\n# nobody\n", "r.csv: the roster has no names"},
        {"id,name\n1,Ada\n2,Jos\xe9\n", "r.csv:3: this line is not UTF-8 (byte 0xE9 at column 6)"},
    };
    for (const auto& [text, message] : cases)
      CHECK_THROWS_WITH_AS(attn::parse_roster(text, "r.csv"), doctest::Contains(message.c_str()),
                           attn::InputError);
  }
}

TEST_CASE("key_steps leaves out repeats unless asked") {
  attn::ExerciseSpec spec = spec_with(3, 3, 2, 1);
  const attn::Exercise e = attn::generate_exercise(spec, {{}, "Ada", "ada"});
  std::vector<std::string> ids;
  for (const attn::Step* s : attn::key_steps(spec, e.trace)) ids.push_back(s->id);
  CHECK(ids == std::vector<std::string>{"Q", "K", "V", "head0.scores", "head0.scaled", "head0.exp",
                                        "head0.row_sum", "head0.weights", "head0.context"});
  spec.ask.push_back("head0.masked");
  spec.ask.push_back("concat");
  ids.clear();
  for (const attn::Step* s : attn::key_steps(spec, e.trace)) ids.push_back(s->id);
  CHECK(std::find(ids.begin(), ids.end(), "head0.masked") != ids.end());
  CHECK(std::find(ids.begin(), ids.end(), "concat") != ids.end());
}

TEST_CASE(
    "worked cells: one per asked step, the last query's first column, a masked cell for masked") {
  attn::ExerciseSpec spec;
  spec.seed = 3;
  spec.causal = true;
  spec.ask = {"Q", "scores", "scaled", "masked", "weights", "context"};
  attn::normalise_spec(spec);
  const attn::Exercise e = attn::generate_exercise(spec, {{}, "Ada", "ada"});
  REQUIRE(e.worked.size() == 6);
  for (std::size_t i = 0; i < e.worked.size(); ++i) CHECK(e.worked[i].step == e.asked[i]);
  CHECK(e.worked[0].kind == attn::ExpansionKind::product);
  CHECK(e.worked[1].kind == attn::ExpansionKind::product);
  CHECK(e.worked[2].kind == attn::ExpansionKind::divide);
  CHECK(e.worked[3].kind == attn::ExpansionKind::mask);
  CHECK(e.worked[4].kind == attn::ExpansionKind::softmax);
  CHECK(e.worked[5].kind == attn::ExpansionKind::product);
  CHECK(e.worked[1].row == 2);
  CHECK(e.worked[1].col == 0);
  // Causal: the first masked cell in row order is (0, 1), and it says why.
  CHECK(e.worked[3].row == 0);
  CHECK(e.worked[3].col == 1);
  CHECK(e.worked[3].mask_reasons == attn::mask_causal);
  // The worked value is the key's value: the expansion reads the same trace.
  CHECK(e.worked[4].value == e.trace.at("head0.weights").value(2, 0));
  REQUIRE(e.worked[5].sum.has_value());
  double total = 0;
  for (const attn::ProductTerm& t : e.worked[5].sum->terms) total += t.product();
  CHECK(total == doctest::Approx(e.trace.at("head0.context").value(2, 0)).epsilon(1e-12));
}

TEST_CASE("a backprop exercise: grad short names, the upstream drawn last, its key and lesson") {
  attn::ExerciseSpec spec;
  spec.ask = {"grad.scores", "grad.head0.K", "grad.masked"};
  attn::normalise_spec(spec);
  CHECK(spec.backward == "upstream");  // a grad.* step asked: an upstream gradient drawn
  CHECK(spec.ask == std::vector<std::string>{"grad.head0.masked", "grad.head0.scores",
                                             "grad.head0.K"});
  // The forward inputs are those of the same stream without a backward pass.
  attn::ExerciseSpec forward = spec_with(3, 3, 2, 1);
  attn::SplitMix64 a(7), b(7);
  const attn::ExerciseDraw with = attn::draw_inputs(spec, a), without = attn::draw_inputs(forward, b);
  CHECK(with.X == without.X);
  CHECK(with.W_V == without.W_V);
  CHECK(without.upstream.empty());
  REQUIRE(with.upstream.size() == 3);
  CHECK(with.upstream[0].size() == 2);
  const attn::Exercise e = attn::generate_exercise(spec, {{}, "Ada", "ada"});
  REQUIRE(e.lesson.backward);
  CHECK(e.lesson.backward->jacobian_row == 2);  // the last query: every key open
  std::vector<std::string> ids;
  for (const attn::Step* s : attn::key_steps(spec, e.trace)) ids.push_back(s->id);
  // Given (grad.concat) and copies with one head (grad.head0.context, grad.Q,
  // grad.head0.scaled with nothing masked) are left out.
  for (const char* left_out : {"grad.concat", "grad.head0.context", "grad.Q", "grad.head0.scaled"})
    CHECK(std::find(ids.begin(), ids.end(), left_out) == ids.end());
  for (const char* shown : {"grad.head0.jacobian", "grad.head0.row_dot", "grad.W_Q", "grad.X"})
    CHECK(std::find(ids.begin(), ids.end(), shown) != ids.end());
  // half_sq: the target drawn instead; a bad name refused.
  attn::ExerciseSpec half = spec;
  half.backward = "half_sq";
  attn::normalise_spec(half);
  const attn::Exercise h = attn::generate_exercise(half, {{}, "Ada", "ada"});
  REQUIRE(h.lesson.backward);
  CHECK(h.lesson.backward->target);
  CHECK(h.lesson_toml.find("loss = \"half_sq\"") != std::string::npos);
  half.backward = "sideways";
  CHECK_THROWS_AS(attn::normalise_spec(half), attn::InputError);
}
