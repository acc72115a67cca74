// CLI11's own words in the terminal's language: the help formatter (labels,
// group headings, type names) and the parse errors, written again from the
// facts of CLI11's English sentence (docs/chinese.md).
#include "cli/cli_text.hpp"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/i18n.hpp"
#include "render/numbers.hpp"

namespace attn {

namespace {

// The words CLI11 puts into a help that xgettext must find: group headings
// and type names; each is shown through tr().
[[maybe_unused]] constexpr const char* kHelpWords[] = {
    N_("Options"),     N_("Positionals"), N_("Subcommands"), N_("OPTIONS"), N_("SUBCOMMAND"),
    N_("SUBCOMMANDS"), N_("TEXT"),        N_("INT"),         N_("UINT"),    N_("FLOAT"),
    N_("NUMBER"),      N_("NAME=VALUE"),  N_("ID"),          N_("UINT64"),  N_("DIR")};

// `text` split at each `separator`.
std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find(separator, start)) != std::string_view::npos;
       start = end + 1)
    parts.emplace_back(text.substr(start, end - start));
  parts.emplace_back(text.substr(start));
  return parts;
}

// An option's type as its help and errors show it. English: CLI11's own
// ("UINT:INT in [40 - 100000]"). Another language: the type's word, a range as
// "(40 to 100000)" after it, a set of choices ({text,json}) instead of it.
std::string type_text(const std::string& full) {
  if (language() == Language::en) return full;
  const std::vector<std::string> parts = split(full, ':');
  std::string shown(tr(parts.front()));
  static const std::regex range(R"(\S+ in \[(\S+) - (\S+)\])");
  for (std::size_t i = 1; i < parts.size(); ++i) {
    std::smatch m;
    if (parts[i].starts_with("{"))
      shown = parts[i];
    else if (std::regex_match(parts[i], m, range))
      shown = tr_format("{} from {} to {}", shown, m[1].str(), m[2].str());
    else
      shown = tr(parts[i]);
  }
  return shown;
}

// One line of a help's two columns, as CLI11's detail::format_help writes it
// but padded by display width: `left` in `width` columns (its own line when
// wider), then `description`, each of its lines under the first.
std::string help_line(const std::string& left, const std::string& description, std::size_t width) {
  std::string out = pad_right(left, width);
  if (!description.empty()) {
    if (display_width(left) >= width) out += "\n" + std::string(width, ' ');
    for (const char c : description) {
      out += c;
      if (c == '\n') out += std::string(width, ' ');
    }
  }
  return out + "\n";
}

// `opts`' names joined by spaces.
std::string option_names(const std::set<CLI::Option*>& opts) {
  std::string names;
  for (const CLI::Option* opt : opts) names += (names.empty() ? "" : " ") + opt->get_name();
  return names;
}

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_group(std::string group, bool is_positional,
                         std::vector<const CLI::Option*> opts) const override {
    std::string out = "\n" + tr_format("{}:", tr(group)) + "\n";
    for (const CLI::Option* opt : opts) out += make_option(opt, is_positional);
    return out;
  }

  std::string make_usage(const CLI::App* app, std::string name) const override {
    const std::string usage = Formatter::make_usage(app, std::move(name));
    constexpr std::string_view english = "Usage: ";
    return usage.starts_with(english) ? std::string(tr("Usage: ")) + usage.substr(english.size())
                                      : usage;
  }

  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode mode) const override;

  std::string make_subcommand(const CLI::App* sub) const override {
    return help_line("  " + sub->get_display_name(true), sub->get_description(), column_width_);
  }

  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    return help_line("  " + make_option_name(opt, is_positional) + make_option_opts(opt),
                     make_option_desc(opt), column_width_);
  }

  std::string make_option_opts(const CLI::Option* opt) const override;
};

// The named subcommands under their group's heading, groups in the order
// first seen (CLI11's make_subcommands, with the heading translated).
std::string HelpFormatter::make_subcommands(const CLI::App* app, CLI::AppFormatMode mode) const {
  std::vector<std::string> groups;
  for (const CLI::App* sub : app->get_subcommands({}))
    if (!sub->get_name().empty() && !sub->get_group().empty() &&
        std::find(groups.begin(), groups.end(), sub->get_group()) == groups.end())
      groups.push_back(sub->get_group());
  std::string out;
  for (const std::string& group : groups) {
    out += "\n" + tr_format("{}:", tr(group)) + "\n";
    for (const CLI::App* sub : app->get_subcommands({})) {
      if (sub->get_name().empty() || sub->get_group() != group) continue;
      out += mode == CLI::AppFormatMode::All
                 ? sub->help(sub->get_name(), CLI::AppFormatMode::Sub) + "\n"
                 : make_subcommand(sub);
    }
  }
  return out;
}

// What follows an option's name: its type, "...", REQUIRED, the options it
// needs or excludes (CLI11's make_option_opts, in language()).
std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
  std::string out;
  if (opt->get_type_size() != 0) {
    if (!opt->get_type_name().empty()) out += " " + type_text(opt->get_type_name());
    if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size)
      out += " ...";
    else if (opt->get_expected_min() > 1)
      out += fmt::format(" x {}", opt->get_expected());
    if (opt->get_required()) out += " " + std::string(tr("REQUIRED"));
  }
  if (const std::set<CLI::Option*> needs = opt->get_needs(); !needs.empty())
    out += " " + tr_format("Needs: {}", option_names(needs));
  if (const std::set<CLI::Option*> excludes = opt->get_excludes(); !excludes.empty())
    out += " " + tr_format("Excludes: {}", option_names(excludes));
  return out;
}

// One sentence CLI11 writes for a parse error: the pattern that reads its
// facts back, the msgid that writes them again (CLI11's English word for
// word), and which fact, if any, is an option's type (shown with type_text).
struct Sentence {
  const char* pattern;
  const char* msgid;
  int type_at = -1;
};

// CLI11 2.x's sentences (CLI/Error.hpp, CLI/Validators.hpp), the specific ones first.
const Sentence kSentences[] = {
    {R"(A subcommand is required)", N_("A subcommand is required")},
    {R"(The following argument was not expected: ([\s\S]*))",
     N_("The following argument was not expected: {}")},
    {R"(The following arguments were not expected: ([\s\S]*))",
     N_("The following arguments were not expected: {}")},
    {R"((\S+) is required)", N_("{} is required")},
    {R"((\S+): Value ([\s\S]*) not in range (\S+) to (\S+))",
     N_("{}: Value {} not in range {} to {}")},
    {R"((\S+): ([\s\S]*) not in (\{[\s\S]*\}))", N_("{}: {} not in {}")},
    {R"((\S+): (\d+) required ([\s\S]+) missing)", N_("{}: {} required {} missing"), 2},
    {R"(Could not convert: (\S+) = ([\s\S]*))", N_("Could not convert: {} = {}")},
    {R"((\S+): too many inputs for a flag)", N_("{}: too many inputs for a flag")},
    {R"((\S+): Should be true/false or a number)", N_("{}: Should be true/false or a number")},
    {R"((\S+): At least (\d+) required but received (\d+))",
     N_("{}: At least {} required but received {}")},
    {R"((\S+): At Most (\d+) required but received (\d+))",
     N_("{}: At Most {} required but received {}")},
    {R"(Expected exactly (\d+) arguments to (\S+), got (\d+))",
     N_("Expected exactly {} arguments to {}, got {}")},
    {R"(Expected at least (\d+) arguments to (\S+), got (\d+))",
     N_("Expected at least {} arguments to {}, got {}")},
    {R"((\S+) excludes (\S+))", N_("{} excludes {}")},
    {R"((\S+) requires (\S+))", N_("{} requires {}")},
};

// `sentence`'s msgid in language() with the facts `m` read.
std::string written_again(const Sentence& sentence, const std::smatch& m) {
  fmt::dynamic_format_arg_store<fmt::format_context> facts;
  for (std::size_t i = 1; i < m.size(); ++i)
    facts.push_back(static_cast<int>(i) - 1 == sentence.type_at ? type_text(m[i].str())
                                                                : m[i].str());
  return fmt::vformat(tr(sentence.msgid), facts);
}

}  // namespace

std::shared_ptr<CLI::Formatter> help_formatter() {
  auto formatter = std::make_shared<HelpFormatter>();
  for (const char* label : {"OPTIONS", "SUBCOMMAND", "SUBCOMMANDS"})
    formatter->label(label, std::string(tr(label)));
  return formatter;
}

std::string parse_error_message(const CLI::ParseError& error) {
  const std::string message = error.what();
  std::smatch m;
  for (const Sentence& sentence : kSentences)
    if (std::regex_match(message, m, std::regex(sentence.pattern)))
      return written_again(sentence, m);
  // A validator's own message after the option's name (exercise's --seed).
  static const std::regex named(R"((\S+): ([\s\S]*))");
  if (dynamic_cast<const CLI::ValidationError*>(&error) && std::regex_match(message, m, named))
    return tr_format("{}: {}", m[1].str(), m[2].str());
  return message;
}

}  // namespace attn
