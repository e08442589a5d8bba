#include "cpp/multi/composite_index.h"

#include <algorithm>

#include "cpp/core/error.h"
#include "cpp/index/factory.h"
#include "cpp/index/id_map.h"
#include "cpp/io/bytes.h"
#include "cpp/multi/replicated_index.h"
#include "cpp/multi/routed_index.h"
#include "cpp/multi/run_parts.h"
#include "cpp/multi/sharded_index.h"

namespace quiver {

namespace {

// The part count a new composite starts with: the descriptor's, else one per device (per group of
// S devices for the replicas of a "Sharded<S>" kind).
int64_t initial_parts(const MultiSpec& spec, int64_t devices) {
  if (spec.parts > 0) return spec.parts;
  if (spec.mode == MultiSpec::Mode::sharded || !is_multi_descriptor(spec.child)) return devices;
  return std::max<int64_t>(1, devices / parse_multi_descriptor(spec.child).parts);
}

}  // namespace

CompositeIndex::CompositeIndex(Context& context, std::vector<Context*> devices, std::string descriptor,
                               int64_t dim, Metric metric, MultiSpec spec)
    : Index(context, std::move(descriptor), dim, metric), devices_(std::move(devices)), spec_(std::move(spec)) {
  require(!devices_.empty(), "a multi-device index needs at least one device");
  const int64_t parts = std::min(initial_parts(spec_, static_cast<int64_t>(devices_.size())), kMaxParts);
  for (int64_t p = 0; p < parts; ++p) parts_.push_back(make_part(p, parts));
}

std::vector<Context*> CompositeIndex::devices_of_part(int64_t p, int64_t parts) const {
  const int64_t devices = static_cast<int64_t>(devices_.size());
  if (!replicated() || parts > devices) return {devices_[p % devices]};
  return std::vector<Context*>(devices_.begin() + p * devices / parts, devices_.begin() + (p + 1) * devices / parts);
}

std::unique_ptr<Index> CompositeIndex::make_part(int64_t p, int64_t parts) const {
  const std::vector<Context*> devices = devices_of_part(p, parts);
  if (is_multi_descriptor(spec_.child)) return create_multi_index(context(), devices, spec_.child, dim(), metric());
  return create_index(*devices.front(), spec_.child, dim(), metric());
}

std::unique_ptr<Index> CompositeIndex::copy_as_part(const Index& source, int64_t p, int64_t parts) const {
  ByteWriter out;
  source.save_payload(out);
  ByteReader in(out.bytes().data(), out.bytes().size());
  std::unique_ptr<Index> copy = make_part(p, parts);
  copy->load_payload(in, source.count());
  return copy;
}

void CompositeIndex::replace_parts(std::unique_ptr<Index> first, int64_t parts) {
  std::vector<std::unique_ptr<Index>> made(static_cast<size_t>(parts));
  run_parts_or_throw(parts - 1, [&](int64_t p) { made[p + 1] = copy_as_part(*first, p + 1, parts); });
  made[0] = std::move(first);
  parts_.swap(made);
}

MemoryUse CompositeIndex::memory() const {
  MemoryUse use;
  for (const auto& part : parts_) {
    const MemoryUse one = part->memory();
    use.host_bytes += one.host_bytes;
    use.device_bytes += one.device_bytes;
  }
  return use;
}

const int64_t* CompositeIndex::new_ids(int64_t n, const int64_t* ids, std::vector<int64_t>& assigned) const {
  return check_new_ids(n, ids, max_id_, [&](int64_t id) { return holds_id(id); }, assigned);
}

void CompositeIndex::note_added(int64_t n, const int64_t* ids) {
  for (int64_t i = 0; i < n; ++i) max_id_ = std::max(max_id_, ids[i]);
}

void CompositeIndex::do_train(int64_t n, const float* x) {
  if (count() > 0) {
    // A part holding data answers as the kind does: a kind with a model refuses to train again,
    // one without ignores it. Parts without data are left alone (a model must stay shared).
    for (const auto& part : parts_)
      if (part->count() > 0) part->train(n, x);
    return;
  }
  // One part learns the model; the others copy it, so every shard encodes alike.
  const int64_t parts = part_count();
  std::unique_ptr<Index> first = make_part(0, parts);
  first->train(n, x);
  replace_parts(std::move(first), parts);
}

// The composite's public call has validated the input (and normalised it for cosine): the parts'
// own do_* members take it as it is, without checking it again.
void CompositeIndex::add_to(Index& part, const Objects& x, const int64_t* ids) {
  if (x.are_strings()) {
    part.do_add_strings(x.strings, ids);
  } else {
    part.do_add(x.n, x.vectors, ids);
  }
}

std::vector<std::exception_ptr> CompositeIndex::add_to_parts(const std::vector<Objects>& objects,
                                                             const std::vector<const int64_t*>& ids) {
  const int64_t parts = part_count();
  std::vector<std::exception_ptr> errors = run_parts(parts, [&](int64_t p) {
    if (objects[p].n > 0) add_to(*parts_[p], objects[p], ids[p]);
  });
  if (std::any_of(errors.begin(), errors.end(), [](const auto& e) { return e != nullptr; }))
    for (int64_t p = 0; p < parts; ++p)
      if (!errors[p] && objects[p].n > 0) parts_[p]->remove(objects[p].n, ids[p]);
  return errors;
}

void CompositeIndex::rethrow_first(const std::vector<std::exception_ptr>& errors) {
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

void CompositeIndex::search_in(const Index& part, const Objects& queries, int64_t k, const SearchOptions& options,
                               float* distances, int64_t* ids) {
  if (queries.are_strings()) {
    part.do_search_strings(queries.strings, k, options, distances, ids);
  } else {
    part.do_search(queries.n, queries.vectors, k, options, distances, ids);
  }
}

RangeResult CompositeIndex::range_search_in(const Index& part, const Objects& queries, float radius,
                                            const SearchOptions& options) {
  if (queries.are_strings()) return part.do_range_search_strings(queries.strings, radius, options);
  return part.do_range_search(queries.n, queries.vectors, radius, options);
}

void CompositeIndex::do_add(int64_t n, const float* x, const int64_t* ids) {
  add_batch(Objects::of_vectors(n, dim(), x), ids);
}

void CompositeIndex::do_add_strings(const Strings& x, const int64_t* ids) { add_batch(Objects::of_strings(x), ids); }

void CompositeIndex::search_objects(const Objects& queries, int64_t k, const SearchOptions& caller_options,
                                    float* distances, int64_t* ids) const {
  // A composite reports no rows done: its parts' reports count rows of their own slices.
  SearchOptions options = caller_options;
  options.rows_done = nullptr;
  search_batch(queries, k, options, distances, ids);
}

void CompositeIndex::do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                               float* distances, int64_t* ids) const {
  search_objects(Objects::of_vectors(nq, dim(), queries), k, options, distances, ids);
}

void CompositeIndex::do_search_strings(const Strings& queries, int64_t k, const SearchOptions& options,
                                       float* distances, int64_t* ids) const {
  search_objects(Objects::of_strings(queries), k, options, distances, ids);
}

RangeResult CompositeIndex::do_range_search(int64_t nq, const float* queries, float radius,
                                            const SearchOptions& options) const {
  return range_search_batch(Objects::of_vectors(nq, dim(), queries), radius, options);
}

RangeResult CompositeIndex::do_range_search_strings(const Strings& queries, float radius,
                                                    const SearchOptions& options) const {
  return range_search_batch(Objects::of_strings(queries), radius, options);
}

void CompositeIndex::save_payload(ByteWriter& out) const {
  // Replicas are identical: one is stored, and loading copies it to every device.
  const int64_t stored = replicated() ? 1 : part_count();
  out.u32(static_cast<uint32_t>(stored));
  out.i64(max_id_);
  for (int64_t p = 0; p < stored; ++p) {
    out.i64(parts_[p]->count());
    parts_[p]->save_payload(out);
  }
  save_extra(out);
}

void CompositeIndex::load_payload(ByteReader& in, int64_t count) {
  const int64_t stored = in.u32("part count");
  const int64_t max_id = in.i64("largest id");
  if (stored < 1 || stored > kMaxParts) fail(Status::corrupt_data, "corrupt index: ", stored, " parts");
  if (replicated() && stored != 1) fail(Status::corrupt_data, "corrupt index: ", stored, " stored replicas");
  if (!replicated() && spec_.parts != 0 && stored != spec_.parts)
    fail(Status::corrupt_data, "corrupt index: ", stored, " shards stored for \"", descriptor(), "\"");
  if (max_id < -1) fail(Status::corrupt_data, "corrupt index: largest id ", max_id);

  // Shards keep their number and spread over this context's devices (several to a device when there
  // are fewer devices than shards); replicas are one per device of this context.
  const int64_t parts = replicated() ? part_count() : stored;
  std::vector<std::unique_ptr<Index>> loaded;
  int64_t total = 0;
  for (int64_t p = 0; p < stored; ++p) {
    const int64_t part_count = in.i64("part's count");
    if (part_count < 0 || static_cast<uint64_t>(part_count) > in.remaining() / sizeof(int64_t))
      fail(Status::corrupt_data, "corrupt index: part ", p, " count ", part_count, " exceeds the data");
    loaded.push_back(make_part(p, parts));
    loaded.back()->load_payload(in, part_count);
    total += part_count;
  }
  if (total != count)
    fail(Status::corrupt_data, "corrupt index: the parts hold ", total, " objects, the header says ", count);
  max_id_ = max_id;
  if (replicated()) {
    replace_parts(std::move(loaded.front()), parts);
  } else {
    parts_.swap(loaded);
  }
  load_extra(in);
}

std::unique_ptr<Index> create_multi_index(Context& context, const std::vector<Context*>& devices,
                                          const std::string& descriptor, int64_t dim, Metric metric) {
  const MultiSpec spec = parse_multi_descriptor(descriptor);
  if (spec.mode == MultiSpec::Mode::sharded)
    return std::make_unique<ShardedIndex>(context, devices, descriptor, dim, metric, spec);
  if (spec.mode == MultiSpec::Mode::routed)
    return std::make_unique<RoutedIndex>(context, devices, descriptor, dim, metric, spec);
  return std::make_unique<ReplicatedIndex>(context, devices, descriptor, dim, metric, spec);
}

}  // namespace quiver
