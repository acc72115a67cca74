// The CUDA side of the CUDA backend: device buffers, cuBLAS products over the
// heads, and the kernels of the elementwise and row steps, which run the row
// functions of attention_rows.hpp one thread per cell or row. IEEE double
// throughout; built without fast math and with -fmad=false (CMakeLists.txt).
//
// Shape key: n queries, m keys, h heads, d_k, d_v per-head widths, d model width.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <string>
#include <utility>

#include "backend/cuda_device.hpp"
#include "core/error.hpp"

namespace attn::cuda {

namespace {

[[noreturn]] void fail(const char* file, int line, const char* call, const char* why) {
  throw BackendUnavailable(std::string("CUDA call failed at ") + file + ":" + std::to_string(line) +
                           ": " + call + ": " + why);
}

void check(cudaError_t status, const char* file, int line, const char* call) {
  if (status != cudaSuccess) fail(file, line, call, cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* file, int line, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) fail(file, line, call, cublasGetStatusString(status));
}

}  // namespace

// Every CUDA runtime and cuBLAS call goes through this: a failure throws
// BackendUnavailable naming this file, the line and the call.
#define CUDA_CHECK(call) check((call), __FILE__, __LINE__, #call)

struct Context {
  cublasHandle_t handle = nullptr;
  Context() { CUDA_CHECK(cublasCreate(&handle)); }
  // A destructor cannot throw: a failure here follows one already reported.
  ~Context() { static_cast<void>(cublasDestroy(handle)); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

namespace {

// `count` values of T in device memory, freed with it.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : count_(count) {
    if (count_) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~DeviceArray() {
    if (data_) static_cast<void>(cudaFree(data_));  // a failure here follows one already reported
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return data_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  void upload(const T* host) {
    if (count_) CUDA_CHECK(cudaMemcpy(data_, host, bytes(), cudaMemcpyHostToDevice));
  }
  void download(T* host) const {
    if (count_) CUDA_CHECK(cudaMemcpy(host, data_, bytes(), cudaMemcpyDeviceToHost));
  }

 private:
  std::size_t count_;
  T* data_ = nullptr;
};

// cuBLAS counts in int.
int blas_int(std::size_t value) {
  if (value > static_cast<std::size_t>(INT_MAX))
    throw BackendUnavailable("a matrix dimension of " + std::to_string(value) +
                             " is too large for cuBLAS (at most " + std::to_string(INT_MAX) + ")");
  return static_cast<int>(value);
}

// C_b = A_b·op(B_b) for every b (attention_layout.hpp), device pointers.
void run_product(cublasHandle_t handle, const BatchedProduct& p, const double* A, const double* B,
                 double* C) {
  if (p.rows == 0 || p.cols == 0 || p.batch == 0) return;
  if (p.inner == 0) {  // an empty sum: zeros (cuBLAS would leave C as it is)
    CUDA_CHECK(cudaMemset(
        C, 0, p.stride_c * (p.batch - 1) * sizeof(double) + p.ldc * p.cols * sizeof(double)));
    return;
  }
  const double one = 1.0, zero = 0.0;
  const cublasOperation_t op_b = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (p.batch == 1) {
    CUDA_CHECK(cublasDgemm(handle, CUBLAS_OP_N, op_b, blas_int(p.rows), blas_int(p.cols),
                           blas_int(p.inner), &one, A, blas_int(p.lda), B, blas_int(p.ldb), &zero,
                           C, blas_int(p.ldc)));
    return;
  }
  CUDA_CHECK(cublasDgemmStridedBatched(
      handle, CUBLAS_OP_N, op_b, blas_int(p.rows), blas_int(p.cols), blas_int(p.inner), &one, A,
      blas_int(p.lda), static_cast<long long>(p.stride_a), B, blas_int(p.ldb),
      static_cast<long long>(p.stride_b), &zero, C, blas_int(p.ldc),
      static_cast<long long>(p.stride_c), blas_int(p.batch)));
}

constexpr unsigned kThreads = 256;

// The cell or row of this thread.
__device__ std::size_t device_thread_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// h·n·m cells: scaled, masked, exp from scores
__global__ void scale_mask_exp_kernel(rows::AttentionSteps steps, std::size_t cells) {
  const std::size_t c = device_thread_index();
  if (c < cells) rows::scale_mask_exp_cell(steps, c);
}

// h·n rows: row_sum and weights
__global__ void weights_kernel(rows::AttentionSteps steps, std::size_t row_count) {
  const std::size_t r = device_thread_index();
  if (r < row_count) rows::weights_row(steps, r);
}

// h·n rows of h stacked (n,m) scores, in place: softmax(scores / divisor)
__global__ void scaled_softmax_kernel(double* scores, std::size_t n, std::size_t m, double divisor,
                                      std::size_t row_count) {
  const std::size_t r = device_thread_index();
  if (r < row_count) rows::scaled_softmax_row(scores, n, m, divisor, r);
}

// Blocks of kThreads threads covering `count` items.
unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > static_cast<std::size_t>(INT_MAX))
    throw BackendUnavailable("too many cells for one kernel launch: " + std::to_string(count));
  return static_cast<unsigned>(blocks);
}

}  // namespace

std::string why_no_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return cudaGetErrorString(status);
  if (count == 0) return "the driver reports no CUDA-capable device";
  return "";
}

Device::Device() : context_(std::make_shared<Context>()) {}

Device::~Device() = default;

// A:(n,k) B:(k,p) -> C:(n,p)
void Device::matmul(const double* A, const double* B, double* C, std::size_t n, std::size_t k,
                    std::size_t p) {
  DeviceArray<double> dA(n * k), dB(k * p), dC(n * p);
  dA.upload(A);
  dB.upload(B);
  run_product(context_->handle, plain_product(n, k, p), dA.get(), dB.get(), dC.get());
  dC.download(C);
}

void Device::attend(const AttentionShape& s, const AttentionBuffers& host) {
  const std::size_t n = s.n, m = s.m, h = s.heads, cells = h * n * m, row_count = h * n;
  // 1. Upload Q:(n,h·d_k) K:(m,h·d_k) V:(m,h·d_v) and the mask:(n,m), once.
  DeviceArray<double> Q(n * h * s.d_k), K(m * h * s.d_k), V(m * h * s.d_v);
  DeviceArray<unsigned char> mask(n * m);
  Q.upload(host.Q);
  K.upload(host.K);
  V.upload(host.V);
  mask.upload(host.steps.mask);
  DeviceArray<double> scores(cells), scaled(cells), masked(cells), exp(cells), weights(cells);
  DeviceArray<double> row_sum(row_count), context(n * h * s.d_v);
  rows::AttentionSteps steps = host.steps;
  steps.mask = mask.get();
  steps.scores = scores.get();
  steps.scaled = scaled.get();
  steps.masked = masked.get();
  steps.exp = exp.get();
  steps.row_sum = row_sum.get();
  steps.weights = weights.get();
  // 2. scores_b = Q_b·K_bᵀ for every head b: h × (n,m)
  run_product(context_->handle, scores_product(s), Q.get(), K.get(), scores.get());
  // 3. scaled = scores / divisor, masked (fill where masked), exp(masked): cell by cell
  if (cells != 0) {
    scale_mask_exp_kernel<<<blocks_for(cells), kThreads>>>(steps, cells);
    CUDA_CHECK(cudaGetLastError());
  }
  // 4. row_sum of exp, weights = stable softmax of masked with the policy: row by row
  if (row_count != 0 && m != 0) {
    weights_kernel<<<blocks_for(row_count), kThreads>>>(steps, row_count);
    CUDA_CHECK(cudaGetLastError());
  }
  // 5. context_b = weights_b·V_b, written side by side: (n,h·d_v)
  run_product(context_->handle, context_product(s), weights.get(), V.get(), context.get());
  // 6. Every step back to the host, once (cudaMemcpy waits for the work above).
  scores.download(host.steps.scores);
  scaled.download(host.steps.scaled);
  masked.download(host.steps.masked);
  exp.download(host.steps.exp);
  row_sum.download(host.steps.row_sum);
  weights.download(host.steps.weights);
  context.download(host.context);
}

std::unique_ptr<DeviceForward> Device::plan_forward(std::size_t n, std::size_t d, std::size_t heads,
                                                    const double* W_QKV, const double* W_O) {
  return std::make_unique<DeviceForward>(context_, ForwardLayout(n, d, heads), d, W_QKV, W_O);
}

// Every buffer of a forward pass, allocated once.
struct DeviceForward::Buffers {
  Buffers(std::size_t n, std::size_t d, std::size_t heads)
      : W_QKV(d * 3 * d),
        W_O(d * d),
        X(n * d),
        QKV(n * 3 * d),
        scores(heads * n * n),
        concat(n * d),
        output(n * d) {}
  DeviceArray<double> W_QKV;   // (d,3d)
  DeviceArray<double> W_O;     // (d,d)
  DeviceArray<double> X;       // (n,d)
  DeviceArray<double> QKV;     // (n,3d): [Q | K | V]
  DeviceArray<double> scores;  // h × (n,n), the weights in place
  DeviceArray<double> concat;  // (n,d): the heads' contexts side by side
  DeviceArray<double> output;  // (n,d)
};

DeviceForward::DeviceForward(std::shared_ptr<Context> context, const ForwardLayout& layout,
                             std::size_t d, const double* W_QKV, const double* W_O)
    : context_(std::move(context)),
      layout_(layout),
      buffers_(std::make_unique<Buffers>(layout.attention.n, d, layout.attention.heads)) {
  buffers_->W_QKV.upload(W_QKV);
  buffers_->W_O.upload(W_O);
  CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceForward::~DeviceForward() = default;

void DeviceForward::upload(const double* X) {
  buffers_->X.upload(X);
}

void DeviceForward::compute() {
  Buffers& b = *buffers_;
  const ForwardLayout& L = layout_;
  const cublasHandle_t handle = context_->handle;
  const std::size_t n = L.attention.n, rows = L.attention.heads * n;
  // 1. [Q | K | V] = X·W_QKV
  run_product(handle, L.qkv, b.X.get(), b.W_QKV.get(), b.QKV.get());
  // 2. scores_b = Q_b·K_bᵀ
  run_product(handle, L.scores, b.QKV.get(), b.QKV.get() + L.k_offset, b.scores.get());
  // 3. weights = softmax(scores / √(d/h)), row by row, in place
  if (rows != 0) {
    scaled_softmax_kernel<<<blocks_for(rows), kThreads>>>(b.scores.get(), n, n, L.divisor, rows);
    CUDA_CHECK(cudaGetLastError());
  }
  // 4. concat = [weights_0·V_0 | weights_1·V_1 | ...]
  run_product(handle, L.context, b.scores.get(), b.QKV.get() + L.v_offset, b.concat.get());
  // 5. output = concat·W_O
  run_product(handle, L.output, b.concat.get(), b.W_O.get(), b.output.get());
  CUDA_CHECK(cudaDeviceSynchronize());
}

void DeviceForward::download(double* output) {
  buffers_->output.download(output);
}

std::size_t DeviceForward::bytes() const {
  const Buffers& b = *buffers_;
  return b.W_QKV.bytes() + b.W_O.bytes() + b.X.bytes() + b.QKV.bytes() + b.scores.bytes() +
         b.concat.bytes() + b.output.bytes();
}

}  // namespace attn::cuda
