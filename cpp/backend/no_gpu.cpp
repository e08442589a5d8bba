// The GPU backend of a build without CUDA.
#ifndef QUIVER_HAVE_CUDA

#include "cpp/backend/gpu.h"
#include "cpp/backend/gpu_graph.h"
#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/error.h"

namespace quiver::gpu {

namespace {

[[noreturn]] void no_cuda(const char* what) {
  throw Error(Status::unsupported, std::string(what) + ": " + unavailable_reason());
}

}  // namespace

int device_count() { return 0; }

void fail_device_allocation_at(int64_t) {}

std::string unavailable_reason() { return "this build of quiver has no CUDA backend (QUIVER_CUDA=OFF)"; }

bool is_device_pointer(const void*) { return false; }

Resources* create_resources(const ResourcesOptions&) { no_cuda("GPU resources"); }

void copy_memory(Resources&, void*, const void*, int64_t) { no_cuda("GPU memory copy"); }

void destroy_resources(Resources*) noexcept {}

DeviceMemoryStats memory_stats(Resources&) { no_cuda("GPU memory statistics"); }

void release_cached_memory(Resources&) { no_cuda("GPU memory pool"); }

DeviceMatrix* matrix_create(Resources&, int64_t) { no_cuda("GPU vector storage"); }

void matrix_free(DeviceMatrix*) noexcept {}

void matrix_append(Resources&, DeviceMatrix&, int64_t, const float*) { no_cuda("GPU vector storage"); }

void matrix_remove_rows(Resources&, DeviceMatrix&, int64_t, const int64_t*) {
  no_cuda("GPU vector storage");
}

void matrix_read(Resources&, const DeviceMatrix&, int64_t, int64_t, float*) {
  no_cuda("GPU vector storage");
}

int64_t matrix_rows(const DeviceMatrix&) { no_cuda("GPU vector storage"); }

int64_t matrix_dim(const DeviceMatrix&) { no_cuda("GPU vector storage"); }

const float* matrix_data(const DeviceMatrix&) { no_cuda("GPU vector storage"); }

const float* matrix_norms(const DeviceMatrix&) { no_cuda("GPU vector storage"); }

int64_t matrix_device_bytes(const DeviceMatrix&) { no_cuda("GPU vector storage"); }

IdTable* id_table_create(Resources&, int64_t, const int64_t*) { no_cuda("GPU id tables"); }

void id_table_free(IdTable*) noexcept {}

int64_t id_table_bytes(const IdTable&) { no_cuda("GPU id tables"); }

void rows_to_ids(Resources&, const IdTable&, int64_t, int64_t*) { no_cuda("GPU id tables"); }

int64_t knn_candidate_count(int64_t) { no_cuda("GPU exact search"); }

void knn(Resources&, Metric, const float*, const float*, int64_t, int64_t, const float*, int64_t, int64_t,
         float*, int64_t*, const RowFilter&, ComputeMode) {
  no_cuda("GPU exact search");
}
void knn(Resources&, Metric, const DeviceMatrix&, const float*, int64_t, int64_t, float*, int64_t*, const RowFilter&,
         ComputeMode) {
  no_cuda("GPU exact search");
}

KmeansResult kmeans(Resources&, int64_t, int64_t, const float*, int64_t, const KmeansOptions&, float*, int64_t*) {
  no_cuda("GPU k-means");
}

IvfDevice* ivf_create(Resources&, const IvfModelView&) { no_cuda("GPU inverted-file index"); }

void ivf_free(IvfDevice*) noexcept {}

int64_t ivf_code_bytes(const IvfDevice&) { no_cuda("GPU inverted-file index"); }

void ivf_add(Resources&, IvfDevice&, int64_t, const float*, const int64_t*, int64_t*) {
  no_cuda("GPU inverted-file index");
}

void ivf_append_encoded(Resources&, IvfDevice&, int64_t, int64_t, const uint8_t*, const float*, const int64_t*) {
  no_cuda("GPU inverted-file index");
}

int64_t ivf_remove(Resources&, IvfDevice&, int64_t, const int64_t*) { no_cuda("GPU inverted-file index"); }

int64_t ivf_count(const IvfDevice&) { no_cuda("GPU inverted-file index"); }

int64_t ivf_list_size(const IvfDevice&, int64_t) { no_cuda("GPU inverted-file index"); }

void ivf_list_read(Resources&, const IvfDevice&, int64_t, uint8_t*, float*, int64_t*) {
  no_cuda("GPU inverted-file index");
}

IvfMemory ivf_memory(const IvfDevice&) { no_cuda("GPU inverted-file index"); }

void ivf_search(Resources&, const IvfDevice&, int64_t, const float*, int64_t, const IvfSearchOptions&, float*,
                int64_t*) {
  no_cuda("GPU inverted-file index");
}

IvfRangeHits ivf_range_search(Resources&, const IvfDevice&, int64_t, const float*, float, const IvfSearchOptions&,
                              int64_t) {
  no_cuda("GPU inverted-file index");
}

GraphDevice* graph_create(Resources&, int64_t, Metric) { no_cuda("GPU graph search"); }

void graph_free(GraphDevice*) noexcept {}

void graph_upload(Resources&, GraphDevice&, int64_t, const float*, int64_t, const int32_t*, const int64_t*,
                  const int32_t*, int64_t) {
  no_cuda("GPU graph search");
}

void graph_upload_codes(Resources&, GraphDevice&, int64_t, const uint32_t*, int64_t, const int32_t*, const int32_t*,
                        int64_t) {
  no_cuda("GPU graph search");
}

void graph_upload_layer(Resources&, GraphDevice&, const GraphLayer&) { no_cuda("GPU graph search"); }

int64_t graph_rows(const GraphDevice&) { return 0; }

const float* graph_vectors(const GraphDevice&) { return nullptr; }

int64_t graph_device_bytes(const GraphDevice&) { return 0; }

void graph_search(Resources&, const GraphDevice&, int64_t, const float*, int64_t, const GraphSearchOptions&, float*,
                  int64_t*) {
  no_cuda("GPU graph search");
}

void graph_search_codes(Resources&, const GraphDevice&, int64_t, const uint32_t*, const GraphSearchOptions&,
                        int64_t*) {
  no_cuda("GPU graph search");
}

}  // namespace quiver::gpu

#endif
