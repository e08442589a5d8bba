// quiver bench --distributed (dist_bench.h). Compiled into every build; the MPI part only where the tool
// links libquiver_mpi (QUIVER_TOOL_MPI, set by tools/CMakeLists.txt when QUIVER_WITH_MPI).
#include "dist_bench.h"

#include "errors.h"

#ifdef QUIVER_TOOL_MPI
#include <mpi.h>
#include <quiver/quiver_mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <thread>

#include "dataset.h"
#include "eval.h"
#include "machine.h"
#include "matrix.h"
#include "progress.h"
#include "timing.h"
#endif

namespace qvtool {

#ifndef QUIVER_TOOL_MPI

static const char kNoMpi[] =
    "--distributed: this quiver was built without MPI (QUIVER_MPI); install MPI (libopenmpi-dev "
    "openmpi-bin) and rebuild, e.g. with cmake -DQUIVER_MPI=ON";

void require_distributed() { throw UsageError(kNoMpi); }

int run_dist_bench(const DistBenchConfig &) { throw UsageError(kNoMpi); }

#else

void require_distributed() {}

namespace {

constexpr int kRoot = 0;
// The library's wait for the other ranks in one collective step (qv_dist_options_t.timeout_ms; its
// default is one minute). Training learns the model on rank 0 while the others wait for it, which on a
// large sample takes far longer: a benchmark waits up to an hour before calling a rank lost.
constexpr int kDistTimeoutMs = 3600 * 1000;

// A failure the root reports for this rank (a distributed call's error, or another rank's failure in a
// local step): this rank leaves quietly with exit code 1.
struct ReportedByRoot {};

// MPI for the run: initialised here unless the process already did, finalised here if so.
class MpiSession {
 public:
  MpiSession() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;  // the level qv_dist_comm_world asks for: one MPI call at a time per process
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        throw Failure("--distributed: MPI_Init_thread failed");
      owned_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (owned_ && !finalised) MPI_Finalize();
  }
  MpiSession(const MpiSession &) = delete;
  MpiSession &operator=(const MpiSession &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == kRoot; }

 private:
  bool owned_ = false;
  int rank_ = 0, size_ = 1;
};

// The lowest rank whose `ok` is false, or -1 when every rank succeeded. Waits politely (polling with
// sleeps, not MPI's busy wait): the ranks done first leave the cores to the root computing the ground
// truth.
int lowest_failed_rank(const MpiSession &mpi, bool ok) {
  int mine = ok ? INT_MAX : mpi.rank(), lowest = INT_MAX;
  MPI_Request request;
  MPI_Iallreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &request);
  for (;;) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return lowest == INT_MAX ? -1 : lowest;
}

// Runs a step of local work (no collective calls inside) on every rank, then agrees on its outcome so
// no rank goes on into the collective calls alone. A failure is reported by the root, with the failing
// rank's message (the lowest failing rank's, sent to the root); bad usage keeps exit code 2.
template <typename F>
void local_step(const MpiSession &mpi, F &&work) {
  std::exception_ptr error;
  try {
    work();
  } catch (...) {
    error = std::current_exception();
  }
  const int failed = lowest_failed_rank(mpi, !error);
  if (failed < 0) return;
  if (failed == kRoot) {
    if (mpi.root()) std::rethrow_exception(error);
    throw ReportedByRoot{};
  }
  // [usage flag, message length] then the message, from the failing rank to the root.
  constexpr int kTag = 7071;
  if (mpi.rank() == failed) {
    int usage = 0;
    std::string message;
    try {
      std::rethrow_exception(error);
    } catch (const UsageError &e) {
      usage = 1, message = e.what();
    } catch (const std::exception &e) {
      message = e.what();
    } catch (...) {
      message = "unknown error";
    }
    int head[2] = {usage, int(message.size())};
    MPI_Send(head, 2, MPI_INT, kRoot, kTag, MPI_COMM_WORLD);
    MPI_Send(message.data(), head[1], MPI_CHAR, kRoot, kTag, MPI_COMM_WORLD);
  } else if (mpi.root()) {
    int head[2] = {0, 0};
    MPI_Recv(head, 2, MPI_INT, failed, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::string message(size_t(head[1]), '\0');
    MPI_Recv(message.data(), head[1], MPI_CHAR, failed, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    message = "rank " + std::to_string(failed) + ": " + message;
    if (head[0]) throw UsageError(message);
    throw Failure(message);
  }
  throw ReportedByRoot{};
}

// Throws unless a qv_dist_* call succeeded. Every rank gets an error when any rank fails (the others
// QV_ERR_REMOTE with the failing rank's message), so the root reports it and the rest leave quietly.
void dist_check(const MpiSession &mpi, qv_status_t status, const std::string &what) {
  if (status == QV_OK) return;
  const std::string message = qv_dist_last_error_message();  // copied before any other call
  if (!mpi.root()) throw ReportedByRoot{};
  throw Failure(what + ": " + qv_status_string(status) + (message.empty() ? "" : ": " + message));
}

// Every rank's string (at most 255 bytes each), gathered on the root; empty elsewhere.
std::vector<std::string> gather_strings(const MpiSession &mpi, const std::string &mine) {
  constexpr int kWidth = 256;
  char buf[kWidth] = {};
  std::strncpy(buf, mine.c_str(), kWidth - 1);
  std::vector<char> all(mpi.root() ? size_t(kWidth) * size_t(mpi.size()) : 0);
  MPI_Gather(buf, kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, kRoot, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; mpi.root() && r < mpi.size(); ++r) out.emplace_back(all.data() + size_t(r) * kWidth);
  return out;
}

// "node1 x4, node2 x4": the distinct values in order of first appearance, with their counts.
std::string tally(const std::vector<std::string> &values) {
  std::vector<std::string> order;
  std::map<std::string, int> count;
  for (const std::string &v : values)
    if (count[v]++ == 0) order.push_back(v);
  std::string out;
  for (const std::string &v : order) out += (out.empty() ? "" : ", ") + v + " x" + std::to_string(count[v]);
  return out;
}

// Rows [r * total / P, (r + 1) * total / P): rank r's contiguous slice.
struct Slice {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};
Slice slice_of(int64_t total, const MpiSession &mpi) {
  return {total * mpi.rank() / mpi.size(), total * (mpi.rank() + 1) / mpi.size()};
}

// A fingerprint of rows [begin, end) of m (FNV-1a over their bytes, 8 at a time): every rank's slice is
// checked against the root's copy of the data set, whose ground truth scores the answers.
uint64_t fingerprint(const FloatMatrix &m, Slice rows) {
  const auto *p = reinterpret_cast<const unsigned char *>(m.row(rows.begin));
  const size_t bytes = size_t(rows.size() * m.cols) * sizeof(float);
  uint64_t h = 14695981039346656037ull;
  size_t i = 0;
  for (uint64_t word; i + 8 <= bytes; i += 8) {
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * 1099511628211ull;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

class DistIndex {
 public:
  DistIndex() = default;
  ~DistIndex() { qv_dist_index_free(index_); }  // collective, like every qv_dist_* call
  DistIndex(const DistIndex &) = delete;
  DistIndex &operator=(const DistIndex &) = delete;
  qv_dist_index_t *get() const { return index_; }
  qv_dist_index_t **out() { return &index_; }

 private:
  qv_dist_index_t *index_ = nullptr;
};

// The table's first column, as bench's.
int index_width(const BenchSetup &s) { return std::max(20, int(s.descriptor.size())); }

// "1000" when every rank holds as many vectors, else "999-1001".
std::string count_range(int64_t lo, int64_t hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

void print_row(const BenchSetup &s, int ranks, const BenchRow &r, const std::string &per_rank) {
  std::string params = point_label(r.point);
  if (s.mode != "fp32") params += (params.empty() ? "" : ",") + s.mode;
  if (params.empty()) params = "-";
  char recall[16];
  std::snprintf(recall, sizeof recall, "%.4f", std::isnan(r.recall10) ? r.recall_k : r.recall10);
  std::printf("%-*s %5d %-20s %7lld %12.6f %12.0f %9s %10.3f %13s\n", index_width(s), s.descriptor.c_str(),
              ranks, params.c_str(), (long long)r.batch, r.search_s, double(r.batch) / r.search_s, recall,
              s.build_s(), per_rank.c_str());
}

int dist_bench(const MpiSession &mpi, const DistBenchConfig &c) {
  const bool root = mpi.root();
  const int ranks = mpi.size();
  BenchSetup s;
  s.descriptor = c.descriptor;
  s.metric = c.metric;
  s.mode = c.mode;
  s.k = c.k;
  s.repeats = c.repeats;

  // Local work on every rank: the context, the data set and, on the root, the JSON file and the
  // ground truth. Nothing collective yet, so a failure anywhere stops every rank here.
  std::unique_ptr<Context> ctx;
  std::ofstream json;
  FloatMatrix base, queries;
  std::optional<IdMatrix> gt;
  char host[MPI_MAX_PROCESSOR_NAME + 1] = {};
  local_step(mpi, [&] {
    if (root && c.json_path) {  // opened first: a bad path should fail before minutes of work
      json.open(*c.json_path, std::ios::app);
      if (!json) throw Failure(*c.json_path + ": cannot open for appending");
    }
    const DataSource src(c.dataset);
    s.dataset = src.name();
    ctx = std::make_unique<Context>(c.device, c.threads, c.gpus);
    s.device = ctx->device_name();
    s.threads = ctx->threads();
    if (ctx->on_cuda()) s.gpu = gpu_models(ctx->device_ids());
    int len = 0;
    MPI_Get_processor_name(host, &len);
    if (root) {
      std::printf("quiver bench --distributed (quiver %s)\n", qv_version_string());
      std::printf("machine: rank 0: %s, %d logical CPUs; device %s%s; threads %d\n", cpu_model().c_str(),
                  cpu_cores(), s.device.c_str(), s.gpu.empty() ? "" : (" (" + s.gpu + ")").c_str(),
                  s.threads);
      std::printf("command: %s\n", c.command.c_str());
      const double load = load_average();
      if (load > 0.5 * cpu_cores())
        std::printf("note:    load average %.1f on %d CPUs before the run: other work may disturb timings\n",
                    load, cpu_cores());
      std::fflush(stdout);
    }
    base = src.base();
    queries = src.queries(c.max_nq);
    if (base.rows == 0) throw Failure(src.name() + ": the base set is empty");
    if (queries.cols != base.cols)
      throw Failure(src.name() + ": queries have dimension " + std::to_string(queries.cols) +
                    ", base vectors " + std::to_string(base.cols));
    s.n = base.rows, s.d = base.cols, s.nq = queries.rows;
    s.ntrain = std::min(c.max_ntrain, s.n);
    if (!root) return;
    std::printf("data:    %s n=%lld d=%lld nq=%lld metric=%s k=%lld\n", s.dataset.c_str(), (long long)s.n,
                (long long)s.d, (long long)s.nq, metric_name(s.metric), (long long)s.k);
    // The root checks answers against the whole base set, as bench does.
    const int64_t gt_depth = std::max(s.k, kRecallDepth);
    gt = src.ground_truth(s.nq);
    if (gt && gt->rows >= s.nq && gt->cols >= gt_depth && s.metric == QV_METRIC_L2) {
      std::printf("truth:   %s/gt.ivecs (top-%lld)\n", src.name().c_str(), (long long)gt->cols);
    } else {
      Stopwatch clock;
      gt = exact_knn(*ctx, s.metric, base, queries, std::min(gt_depth, s.n));
      std::printf("truth:   exact qv_knn top-%lld in %.2f s\n", (long long)gt->cols, clock.seconds());
    }
    // A dry run of the recall computation: what would stop it fails here, where every rank can still
    // agree, not amid the collective searches.
    const std::vector<int64_t> none(size_t(s.nq * s.k), -1);
    if (s.k >= kRecallDepth) recall_at(none.data(), s.nq, s.k, *gt, kRecallDepth);
    recall_at(none.data(), s.nq, s.k, *gt, std::min(s.k, gt->cols));
    std::fflush(stdout);
  });

  // Every rank must have read the data set the root did (the same build and data path on every host):
  // its shape and the fingerprint of its slice of the base rows, checked on the root.
  const Slice mine = slice_of(s.n, mpi);
  const uint64_t shape[4] = {uint64_t(s.n), uint64_t(s.d), uint64_t(s.nq), fingerprint(base, mine)};
  std::vector<uint64_t> shapes(root ? size_t(4) * size_t(ranks) : 0);
  MPI_Gather(shape, 4, MPI_UINT64_T, shapes.data(), 4, MPI_UINT64_T, kRoot, MPI_COMM_WORLD);
  local_step(mpi, [&] {
    for (int r = 0; root && r < ranks; ++r) {
      const uint64_t *theirs = &shapes[size_t(r) * 4];
      if (theirs[0] != shape[0] || theirs[1] != shape[1] || theirs[2] != shape[2])
        throw Failure("rank " + std::to_string(r) + " read n=" + std::to_string(theirs[0]) + " d=" +
                      std::to_string(theirs[1]) + " nq=" + std::to_string(theirs[2]) + " from " + c.dataset +
                      ", rank 0 n=" + std::to_string(s.n) + " d=" + std::to_string(s.d) + " nq=" +
                      std::to_string(s.nq) + ": every rank needs the same data set");
      const Slice theirs_rows{s.n * r / ranks, s.n * (r + 1) / ranks};
      if (theirs[3] != fingerprint(base, theirs_rows))
        throw Failure("rank " + std::to_string(r) + "'s base rows " + std::to_string(theirs_rows.begin) + ".." +
                      std::to_string(theirs_rows.end - 1) + " of " + c.dataset +
                      " differ from rank 0's: every rank needs the same data set");
    }
  });

  // Where the ranks run: every rank's host and device, tallied on the root.
  const std::vector<std::string> hosts = gather_strings(mpi, host);
  const std::vector<std::string> devices = gather_strings(mpi, s.device);
  int hosts_used = 0;
  if (root) {
    std::map<std::string, int> per_host;
    for (const std::string &h : hosts) ++per_host[h];
    hosts_used = int(per_host.size());
    int most = 0;
    for (const auto &kv : per_host) most = std::max(most, kv.second);
    std::printf("ranks:   %d on %d host%s (%s); devices %s\n", ranks, hosts_used, hosts_used == 1 ? "" : "s",
                tally(hosts).c_str(), tally(devices).c_str());
    if (s.device == "cpu" && s.threads > std::max(1, cpu_cores() / most))
      std::printf("note:    %d ranks share a host, each with %d threads, on %d CPUs: --threads %d fits them\n",
                  most, s.threads, cpu_cores(), std::max(1, cpu_cores() / most));
    cpu_set_t affinity;
    CPU_ZERO(&affinity);
    if (s.device == "cpu" && sched_getaffinity(0, sizeof affinity, &affinity) == 0 &&
        CPU_COUNT(&affinity) < s.threads)
      std::printf("note:    rank 0 may use %d of the CPUs for its %d threads (mpirun binds ranks to cores "
                  "or sockets; mpirun --bind-to none leaves them free)\n",
                  CPU_COUNT(&affinity), s.threads);
    if (s.repeats < kProtocolRepeats)
      std::printf("note:    %d repeats, below the protocol's %d\n", s.repeats, kProtocolRepeats);
    std::fflush(stdout);
  }

  // Build: every rank trains on its slice of the first ntrain rows and adds its slice of the base rows
  // in one call with ids left to the index: rank 0's rows first, so a vector's id is its base row.
  qv_dist_options_t options;
  dist_check(mpi, qv_dist_options_init(&options), "qv_dist_options_init");
  options.root = kRoot;
  options.timeout_ms = kDistTimeoutMs;
  MPI_Comm comm = MPI_COMM_WORLD;
  DistIndex index;
  const qv_status_t created = qv_dist_index_create(ctx->get(), &comm, s.descriptor.c_str(), s.d, s.metric,
                                                   &options, index.out());
  if (created == QV_ERR_INVALID_ARGUMENT && root) {
    // A descriptor the library rejects is the user's input: report it as bad usage, as bench does.
    throw UsageError("--index \"" + s.descriptor + "\": " + qv_status_string(created) + ": " +
                     qv_dist_last_error_message());
  }
  dist_check(mpi, created, "creating the distributed index \"" + s.descriptor + "\"");

  const Slice train = slice_of(s.ntrain, mpi);
  MPI_Barrier(MPI_COMM_WORLD);  // the build's clock starts with every rank ready
  Stopwatch train_clock;
  {
    std::optional<Ticker> ticker;
    if (root)
      ticker.emplace("training \"" + s.descriptor + "\" on " + std::to_string(s.ntrain) + " vectors over " +
                     std::to_string(ranks) + " ranks");
    dist_check(mpi, qv_dist_index_train(index.get(), train.size(), base.row(train.begin)),
               "training \"" + s.descriptor + "\"");
  }
  s.train_s = train_clock.seconds();
  Stopwatch add_clock;
  {
    std::optional<Ticker> ticker;
    if (root) ticker.emplace("adding " + std::to_string(s.n) + " vectors over " + std::to_string(ranks) + " ranks");
    dist_check(mpi, qv_dist_index_add(index.get(), mine.size(), base.row(mine.begin), nullptr),
               "adding base rows " + std::to_string(mine.begin) + ".." + std::to_string(mine.end - 1) +
                   " on rank " + std::to_string(mpi.rank()));
  }
  s.add_s = add_clock.seconds();
  base = FloatMatrix();  // the shards hold their copies now
  if (!root) queries = FloatMatrix();

  // Vectors per rank (a vector lives on the rank owning its id, id % ranks). qv_index_info's bytes are
  // not available for a distributed index: the JSON lines leave them out.
  int64_t local = 0, total = 0;
  dist_check(mpi, qv_dist_index_info(index.get(), nullptr, nullptr, &local, &total), "qv_dist_index_info");
  std::vector<int64_t> counts(root ? size_t(ranks) : 0);
  MPI_Gather(&local, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, kRoot, MPI_COMM_WORLD);
  int64_t lo = 0, hi = 0;
  if (root) {
    lo = *std::min_element(counts.begin(), counts.end());
    hi = *std::max_element(counts.begin(), counts.end());
    std::printf("build:   \"%s\" build_s=%.3f (train %.3f s on %lld vectors, add %.3f s) over %d rank%s; "
                "%lld vectors, %s per rank\n",
                s.descriptor.c_str(), s.build_s(), s.train_s, (long long)s.ntrain, s.add_s, ranks, ranks == 1 ? "" : "s",
                (long long)total, count_range(lo, hi).c_str());
    const std::string recall_head = "recall@" + std::to_string(std::min(s.k, kRecallDepth));
    std::printf("\n%-*s %5s %-20s %7s %12s %12s %9s %10s %13s\n", index_width(s), "index", "ranks", "params",
                "batch", "search_s", "QPS", recall_head.c_str(), "build_s", "vectors/rank");
    std::fflush(stdout);
  }

  // The sweep: the root gives the queries and times; every rank makes the same collective calls (one
  // warm-up and s.repeats timed searches per point), the others with no queries of their own.
  const int64_t nq = root ? s.nq : 0;
  std::vector<float> dist(size_t(nq * s.k));
  std::vector<int64_t> ids(size_t(nq * s.k));
  for (const SweepPoint &point : c.sweep) {
    const qv_search_params_t params = search_params(point, s.mode);
    auto search = [&] {
      dist_check(mpi,
                 qv_dist_index_search(index.get(), nq, root ? queries.data.data() : nullptr, uint32_t(s.k),
                                      &params, root ? dist.data() : nullptr, root ? ids.data() : nullptr),
                 "searching");
    };
    search();  // warm-up: first-touch allocations, caches, GPU clocks
    std::vector<double> times;
    const std::string label = point_label(point);
    std::optional<Progress> progress;
    if (root) progress.emplace("timing " + (label.empty() ? std::string("search") : label), s.repeats);
    for (int r = 0; r < s.repeats; ++r) {
      Stopwatch clock;
      search();
      times.push_back(clock.seconds());
      if (progress) progress->update(r + 1);
    }
    if (!root) continue;
    progress->done();
    BenchRow row{point, s.nq, median(times), NAN, NAN, int64_t(times.size())};
    if (s.k >= kRecallDepth) row.recall10 = recall_at(ids.data(), s.nq, s.k, *gt, kRecallDepth);
    row.recall_k = recall_at(ids.data(), s.nq, s.k, *gt, std::min(s.k, gt->cols));
    print_row(s, ranks, row, count_range(lo, hi));
    if (json)
      json << bench_json(s, row, c.command)
                  .add("distributed", true)
                  .add("ranks", ranks)
                  .add("hosts", hosts_used)
                  .add("total_count", total)
                  .add("local_count_min", lo)
                  .add("local_count_max", hi)
                  .str()
           << "\n"
           << std::flush;
    std::fflush(stdout);
  }
  if (root && json.is_open() && !json.good()) throw Failure(*c.json_path + ": write failed");
  if (root && c.json_path)
    std::printf("\nJSON lines appended to %s (plot: python3 bench/plot_curves.py %s)\n", c.json_path->c_str(),
                c.json_path->c_str());
  return 0;
}

}  // namespace

int run_dist_bench(const DistBenchConfig &config) {
  MpiSession mpi;  // finalised last, after the index and the contexts are freed
  // main()'s exit codes and messages, given here: mpirun ends the job at the first rank that exits
  // non-zero, which could cut the root off before main() prints its message.
  constexpr int kExitFailure = 1, kExitUsage = 2;
  int code = 0;
  auto report = [](const char *message) {
    std::fprintf(stderr, "quiver: error: %s\n", message);
    std::fflush(stderr);
  };
  try {
    code = dist_bench(mpi, config);
  } catch (const ReportedByRoot &) {
    code = kExitFailure;
  } catch (const UsageError &e) {
    report(e.what());
    code = kExitUsage;
  } catch (const std::bad_alloc &) {
    report("out of memory");
    code = kExitFailure;
  } catch (const std::exception &e) {
    report(e.what());
    code = kExitFailure;
  }
  // Every rank leaves together, once the root has said what went wrong.
  MPI_Barrier(MPI_COMM_WORLD);
  return code;
}

#endif  // QUIVER_TOOL_MPI

}  // namespace qvtool
