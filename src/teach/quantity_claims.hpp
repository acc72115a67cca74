// Shape and quantity claims (a step's shape, bytes, FLOPs, a sampled
// statistic of q·k) against the trace and the sampler: the part of the errata
// report that is about sizes and costs, not values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/i18n.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

struct QuantityVerdict {
  QuantityClaim claim;
  std::string place;     // "head0.scores shape", "whole pass bytes", "q·k std (unit_length)"
  std::string place_zh;  // the same in Simplified Chinese (text under --lang zh)
  std::string stated;    // "[64, 64]", "16 MiB", "0.125"
  std::string computed;  // as stated is written: "[5, 7]", "16 MiB", "0.1249"
  std::string computed_number;  // the other kinds: the number of `computed` without its unit
  std::vector<std::size_t> computed_shape;  // shape claims
  std::optional<double> computed_value;     // the other kinds, in the claim's unit, exact
  double tolerance = 0.0;                   // the other kinds: what `agrees` allowed
  bool agrees = false;
  std::string details;     // how the computed value is made up (always given); English (JSON)
  std::string details_zh;  // the same in Simplified Chinese
  const std::string& place_in(Language lang) const {
    return lang == Language::zh ? place_zh : place;
  }
  const std::string& details_in(Language lang) const {
    return lang == Language::zh ? details_zh : details;
  }
};

// Every quantity claim of `lesson`. A claim on a step the trace lacks is an
// InputError naming the lesson file, the claim's key and line.
std::vector<QuantityVerdict> check_quantity_claims(const Lesson& lesson, const Trace& trace);

// The report lines of check (text, in language(), no line wider than `width`)
// and the JSON array's objects (docs/json.md).
std::string quantity_claims_text(const std::vector<QuantityVerdict>& verdicts, std::size_t width);
std::string quantity_claim_json(const QuantityVerdict& verdict);

}  // namespace attn
