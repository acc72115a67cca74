// The practice page's engine: see engine.hpp.
#include "web/engine.hpp"

namespace attn {

std::string practice_json(const PracticeRequest& /*request*/) { return R"({"ok": false, "error": "not yet"})"; }

std::string explore_json(const ExploreRequest& /*request*/) { return R"({"ok": false, "error": "not yet"})"; }

}  // namespace attn
