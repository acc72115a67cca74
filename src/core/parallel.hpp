// Independent pieces of work, shared among the machine's cores.
#pragma once

#include <cstddef>
#include <functional>

namespace attn {

// The threads parallel_for runs on at most: the machine's cores (at least 1).
std::size_t parallel_threads();

// Calls work(i) for every i in [0, count), on up to as many threads as the
// machine has cores (the calling thread is one of them). Each i runs once; the
// order is not fixed, so work(i) must write only what belongs to i. After all
// have run, the exception of the lowest i that threw, if any, is rethrown. A
// thread that cannot be started (a memory cap) is done without: fewer share the work.
void parallel_for(std::size_t count, const std::function<void(std::size_t)>& work);

}  // namespace attn
