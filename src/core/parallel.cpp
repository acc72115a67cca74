// parallel_for: a shared counter handing out indices to a few threads.
#include "core/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace attn {

std::size_t parallel_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t count, const std::function<void(std::size_t)>& work) {
  std::vector<std::exception_ptr> failed(count);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        work(i);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  const std::size_t threads = std::min(count, parallel_threads());
  std::vector<std::thread> helpers;
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no thread to be had (a memory cap, a thread limit): those running share the rest
    }
  }
  worker();
  for (std::thread& t : helpers) t.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace attn
