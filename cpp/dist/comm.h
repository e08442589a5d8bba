// The MPI side of a distributed index (quiver_mpi.h): a duplicated communicator whose collectives
// never wait longer than a timeout (non-blocking MPI calls polled against a deadline), and the
// agreement step that makes one rank's failure every rank's.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace quiver::dist {

class Comm {
 public:
  // Duplicates `comm` (collective). timeout_ms > 0.
  Comm(MPI_Comm comm, int timeout_ms);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm get() const { return comm_; }

  // Waits for a request until the deadline; throws Error(Status::remote) naming `step` on timeout
  // (the request is then left pending and the communicator should not be used again).
  void wait(MPI_Request& request, const char* step) const;

  // Collectives, each bounded by the timeout. Counts are in elements.
  void broadcast(void* data, int64_t bytes, int root, const char* step) const;
  template <typename T>
  void broadcast_vector(std::vector<T>& values, int root, const char* step) const;
  int64_t sum(int64_t value, const char* step) const { return all_reduce(value, MPI_SUM, step); }
  int64_t max(int64_t value, const char* step) const { return all_reduce(value, MPI_MAX, step); }
  // Every rank's value, in rank order.
  std::vector<int64_t> all_gather(int64_t value, const char* step) const;
  // Gathers each rank's bytes to root (the result is empty elsewhere); `counts` receives the bytes
  // from each rank on root.
  std::vector<uint8_t> gather_bytes(const void* data, int64_t bytes, int root, std::vector<int64_t>& counts,
                                    const char* step) const;
  // Sends send[d] to rank d and returns what every rank sent here, concatenated in rank order.
  std::vector<uint8_t> exchange(const std::vector<std::vector<uint8_t>>& send, std::vector<int64_t>& received,
                                const char* step) const;

  // Every rank says whether its part of a step failed. If any did, every rank throws: a failing rank
  // its own exception, the others Error(Status::remote) naming the lowest failing rank and its message.
  void agree(std::exception_ptr local, const char* step) const;

 private:
  int64_t all_reduce(int64_t value, MPI_Op op, const char* step) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int timeout_ms_;
};

template <typename T>
void Comm::broadcast_vector(std::vector<T>& values, int root, const char* step) const {
  int64_t count = static_cast<int64_t>(values.size());
  broadcast(&count, sizeof count, root, step);
  values.resize(static_cast<size_t>(count));
  broadcast(values.data(), count * static_cast<int64_t>(sizeof(T)), root, step);
}

// Runs f and returns what it threw (nullptr when it did not): the local part of a step, whose
// failure is then agreed on.
template <typename F>
std::exception_ptr attempt(F&& f) {
  try {
    f();
    return nullptr;
  } catch (...) {
    return std::current_exception();
  }
}

}  // namespace quiver::dist
