// The C entry points of quiver_mpi.h (libquiver_mpi). Like libquiver's, none lets an exception
// through; the message of a failed call is this library's own (qv_dist_last_error_message).
#include <new>
#include <string>

#include "cpp/core/error.h"
#include "cpp/dist/dist_index.h"
#include "quiver/quiver_mpi.h"
#include "capi/guard.h"
#include "capi/handles.h"

struct qv_dist_index {
  std::unique_ptr<quiver::dist::DistIndex> index;
};

namespace {

thread_local std::string last_error;
// MPI was initialised by qv_dist_comm_world, so qv_dist_finalize finalises it.
bool initialised_here = false;

template <typename Body>
qv_status_t guarded(Body&& body) noexcept {
  try {
    last_error.clear();
    body();
    return QV_OK;
  } catch (const quiver::Error& e) {
    last_error = e.what();
    return static_cast<qv_status_t>(e.status());
  } catch (const std::bad_alloc&) {
    last_error = "out of host memory";
    return QV_ERR_OUT_OF_HOST_MEMORY;
  } catch (const std::exception& e) {
    last_error = std::string("internal error: ") + e.what();
    return QV_ERR_INTERNAL;
  } catch (...) {
    last_error = "internal error: unknown exception";
    return QV_ERR_INTERNAL;
  }
}

using quiver::capi::require_pointer;

qv_dist_options_t default_options() {
  qv_dist_options_t o{};
  o.struct_size = sizeof o;
  o.root = 0;
  o.timeout_ms = 60000;
  return o;
}

constexpr size_t kVersions[] = {QV_FIELD_END(qv_dist_options_t, timeout_ms)};

// What the unsized qv_dist_options_init writes, forever.
constexpr size_t kUnsizedInitSize = QV_FIELD_END(qv_dist_options_t, timeout_ms);

quiver::dist::Options read_options(const qv_dist_options_t* options) {
  const qv_dist_options_t given = quiver::capi::read_params(options, default_options(), "options", kVersions);
  quiver::require(given.timeout_ms > 0, "options->timeout_ms = ", given.timeout_ms, " is not positive");
  quiver::dist::Options o;
  o.root = given.root;
  o.timeout_ms = given.timeout_ms;
  return o;
}

MPI_Comm read_comm(const void* comm) {
  require_pointer(comm, "comm");
  return *static_cast<const MPI_Comm*>(comm);
}

}  // namespace

extern "C" {

qv_status_t qv_dist_options_init_sized(qv_dist_options_t* options, size_t size) {
  return guarded([&] { quiver::capi::init_params(options, size, default_options(), "options", kVersions); });
}

// Parenthesised: the header's macro of this name calls the sized function.
qv_status_t(qv_dist_options_init)(qv_dist_options_t* options) {
  return guarded([&] { quiver::capi::init_params(options, kUnsizedInitSize, default_options(), "options", kVersions); });
}

const char* qv_dist_last_error_message(void) { return last_error.c_str(); }

qv_status_t qv_dist_comm_world(const void** comm) {
  return guarded([&] {
    require_pointer(comm, "comm");
    *comm = nullptr;
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    if (finalised) quiver::fail(quiver::Status::invalid_argument, "MPI is already finalised");
    if (!initialised) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        quiver::fail(quiver::Status::remote, "MPI_Init_thread failed");
      initialised_here = true;
    }
    static MPI_Comm world = MPI_COMM_WORLD;
    *comm = &world;
  });
}

qv_status_t qv_dist_finalize(void) {
  return guarded([&] {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (initialised_here && !finalised) MPI_Finalize();
    initialised_here = false;
  });
}

qv_status_t qv_dist_index_create(qv_context_t* context, const void* comm, const char* descriptor, int64_t dim,
                                 qv_metric_t metric, const qv_dist_options_t* options, qv_dist_index_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    require_pointer(context, "context");
    require_pointer(descriptor, "descriptor");
    auto index = std::make_unique<quiver::dist::DistIndex>(context, read_comm(comm), descriptor, dim, metric,
                                                           read_options(options));
    *out = new qv_dist_index{std::move(index)};
  });
}

void qv_dist_index_free(qv_dist_index_t* index) {
  guarded([&] { delete index; });
}

qv_status_t qv_dist_index_train(qv_dist_index_t* index, int64_t n, const float* x) {
  return guarded([&] {
    require_pointer(index, "index");
    index->index->train(n, x);
  });
}

qv_status_t qv_dist_index_add(qv_dist_index_t* index, int64_t n, const float* x, const int64_t* ids) {
  return guarded([&] {
    require_pointer(index, "index");
    index->index->add(n, x, ids);
  });
}

qv_status_t qv_dist_index_search(const qv_dist_index_t* index, int64_t nq, const float* queries, uint32_t k,
                                 const qv_search_params_t* params, float* distances, int64_t* ids) {
  return guarded([&] {
    require_pointer(index, "index");
    index->index->search(nq, queries, k, params, distances, ids);
  });
}

qv_status_t qv_dist_index_range_search(const qv_dist_index_t* index, int64_t nq, const float* queries, float radius,
                                       const qv_search_params_t* params, qv_range_result_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    require_pointer(index, "index");
    quiver::RangeResult result = index->index->range_search(nq, queries, radius, params);
    if (index->index->comm().rank() == index->index->root()) *out = new qv_range_result{std::move(result)};
  });
}

qv_status_t qv_dist_index_remove(qv_dist_index_t* index, int64_t n, const int64_t* ids, int64_t* removed) {
  return guarded([&] {
    require_pointer(index, "index");
    const int64_t count = index->index->remove(n, ids);
    if (removed) *removed = count;
  });
}

qv_status_t qv_dist_index_info(const qv_dist_index_t* index, int32_t* rank, int32_t* size, int64_t* local_count,
                               int64_t* total_count) {
  return guarded([&] {
    require_pointer(index, "index");
    const int64_t total = index->index->total_count();
    if (rank) *rank = index->index->comm().rank();
    if (size) *size = index->index->comm().size();
    if (local_count) *local_count = index->index->local_count();
    if (total_count) *total_count = total;
  });
}

qv_status_t qv_dist_index_save(const qv_dist_index_t* index, const char* prefix) {
  return guarded([&] {
    require_pointer(index, "index");
    require_pointer(prefix, "prefix");
    index->index->save(prefix);
  });
}

qv_status_t qv_dist_index_load(qv_context_t* context, const void* comm, const char* prefix,
                               const qv_dist_options_t* options, qv_dist_index_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    require_pointer(context, "context");
    require_pointer(prefix, "prefix");
    auto index = std::make_unique<quiver::dist::DistIndex>(context, read_comm(comm), std::string(prefix),
                                                           read_options(options));
    *out = new qv_dist_index{std::move(index)};
  });
}

}  // extern "C"
