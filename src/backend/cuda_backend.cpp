// The CUDA backend: the Backend interface over the CUDA plugin
// (cuda_plugin.hpp), which is found and opened with dlopen the first time it
// is asked for. Nothing here needs CUDA to compile or to run: where there is
// no plugin, no CUDA library or no device, make_cuda_backend says which.
#include "backend/cuda_backend.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "backend/cuda_plugin.hpp"
#include "backend/host_buffers.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/install_paths.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;
using cuda_plugin::Status;
using cuda_plugin::Table;

constexpr const char* use_cpu = N_("use --backend cpu");

// The plugin the user chose with $ATTN_CUDA_PLUGIN (a path to the file), if any.
std::optional<fs::path> chosen_plugin() {
  const char* chosen = std::getenv("ATTN_CUDA_PLUGIN");
  if (!chosen || !*chosen) return std::nullopt;
  return fs::path(chosen);
}

// Where the plugin may be, in order: the one chosen, else beside the running
// program (a build folder), and <prefix>/lib/attn-trace/ for a program
// installed in <prefix>/bin (cmake --install).
std::vector<fs::path> plugin_candidates(const std::optional<fs::path>& chosen) {
  if (chosen) return {*chosen};
  const std::optional<fs::path> folder = program_folder();
  if (!folder) return {};
  return {*folder / cuda_plugin::file_name,
          folder->parent_path() / "lib" / "attn-trace" / cuda_plugin::file_name};
}

// The plugin's table, opened once for the life of the process (never closed:
// the CUDA runtime does not expect to be unloaded).
const Table& load_plugin() {
  static const Table* loaded = nullptr;
  if (loaded) return *loaded;

  const std::optional<fs::path> chosen = chosen_plugin();
  const std::vector<fs::path> candidates = plugin_candidates(chosen);
  std::string looked;
  for (const fs::path& candidate : candidates) {
    std::error_code error;
    if (fs::exists(candidate, error)) {
      void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle)
        throw BackendUnavailable(tr_format(
            "the CUDA plugin {} could not be loaded: {} (it needs the CUDA runtime and cuBLAS of "
            "the CUDA toolkit it was built with); {}",
            candidate.string(), dlerror(), tr(use_cpu)));
      const auto entry =
          reinterpret_cast<attn_cuda_plugin_table_fn>(dlsym(handle, cuda_plugin::entry_symbol));
      if (!entry)
        throw BackendUnavailable(tr_format("{} is not an attn-trace CUDA plugin (it has no {}); {}",
                                           candidate.string(), cuda_plugin::entry_symbol,
                                           tr(use_cpu)));
      const Table* table = entry();
      if (table->abi_version != cuda_plugin::abi_version ||
          table->shape_size != sizeof(AttentionShape) ||
          table->buffers_size != sizeof(AttentionBuffers))
        throw BackendUnavailable(tr_format(
            "the CUDA plugin {} was built for another version of attn-trace (plugin interface {}, "
            "this program's {}): rebuild it with this program, or {}",
            candidate.string(), table->abi_version, cuda_plugin::abi_version, tr(use_cpu)));
      loaded = table;
      return *loaded;
    }
    looked += (looked.empty() ? "" : ", ") + candidate.string();
  }
  if (chosen)
    throw BackendUnavailable(tr_format(
        "no CUDA plugin: ATTN_CUDA_PLUGIN names {}, and there is no such file: correct or unset "
        "it (the program then looks beside itself), or {}",
        chosen->string(), tr(use_cpu)));
  throw BackendUnavailable(tr_format(
      looked.empty()
          ? N_("no CUDA plugin: the CUDA backend is a plugin, {0}, and none was found. This "
               "attn-trace was built without CUDA (configure with -DATTN_CUDA=ON where the CUDA "
               "toolkit is), or the plugin was not installed beside it; {1}")
          : N_("no CUDA plugin: the CUDA backend is a plugin, {0}, and none was found (looked for "
               "{2}). This attn-trace was built without CUDA (configure with -DATTN_CUDA=ON where "
               "the "
               "CUDA toolkit is), or the plugin was not installed beside it; {1}"),
      cuda_plugin::file_name, tr(use_cpu), looked));
}

// A failed call's status as the exception the rest of the program knows.
void check(const Table& plugin, Status status) {
  switch (status) {
    case Status::ok:
      return;
    case Status::out_of_memory:
      throw std::bad_alloc();
    case Status::unavailable:
      throw BackendUnavailable(plugin.last_error());
  }
  throw BackendUnavailable(
      tr_format("the CUDA plugin returned an unknown status {}", static_cast<int>(status)));
}

// A forward pass resident on the device.
class CudaForwardPlan final : public ForwardPlan {
 public:
  CudaForwardPlan(const Table& plugin, cuda_plugin::ForwardPlan* plan)
      : plugin_(plugin), plan_(plan) {}
  ~CudaForwardPlan() override { plugin_.destroy_plan(plan_); }
  CudaForwardPlan(const CudaForwardPlan&) = delete;
  CudaForwardPlan& operator=(const CudaForwardPlan&) = delete;

  void upload(const double* X) override { check(plugin_, plugin_.upload(plan_, X)); }
  void compute() override { check(plugin_, plugin_.compute(plan_)); }
  void download(double* output) override { check(plugin_, plugin_.download(plan_, output)); }
  std::size_t bytes() const override { return plugin_.bytes(plan_); }

 private:
  const Table& plugin_;
  cuda_plugin::ForwardPlan* plan_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const Table& plugin) : plugin_(plugin) {
    check(plugin_, plugin_.create_device(&device_));
  }
  ~CudaBackend() override { plugin_.destroy_device(device_); }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }

  // A:(n,k) B:(k,p) -> (n,p)
  arma::mat matmul(const arma::mat& A, const arma::mat& B) override {
    check_product(A, B);
    arma::mat C(A.n_rows, B.n_cols);
    check(plugin_, plugin_.matmul(device_, A.memptr(), B.memptr(), C.memptr(), A.n_rows, A.n_cols,
                                  B.n_cols));
    return C;
  }

  std::vector<HeadAttention> attend(const AttentionInput& in) override {
    StackedAttention stack(in);
    const AttentionShape shape = stack.shape();
    const AttentionBuffers buffers = stack.buffers();
    check(plugin_, plugin_.attend(device_, &shape, &buffers));
    return stack.heads();
  }

  // W_QKV:(d,3d) W_O:(d,d)
  std::unique_ptr<ForwardPlan> plan_forward(const ForwardShape& shape, const arma::mat& W_QKV,
                                            const arma::mat& W_O) override {
    check_forward_inputs(shape, W_QKV, W_O);
    cuda_plugin::ForwardPlan* plan = nullptr;
    check(plugin_, plugin_.plan_forward(device_, shape.n, shape.d_model, shape.heads,
                                        W_QKV.memptr(), W_O.memptr(), &plan));
    return std::make_unique<CudaForwardPlan>(plugin_, plan);
  }

 private:
  const Table& plugin_;
  cuda_plugin::Device* device_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  const Table& plugin = load_plugin();
  const std::string why = plugin.why_no_device();
  if (!why.empty()) throw BackendUnavailable(tr_format("no CUDA device: {}; {}", why, tr(use_cpu)));
  return std::make_unique<CudaBackend>(plugin);
}

}  // namespace attn
