#include "cpp/dist/comm.h"

#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "cpp/core/error.h"
#include "quiver/quiver.h"

namespace quiver::dist {

namespace {

// MPI counts are int: larger messages go in pieces of this many bytes.
constexpr int64_t kMaxMessageBytes = int64_t{1} << 30;
constexpr int kMessageLength = 1024;

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail(Status::remote, "MPI ", what, ": ", std::string(text, static_cast<size_t>(length)));
}

int as_count(int64_t count, const char* step) {
  if (count < 0 || count > INT_MAX)
    fail(Status::invalid_argument, step, ": ", count, " elements in one MPI message (at most ", INT_MAX,
         "): use smaller batches");
  return static_cast<int>(count);
}

}  // namespace

Comm::Comm(MPI_Comm comm, int timeout_ms) : timeout_ms_(timeout_ms) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  require(initialised, "MPI is not initialised: call MPI_Init (or MPI_Init_thread) first");
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Comm::~Comm() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void Comm::wait(MPI_Request& request, const char* step) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  for (int spins = 0;; ++spins) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), step);
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline)
      fail(Status::remote, step, ": another rank did not take part within ", timeout_ms_,
           " ms (qv_dist_options_t.timeout_ms); it may have failed or stopped");
    // Spin briefly (a collective usually completes within microseconds), then yield the core.
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void Comm::broadcast(void* data, int64_t bytes, int root, const char* step) const {
  auto* p = static_cast<char*>(data);
  for (int64_t done = 0; done < bytes; done += kMaxMessageBytes) {
    const int64_t piece = std::min(kMaxMessageBytes, bytes - done);
    MPI_Request request;
    check_mpi(MPI_Ibcast(p + done, static_cast<int>(piece), MPI_BYTE, root, comm_, &request), step);
    wait(request, step);
  }
}

int64_t Comm::all_reduce(int64_t value, MPI_Op op, const char* step) const {
  int64_t out = 0;
  MPI_Request request;
  check_mpi(MPI_Iallreduce(&value, &out, 1, MPI_INT64_T, op, comm_, &request), step);
  wait(request, step);
  return out;
}

std::vector<int64_t> Comm::all_gather(int64_t value, const char* step) const {
  std::vector<int64_t> out(static_cast<size_t>(size_));
  MPI_Request request;
  check_mpi(MPI_Iallgather(&value, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, comm_, &request), step);
  wait(request, step);
  return out;
}

std::vector<uint8_t> Comm::gather_bytes(const void* data, int64_t bytes, int root, std::vector<int64_t>& counts,
                                        const char* step) const {
  counts = all_gather(bytes, step);
  std::vector<int> sizes(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    sizes[r] = as_count(counts[r], step);
    offsets[r] = as_count(total, step);
    total += counts[r];
  }
  as_count(total, step);
  std::vector<uint8_t> out(rank_ == root ? static_cast<size_t>(total) : 0);
  MPI_Request request;
  check_mpi(MPI_Igatherv(data, as_count(bytes, step), MPI_BYTE, out.data(), sizes.data(), offsets.data(), MPI_BYTE,
                         root, comm_, &request),
            step);
  wait(request, step);
  return out;
}

std::vector<uint8_t> Comm::exchange(const std::vector<std::vector<uint8_t>>& send, std::vector<int64_t>& received,
                                    const char* step) const {
  std::vector<int64_t> sent(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) sent[r] = static_cast<int64_t>(send[r].size());
  received.assign(static_cast<size_t>(size_), 0);
  MPI_Request request;
  check_mpi(MPI_Ialltoall(sent.data(), 1, MPI_INT64_T, received.data(), 1, MPI_INT64_T, comm_, &request), step);
  wait(request, step);
  std::vector<int> send_sizes(static_cast<size_t>(size_)), send_offsets(static_cast<size_t>(size_)),
      recv_sizes(static_cast<size_t>(size_)), recv_offsets(static_cast<size_t>(size_));
  std::vector<uint8_t> packed;
  int64_t in_total = 0;
  for (int r = 0; r < size_; ++r) {
    send_offsets[r] = as_count(static_cast<int64_t>(packed.size()), step);
    send_sizes[r] = as_count(sent[r], step);
    packed.insert(packed.end(), send[r].begin(), send[r].end());
    recv_offsets[r] = as_count(in_total, step);
    recv_sizes[r] = as_count(received[r], step);
    in_total += received[r];
  }
  std::vector<uint8_t> out(static_cast<size_t>(as_count(in_total, step)));
  check_mpi(MPI_Ialltoallv(packed.data(), send_sizes.data(), send_offsets.data(), MPI_BYTE, out.data(),
                           recv_sizes.data(), recv_offsets.data(), MPI_BYTE, comm_, &request),
            step);
  wait(request, step);
  return out;
}

void Comm::agree(std::exception_ptr local, const char* step) const {
  // The lowest failing rank + 1, or 0 when every rank succeeded.
  int64_t failed = local ? size_ - rank_ : 0;  // max picks the lowest rank
  failed = max(failed, step);
  if (failed == 0) return;
  const int culprit = size_ - static_cast<int>(failed);
  if (rank_ == culprit) {
    // Tell the others what went wrong, then fail with the original error.
    char message[kMessageLength] = {};
    int32_t status = static_cast<int32_t>(Status::internal);
    try {
      std::rethrow_exception(local);
    } catch (const Error& e) {
      status = static_cast<int32_t>(e.status());
      std::strncpy(message, e.what(), sizeof message - 1);
    } catch (const std::bad_alloc&) {
      status = static_cast<int32_t>(Status::out_of_host_memory);
      std::strncpy(message, "out of host memory", sizeof message - 1);
    } catch (const std::exception& e) {
      std::strncpy(message, e.what(), sizeof message - 1);
    } catch (...) {
      std::strncpy(message, "unknown error", sizeof message - 1);
    }
    broadcast(&status, sizeof status, culprit, step);
    broadcast(message, sizeof message, culprit, step);
    std::rethrow_exception(local);
  }
  int32_t status = 0;
  char message[kMessageLength] = {};
  broadcast(&status, sizeof status, culprit, step);
  broadcast(message, sizeof message, culprit, step);
  if (local) std::rethrow_exception(local);  // a rank that failed too reports its own error
  message[kMessageLength - 1] = 0;
  fail(Status::remote, step, ": rank ", culprit, " failed: ", qv_status_string(static_cast<qv_status_t>(status)), ": ",
       message);
}

}  // namespace quiver::dist
