# The sources of the layers that both builds compile: the native libraries
# (CMakeLists.txt) and the practice page's WebAssembly engine (wasm/, through
# cmake/wasm.cmake). Paths are relative to the project's root; each list is
# written once here, so a new file is compiled by both builds.

# toml++ compiled once (attn_toml natively; wasm/ with TOML_FLOAT_CHARCONV=0).
set(ATTN_TOML_SOURCES src/core/toml_impl.cpp)

# core: lesson model, pipeline, trace (and the reference backend). The embedded
# lessons and the zh catalog are generated files of the native build, added
# where the lists are used (ATTN_EMBEDDED_CPP, ATTN_CATALOG_CPP).
set(ATTN_CORE_SOURCES
  src/core/atomic_file.cpp src/core/bounds.cpp src/core/cell_arithmetic.cpp src/core/costs.cpp
  src/core/dtype.cpp src/core/format_arithmetic.cpp src/core/i18n.cpp src/core/arithmetic.cpp
  src/core/limits.cpp src/core/attention.cpp
  src/core/expand.cpp src/core/ops/op_table.cpp src/core/ops/inputs.cpp src/core/ops/positional.cpp
  src/core/ops/products.cpp src/core/ops/heads.cpp src/core/ops/masks.cpp src/core/ops/softmax.cpp
  src/core/ops/layer_norm.cpp src/core/ops/ffn.cpp src/core/ops/decoding.cpp
  src/core/ops/positions_rope_alibi.cpp
  src/core/ops/tiles.cpp src/core/ops/linear.cpp
  src/core/ops/backward.cpp src/core/backward.cpp
  src/core/step_id.cpp
  src/core/folder_lock.cpp
  src/core/golden.cpp src/core/install_paths.cpp src/core/lesson.cpp src/core/lesson_library.cpp
  src/core/number_text.cpp src/core/parallel.cpp src/core/pipeline.cpp src/core/quantity_claim.cpp
  src/core/toml_read.cpp src/core/trace.cpp
  src/core/read_input.cpp src/core/reference_backend.cpp src/core/toml_prescan.cpp
  src/core/mask_pattern.cpp src/core/mask_pattern_read.cpp)

set(ATTN_RENDER_SOURCES
  src/render/escape.cpp src/render/expansion.cpp src/render/formula.cpp
  src/render/formula_backward.cpp src/render/heatmap.cpp
  src/render/html.cpp src/render/json.cpp
  src/render/json_writer.cpp src/render/latex.cpp src/render/svg.cpp src/render/markdown.cpp
  src/render/line_break.cpp src/render/numbers.cpp src/render/pytorch.cpp src/render/select.cpp src/render/text.cpp
  src/render/text_matrix.cpp)

set(ATTN_TEACH_SOURCES
  src/teach/answer_template.cpp src/teach/answers.cpp src/teach/answers_csv.cpp src/teach/check.cpp
  src/teach/diagnose.cpp src/teach/errata.cpp src/teach/exercise.cpp
  src/teach/exercise_sheets.cpp src/teach/fingerprint.cpp src/teach/mark.cpp
  src/teach/moodle.cpp src/teach/names.cpp src/teach/practice.cpp src/teach/qk_stats.cpp
  src/teach/quantity_claims.cpp src/teach/softmax_grad_stats.cpp
  src/teach/stack_grad.cpp
  src/teach/sheet_html.cpp
  src/teach/sheet_latex.cpp src/teach/sheet_markdown.cpp src/teach/slips.cpp
  src/teach/typed_number.cpp src/teach/verify.cpp src/teach/verify_report.cpp)

# web: the practice page's engine (src/web/engine.hpp), natively the library
# attn_web; wasm/ adds its WebAssembly entry points, src/web/wasm_main.cpp.
set(ATTN_WEB_SOURCES src/web/engine.cpp)

# What the WebAssembly engine leaves out of the lists above, and why:
#   names.cpp     needs utf8proc, which has no WebAssembly build (student names:
#                 exercise sheets and class marking, not practice)
#   answers_csv.cpp  the class spreadsheet (mark --answers), not practice
#   exercise.cpp, mark.cpp  include backend/ (make_backend("cpu")): there is no
#                 backend layer in the engine, which computes with
#                 core/reference_backend.hpp; they write and mark a class's
#                 sheets, which the page does not do
#   line_break.cpp  needs libunibreak, which has no WebAssembly build; the page
#                 lets the browser break its lines, and no text the engine
#                 returns is wrapped to a terminal's width
set(ATTN_WASM_LEFT_OUT src/teach/names.cpp src/teach/answers_csv.cpp src/teach/exercise.cpp src/teach/mark.cpp
    src/render/line_break.cpp)
