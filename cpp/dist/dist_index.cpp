#include "cpp/dist/dist_index.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "capi/handles.h"
#include "cpp/core/error.h"
#include "cpp/multi/merge_results.h"

namespace quiver::dist {

namespace {

constexpr char kManifestMagic[] = "quiver-dist 1";

int pool_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

std::string shard_path(const std::string& prefix, int rank, int size) {
  return prefix + "." + std::to_string(rank) + "-of-" + std::to_string(size) + ".qvi";
}

template <typename T, typename Vector = std::vector<T>>
Vector as_values(const std::vector<uint8_t>& bytes, size_t offset, size_t count) {
  Vector out(count);
  if (count > 0) std::memcpy(out.data(), bytes.data() + offset, count * sizeof(T));
  return out;
}

template <typename T>
void append_bytes(std::vector<uint8_t>& out, const T* values, int64_t count) {
  const auto* p = reinterpret_cast<const uint8_t*>(values);
  out.insert(out.end(), p, p + count * static_cast<int64_t>(sizeof(T)));
}

void require_vectors(int64_t n, const float* x, const char* name) {
  require(n >= 0, "n = ", n, " is negative");
  require(n == 0 || x != nullptr, name, " is NULL");
}

}  // namespace

void check(qv_status_t status, const char* what) {
  if (status != QV_OK) fail(static_cast<Status>(status), what, ": ", qv_last_error_message());
}

DistIndex::DistIndex(qv_context_t* context, MPI_Comm comm, const std::string& descriptor, int64_t dim,
                     qv_metric_t metric, const Options& options)
    : comm_(comm, options.timeout_ms),
      options_(options),
      descriptor_(descriptor),
      dim_(dim),
      metric_(metric),
      pool_(pool_threads()) {
  comm_.agree(attempt([&] {
                require(options.root >= 0 && options.root < comm_.size(), "options->root = ", options.root,
                        " is not a rank of the communicator (size ", comm_.size(), ")");
                context_.reset(new qv_context{context->context});
                qv_index_t* local = nullptr;
                check(qv_index_create(context_.get(), descriptor.c_str(), dim, metric, &local), "creating the local shard");
                local_.reset(local);
              }),
              "create");
}

DistIndex::DistIndex(qv_context_t* context, MPI_Comm comm, const std::string& prefix, const Options& options)
    : comm_(comm, options.timeout_ms), options_(options), pool_(pool_threads()) {
  int64_t expected = 0;
  comm_.agree(attempt([&] {
                require(options.root >= 0 && options.root < comm_.size(), "options->root = ", options.root,
                        " is not a rank of the communicator (size ", comm_.size(), ")");
                std::ifstream in(prefix + ".manifest");
                if (!in) fail(Status::io_error, "cannot open ", prefix, ".manifest");
                std::string magic, word;
                std::getline(in, magic);
                if (magic != kManifestMagic) fail(Status::corrupt_data, prefix, ".manifest is not a quiver manifest");
                int64_t ranks = 0, metric = 0;
                in >> word >> ranks >> word >> dim_ >> word >> metric >> word >> max_id_;
                std::vector<int64_t> counts(static_cast<size_t>(std::max<int64_t>(ranks, 0)));
                for (int64_t& c : counts) in >> word >> c;
                in >> word;
                std::getline(in >> std::ws, descriptor_);
                if (!in || ranks < 1) fail(Status::corrupt_data, prefix, ".manifest is damaged");
                if (ranks != comm_.size())
                  fail(Status::invalid_argument, prefix, ": saved by ", ranks, " ranks, loaded by ", comm_.size(),
                       " (a distributed index loads on as many ranks as saved it)");
                metric_ = static_cast<qv_metric_t>(metric);
                expected = counts[comm_.rank()];
                context_.reset(new qv_context{context->context});
                qv_index_t* local = nullptr;
                check(qv_index_load(context_.get(), shard_path(prefix, comm_.rank(), comm_.size()).c_str(), &local),
                      "loading the local shard");
                local_.reset(local);
                if (local_count() != expected)
                  fail(Status::corrupt_data, "shard ", comm_.rank(), " holds ", local_count(), " vectors, the manifest says ",
                       expected);
              }),
              "load");
}

int64_t DistIndex::local_count() const {
  qv_index_info_t info;
  check(qv_index_info_init(&info), "info");
  check(qv_index_info(local_.get(), &info), "info");
  return info.count;
}

int64_t DistIndex::total_count() const { return comm_.sum(local_count(), "info"); }

void DistIndex::replace_local(const std::vector<uint8_t>& bytes) {
  qv_index_t* fresh = nullptr;
  check(qv_index_load_buffer(context_.get(), bytes.data(), bytes.size(), &fresh), "installing the model");
  local_.reset(fresh);
}

void DistIndex::train(int64_t n, const float* x) {
  comm_.agree(attempt([&] { require_vectors(n, x, "x"); }), "train");
  if (comm_.sum(local_count(), "train") > 0) {
    // Trained and holding vectors: each shard answers as its kind does (a model refuses, Flat ignores).
    comm_.agree(attempt([&] { check(qv_index_train(local_.get(), n, x), "train"); }), "train");
    return;
  }
  // Rank 0 learns the model from every rank's sample; the others install a copy of it.
  std::vector<int64_t> counts;
  const std::vector<uint8_t> sample =
      comm_.gather_bytes(x, n * dim_ * static_cast<int64_t>(sizeof(float)), 0, counts, "train: gathering samples");
  std::vector<uint8_t> model;
  comm_.agree(attempt([&] {
                if (comm_.rank() != 0) return;
                const int64_t rows = static_cast<int64_t>(sample.size() / sizeof(float)) / dim_;
                check(qv_index_train(local_.get(), rows, reinterpret_cast<const float*>(sample.data())), "train");
                void* data = nullptr;
                size_t size = 0;
                check(qv_index_save_buffer(local_.get(), &data, &size), "train: saving the model");
                model.assign(static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
                qv_buffer_free(data);
              }),
              "train");
  comm_.broadcast_vector(model, 0, "train: sharing the model");
  comm_.agree(attempt([&] {
                if (comm_.rank() != 0) replace_local(model);
              }),
              "train: installing the model");
}

void DistIndex::add(int64_t n, const float* x, const int64_t* ids) {
  comm_.agree(attempt([&] {
                require_vectors(n, x, "x");
                for (int64_t i = 0; ids != nullptr && i < n; ++i)
                  require(ids[i] >= 0, "ids[", i, "] = ", ids[i], " is negative");
              }),
              "add");
  const int64_t given = comm_.sum(n > 0 && ids != nullptr ? 1 : 0, "add");
  const int64_t left = comm_.sum(n > 0 && ids == nullptr ? 1 : 0, "add");
  if (given > 0 && left > 0)
    fail(Status::invalid_argument, "add: ids must be given on every rank or on none (", given, " ranks gave ids, ",
         left, " did not)");
  std::vector<int64_t> assigned;
  if (ids == nullptr) {
    const std::vector<int64_t> sizes = comm_.all_gather(n, "add");
    int64_t first = max_id_ + 1;
    for (int r = 0; r < comm_.rank(); ++r) first += sizes[r];
    for (int64_t i = 0; i < n; ++i) assigned.push_back(first + i);
    ids = assigned.data();
  }
  // Each vector goes to the rank owning its id, as (id, dim floats) records.
  std::vector<std::vector<uint8_t>> send(static_cast<size_t>(comm_.size()));
  for (int64_t i = 0; i < n; ++i) {
    std::vector<uint8_t>& to = send[owner(ids[i])];
    append_bytes(to, ids + i, 1);
    append_bytes(to, x + i * dim_, dim_);
  }
  std::vector<int64_t> received;
  const std::vector<uint8_t> records = comm_.exchange(send, received, "add: routing vectors");
  const size_t record = sizeof(int64_t) + static_cast<size_t>(dim_) * sizeof(float);
  const int64_t m = static_cast<int64_t>(records.size() / record);
  std::vector<int64_t> mine(static_cast<size_t>(m));
  std::vector<float> vectors(static_cast<size_t>(m * dim_));
  for (int64_t i = 0; i < m; ++i) {
    std::memcpy(&mine[i], records.data() + i * record, sizeof(int64_t));
    std::memcpy(vectors.data() + i * dim_, records.data() + i * record + sizeof(int64_t), dim_ * sizeof(float));
  }
  const std::exception_ptr local = attempt([&] {
    if (m > 0) check(qv_index_add(local_.get(), m, vectors.data(), mine.data()), "add");
  });
  try {
    comm_.agree(local, "add");
  } catch (...) {
    // Nothing half-added: the ranks whose part went in take it out again.
    if (!local && m > 0) qv_index_remove(local_.get(), m, mine.data(), nullptr);
    throw;
  }
  int64_t largest = -1;
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, ids[i]);
  max_id_ = std::max(max_id_, comm_.max(largest, "add"));
}

void DistIndex::share_queries(int64_t& nq, std::vector<float>& queries, qv_search_params_t& params,
                              std::vector<uint8_t>& filter, const float* root_queries,
                              const qv_search_params_t* root_params) const {
  const bool root = comm_.rank() == options_.root;
  check(qv_search_params_init(&params), "search parameters");
  comm_.agree(attempt([&] {
                if (!root) return;
                require_vectors(nq, root_queries, "queries");
                if (root_params != nullptr) {
                  // The caller's version of the struct, copied into this library's.
                  const uint32_t size = std::min<uint32_t>(root_params->struct_size, sizeof params);
                  require(size >= sizeof(uint32_t), "params->struct_size = ", root_params->struct_size, " is too small");
                  std::memcpy(&params, root_params, size);
                  params.struct_size = sizeof params;
                  require(params.filter_bits >= 0, "params->filter_bits = ", params.filter_bits, " is negative");
                  if (params.filter != nullptr)
                    filter.assign(params.filter, params.filter + (params.filter_bits + 7) / 8);
                }
                queries.assign(root_queries, root_queries + nq * dim_);
              }),
              "search: reading the queries");
  comm_.broadcast(&nq, sizeof nq, options_.root, "search: sharing the queries");
  comm_.broadcast(&params, sizeof params, options_.root, "search: sharing the parameters");
  comm_.broadcast_vector(queries, options_.root, "search: sharing the queries");
  const int64_t has_filter = params.filter != nullptr ? 1 : 0;
  comm_.broadcast_vector(filter, options_.root, "search: sharing the filter");
  params.filter = has_filter ? filter.data() : nullptr;
}

void DistIndex::search(int64_t nq, const float* queries, uint32_t k, const qv_search_params_t* params,
                       float* distances, int64_t* ids) const {
  std::vector<float> shared_queries;
  std::vector<uint8_t> filter;
  qv_search_params_t shared;
  share_queries(nq, shared_queries, shared, filter, queries, params);
  comm_.broadcast(&k, sizeof k, options_.root, "search: sharing k");
  const bool root = comm_.rank() == options_.root;
  std::vector<float> local_distances(static_cast<size_t>(nq) * k);
  std::vector<int64_t> local_ids(local_distances.size());
  comm_.agree(attempt([&] {
                if (root) require(nq == 0 || (distances != nullptr && ids != nullptr), "distances or ids is NULL");
                check(qv_index_search(local_.get(), nq, shared_queries.data(), k, &shared, local_distances.data(),
                                      local_ids.data()),
                      "search");
              }),
              "search");
  if (nq == 0) return;
  // The shards' top k of every query meet on the root, which keeps the best k.
  std::vector<int64_t> counts;
  const std::vector<uint8_t> all_distances =
      comm_.gather_bytes(local_distances.data(), static_cast<int64_t>(local_distances.size() * sizeof(float)),
                         options_.root, counts, "search: gathering results");
  const std::vector<uint8_t> all_ids =
      comm_.gather_bytes(local_ids.data(), static_cast<int64_t>(local_ids.size() * sizeof(int64_t)), options_.root,
                         counts, "search: gathering results");
  if (!root) return;
  const size_t per_rank = local_distances.size();
  std::vector<PartResult> parts(static_cast<size_t>(comm_.size()));
  for (int r = 0; r < comm_.size(); ++r) {
    parts[r].distances = as_values<float>(all_distances, r * per_rank * sizeof(float), per_rank);
    parts[r].ids = as_values<int64_t>(all_ids, r * per_rank * sizeof(int64_t), per_rank);
  }
  merge_knn(pool_, static_cast<Metric>(metric_), nq, k, parts.data(), comm_.size(), distances, ids);
}

RangeResult DistIndex::range_search(int64_t nq, const float* queries, float radius,
                                    const qv_search_params_t* params) const {
  std::vector<float> shared_queries;
  std::vector<uint8_t> filter;
  qv_search_params_t shared;
  share_queries(nq, shared_queries, shared, filter, queries, params);
  comm_.broadcast(&radius, sizeof radius, options_.root, "range search: sharing the radius");
  // Each shard's hits as (hits per query, ids, distances).
  std::vector<int64_t> hits(static_cast<size_t>(nq));
  std::vector<int64_t> local_ids;
  std::vector<float> local_distances;
  comm_.agree(attempt([&] {
                qv_range_result_t* result = nullptr;
                check(qv_index_range_search(local_.get(), nq, shared_queries.data(), radius, &shared, &result),
                      "range search");
                int64_t count = 0;
                const int64_t *lims = nullptr, *found = nullptr;
                const float* found_distances = nullptr;
                qv_range_result_get(result, &count, &lims, &found, &found_distances);
                for (int64_t q = 0; q < nq; ++q) hits[q] = lims[q + 1] - lims[q];
                local_ids.assign(found, found + lims[nq]);
                local_distances.assign(found_distances, found_distances + lims[nq]);
                qv_range_result_free(result);
              }),
              "range search");
  std::vector<int64_t> counts, id_counts;
  const char* step = "range search: gathering results";
  const std::vector<uint8_t> all_hits =
      comm_.gather_bytes(hits.data(), nq * static_cast<int64_t>(sizeof(int64_t)), options_.root, counts, step);
  const std::vector<uint8_t> all_ids = comm_.gather_bytes(
      local_ids.data(), static_cast<int64_t>(local_ids.size() * sizeof(int64_t)), options_.root, id_counts, step);
  const std::vector<uint8_t> all_distances = comm_.gather_bytes(
      local_distances.data(), static_cast<int64_t>(local_distances.size() * sizeof(float)), options_.root, counts, step);
  if (comm_.rank() != options_.root) return RangeResult{};
  std::vector<RangeResult> parts(static_cast<size_t>(comm_.size()));
  size_t id_offset = 0, distance_offset = 0;
  for (int r = 0; r < comm_.size(); ++r) {
    const std::vector<int64_t> per_query = as_values<int64_t>(all_hits, r * nq * sizeof(int64_t), nq);
    parts[r].lims.assign(1, 0);
    for (int64_t q = 0; q < nq; ++q) parts[r].lims.push_back(parts[r].lims.back() + per_query[q]);
    const size_t found = static_cast<size_t>(parts[r].lims.back());
    parts[r].ids = as_values<int64_t, ResultVector<int64_t>>(all_ids, id_offset, found);
    parts[r].distances = as_values<float, ResultVector<float>>(all_distances, distance_offset, found);
    id_offset += found * sizeof(int64_t);
    distance_offset += found * sizeof(float);
  }
  return merge_range(pool_, static_cast<Metric>(metric_), nq, parts);
}

int64_t DistIndex::remove(int64_t n, const int64_t* ids) {
  comm_.agree(attempt([&] {
                require(n >= 0, "n = ", n, " is negative");
                require(n == 0 || ids != nullptr, "ids is NULL");
              }),
              "remove");
  std::vector<std::vector<uint8_t>> send(static_cast<size_t>(comm_.size()));
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] >= 0) append_bytes(send[owner(ids[i])], ids + i, 1);
  std::vector<int64_t> received;
  const std::vector<uint8_t> bytes = comm_.exchange(send, received, "remove: routing ids");
  const std::vector<int64_t> mine = as_values<int64_t>(bytes, 0, bytes.size() / sizeof(int64_t));
  int64_t removed = 0;
  comm_.agree(attempt([&] {
                if (!mine.empty())
                  check(qv_index_remove(local_.get(), static_cast<int64_t>(mine.size()), mine.data(), &removed), "remove");
              }),
              "remove");
  return comm_.sum(removed, "remove");
}

void DistIndex::save(const std::string& prefix) const {
  comm_.agree(attempt([&] {
                check(qv_index_save(local_.get(), shard_path(prefix, comm_.rank(), comm_.size()).c_str()), "save");
              }),
              "save");
  const std::vector<int64_t> counts = comm_.all_gather(local_count(), "save");
  // The manifest last, written aside and renamed: it names only shards that are all on disk.
  comm_.agree(attempt([&] {
                if (comm_.rank() != 0) return;
                std::ostringstream text;
                text << kManifestMagic << "\nranks " << comm_.size() << "\ndim " << dim_ << "\nmetric " << metric_
                     << "\nmax_id " << max_id_ << "\n";
                for (int r = 0; r < comm_.size(); ++r) text << "shard " << counts[r] << "\n";
                text << "descriptor " << descriptor_ << "\n";
                const std::string path = prefix + ".manifest", temporary = path + ".tmp." + std::to_string(::getpid());
                {
                  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
                  out << text.str();
                  out.flush();
                  if (!out) fail(Status::io_error, "cannot write ", temporary);
                }
                if (std::rename(temporary.c_str(), path.c_str()) != 0) {
                  std::remove(temporary.c_str());
                  fail(Status::io_error, "cannot rename ", temporary, " to ", path);
                }
              }),
              "save: writing the manifest");
}

}  // namespace quiver::dist
