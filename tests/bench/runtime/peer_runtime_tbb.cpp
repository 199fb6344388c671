// SPDX-License-Identifier: MIT
// The oneTBB side of bench_runtime_sched: the same three workloads written
// with oneTBB, run by the driver in the same invocation.
//   loop N   one producer calls task_group::run N times (empty bodies), then wait
//   pfor N   tbb::parallel_for over a blocked_range of N empty iterations
//   fib K    recursive fork-join fib(K): both children via task_group::run, then wait
//   chain N  N flow-graph continue_nodes in a line, each firing the next; the
//            graph is built and run inside the timing, destroyed outside it
// Threads: tbb::global_control max_allowed_parallelism (the calling thread
// takes part, as in every oneTBB program).  Prints `ns_per_task: MEDIAN`
// over REPS runs after one warm-up run, then min and max.
//   usage: peer_runtime_tbb {loop|pfor|fib|chain} N THREADS REPS
#include <tbb/blocked_range.h>
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_group.h>
#include <tbb/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "empty_range.h"

namespace
{

double
now()
{
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

void
pfor_loop(long n)
{
    tbb::parallel_for(tbb::blocked_range<long>(0, n), [](const tbb::blocked_range<long> &r) {
        sl_bench_empty_range(r.begin(), r.end());
    });
}

void
loop_tasks(long n)
{
    tbb::task_group tg;
    for (long i = 0; i < n; i++)
        tg.run([] { __asm__ volatile(""); });
    tg.wait();
}

long
fib(int n)
{
    if (n < 2)
        return n;
    long x = 0, y = 0;
    tbb::task_group g;
    g.run([&] { x = fib(n - 1); });
    g.run([&] { y = fib(n - 2); });
    g.wait();
    return x + y;
}

long
fib_serial(int n)
{
    return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

using node_t = tbb::flow::continue_node<tbb::flow::continue_msg>;

// Returns the seconds spent building and running; destruction is outside.
double
chain_tasks(long n)
{
    double t0 = now();
    auto g = std::make_unique<tbb::flow::graph>();
    std::vector<std::unique_ptr<node_t>> nodes;
    nodes.reserve(static_cast<size_t>(n));
    for (long i = 0; i < n; i++) {
        nodes.emplace_back(
            new node_t(*g, [](const tbb::flow::continue_msg &) { __asm__ volatile(""); }));
        if (i > 0)
            tbb::flow::make_edge(*nodes[static_cast<size_t>(i - 1)],
                                 *nodes[static_cast<size_t>(i)]);
    }
    nodes[0]->try_put(tbb::flow::continue_msg());
    g->wait_for_all();
    double t = now() - t0;
    nodes.clear();
    return t;
}

} // namespace

int
main(int argc, char **argv)
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s {loop|pfor|fib|chain} N THREADS REPS\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long n = std::atol(argv[2]);
    int threads = std::atoi(argv[3]);
    int reps = std::atoi(argv[4]);
    if (n <= 0 || threads <= 0 || reps <= 0)
        return 2;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                           static_cast<size_t>(threads));
    bool is_fib = std::strcmp(mode, "fib") == 0;
    long n_tasks = is_fib ? 2 * fib_serial(static_cast<int>(n) + 1) - 2 : n;
    std::vector<double> t;
    for (int r = -1; r < reps; r++) { // r = -1: warm-up (workers start)
        double t0 = now(), dt;
        if (std::strcmp(mode, "loop") == 0) {
            loop_tasks(n);
        } else if (std::strcmp(mode, "pfor") == 0) {
            pfor_loop(n);
            dt = now() - t0;
        } else if (is_fib) {
            if (fib(static_cast<int>(n)) != fib_serial(static_cast<int>(n))) {
                std::fprintf(stderr, "fib mismatch\n");
                return 1;
            }
            dt = now() - t0;
        } else if (std::strcmp(mode, "chain") == 0) {
            dt = chain_tasks(n);
        } else {
            std::fprintf(stderr, "unknown mode %s\n", mode);
            return 2;
        }
        if (r >= 0)
            t.push_back(dt);
    }
    std::sort(t.begin(), t.end());
    double scale = 1e9 / static_cast<double>(n_tasks);
    std::printf("ns_per_task: %.3f min %.3f max %.3f (oneTBB %d.%d, %d threads)\n",
                t[t.size() / 2] * scale, t.front() * scale, t.back() * scale, TBB_VERSION_MAJOR,
                TBB_VERSION_MINOR, threads);
    return 0;
}
