// The CUDA backend: the Backend interface over the device side (cuda_device.hpp).
#include "backend/cuda_backend.hpp"

#include <fmt/format.h>

#include "backend/cuda_device.hpp"
#include "backend/host_buffers.hpp"
#include "core/error.hpp"

namespace attn {

namespace {

// A forward pass resident on the device.
class CudaForwardPlan final : public ForwardPlan {
 public:
  explicit CudaForwardPlan(std::unique_ptr<cuda::DeviceForward> device)
      : device_(std::move(device)) {}
  void upload(const double* X) override { device_->upload(X); }
  void compute() override { device_->compute(); }
  void download(double* output) override { device_->download(output); }
  std::size_t bytes() const override { return device_->bytes(); }

 private:
  std::unique_ptr<cuda::DeviceForward> device_;
};

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }

  // A:(n,k) B:(k,p) -> (n,p)
  arma::mat matmul(const arma::mat& A, const arma::mat& B) override {
    check_product(A, B);
    arma::mat C(A.n_rows, B.n_cols);
    device_.matmul(A.memptr(), B.memptr(), C.memptr(), A.n_rows, A.n_cols, B.n_cols);
    return C;
  }

  std::vector<HeadAttention> attend(const AttentionInput& in) override {
    StackedAttention stack(in);
    device_.attend(stack.shape(), stack.buffers());
    return stack.heads();
  }

  // W_QKV:(d,3d) W_O:(d,d)
  std::unique_ptr<ForwardPlan> plan_forward(const ForwardShape& shape, const arma::mat& W_QKV,
                                            const arma::mat& W_O) override {
    check_forward_inputs(shape, W_QKV, W_O);
    return std::make_unique<CudaForwardPlan>(
        device_.plan_forward(shape.n, shape.d_model, shape.heads, W_QKV.memptr(), W_O.memptr()));
  }

 private:
  cuda::Device device_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  const std::string why = cuda::why_no_device();
  if (!why.empty())
    throw BackendUnavailable(fmt::format("no CUDA device: {}; use --backend cpu", why));
  return std::make_unique<CudaBackend>();
}

}  // namespace attn
