// CLI11's own words in the terminal's language (docs/chinese.md): the help
// formatter every command's --help goes through, and a parse error's message
// written again from its facts.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace attn {

// CLI11's formatter with its labels (Usage, Options, REQUIRED, Excludes, …),
// group headings and type names (TEXT, INT, UINT in [40 - 100000], …) in
// language(), and its columns padded by display width, so that Chinese in the
// left column keeps the descriptions aligned. In English its help is CLI11's.
std::shared_ptr<CLI::Formatter> help_formatter();

// `error`'s message in language(): CLI11's English sentence read back into its
// facts (the option, the value, the range or the choices) and written with
// tr_format, so that English is CLI11's own sentence; one it does not know is
// returned as CLI11 wrote it.
std::string parse_error_message(const CLI::ParseError& error);

}  // namespace attn
