// What the sharded and replicated kinds share (DESIGN.md, "Several GPUs"): parts that are whole
// indexes of the child descriptor, each on one of the context's devices (or, for the replicas of a
// "Replicated,Sharded<S>" index, a sharded index over a group of devices); ids that stay global; one
// file for all parts that loads on any device count.
//
// Payload: u32 stored parts | i64 largest id held | per stored part: i64 count, the part's payload |
// the mode's extra section (save_extra: the routes of a routed index; nothing for the others).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "cpp/index/index.h"
#include "cpp/multi/object_rows.h"
#include "cpp/multi/multi_spec.h"

namespace quiver {

class CompositeIndex : public Index {
 public:
  // devices: the single-device contexts the parts are spread over (a context's devices()).
  CompositeIndex(Context& context, std::vector<Context*> devices, std::string descriptor, int64_t dim,
                 Metric metric, MultiSpec spec);

  bool is_trained() const override { return parts_.front()->is_trained(); }
  MemoryUse memory() const override;
  DeviceKind device() const override { return context().device(); }
  // Parts get host memory: each reads it onto its own device.
  bool reads_device_memory() const override { return false; }

  int64_t part_count() const { return static_cast<int64_t>(parts_.size()); }
  const Index& part(int64_t p) const { return *parts_[p]; }

  void save_payload(ByteWriter& out) const override;
  void load_payload(ByteReader& in, int64_t count) override;

 protected:
  void do_train(int64_t n, const float* x) override;
  void do_add(int64_t n, const float* x, const int64_t* ids) override;
  void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options, float* distances,
                 int64_t* ids) const override;
  RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                              const SearchOptions& options) const override;
  void do_add_strings(const Strings& x, const int64_t* ids) override;
  void do_search_strings(const Strings& queries, int64_t k, const SearchOptions& options, float* distances,
                         int64_t* ids) const override;
  RangeResult do_range_search_strings(const Strings& queries, float radius,
                                      const SearchOptions& options) const override;

  // The mode's own parts of add and search; x and queries are host memory, outputs host memory.
  virtual void add_batch(const Objects& x, const int64_t* ids) = 0;
  virtual void search_batch(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                            int64_t* ids) const = 0;
  virtual RangeResult range_search_batch(const Objects& queries, float radius, const SearchOptions& options) const = 0;
  bool replicated() const { return spec_.mode == MultiSpec::Mode::replicated; }
  // What a mode stores besides its parts (after them in the payload).
  virtual void save_extra(ByteWriter&) const {}
  virtual void load_extra(ByteReader&) {}
  // New ids for n objects: ids checked (unique, >= 0, none held) or, for nullptr, the consecutive ids
  // after the largest ever held.
  const int64_t* new_ids(int64_t n, const int64_t* ids, std::vector<int64_t>& assigned) const;
  void note_added(int64_t n, const int64_t* ids);
  // A copy of `source` (via its payload) as part p of `parts`.
  std::unique_ptr<Index> copy_as_part(const Index& source, int64_t p, int64_t parts) const;

  // Adds objects[p] with ids[p] to part p, every part at once (a part given no objects is skipped).
  // If any part fails, the parts that took theirs give them back: nothing is half-added. Returns each
  // part's error, nullptr where it succeeded.
  std::vector<std::exception_ptr> add_to_parts(const std::vector<Objects>& objects,
                                               const std::vector<const int64_t*>& ids);
  // Rethrows the first of errors, if there is one.
  static void rethrow_first(const std::vector<std::exception_ptr>& errors);

  // Calls on one part, for vectors or strings alike.
  static void search_in(const Index& part, const Objects& queries, int64_t k, const SearchOptions& options,
                        float* distances, int64_t* ids);
  static RangeResult range_search_in(const Index& part, const Objects& queries, float radius,
                                     const SearchOptions& options);

  std::vector<Context*> devices_;
  MultiSpec spec_;
  std::vector<std::unique_ptr<Index>> parts_;
  int64_t max_id_ = -1;

 private:
  static void add_to(Index& part, const Objects& x, const int64_t* ids);
  // The devices part p of `parts` runs on: one for a shard, a group for a replica of a sharded kind.
  std::vector<Context*> devices_of_part(int64_t p, int64_t parts) const;
  // An empty index as part p of `parts`.
  std::unique_ptr<Index> make_part(int64_t p, int64_t parts) const;
  // Parts p >= 1 as copies of `first`, then all committed: nothing changes if a copy fails.
  void replace_parts(std::unique_ptr<Index> first, int64_t parts);
  void search_objects(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                      int64_t* ids) const;
};

// A "Sharded..." or "Replicated..." index over the given devices (a context's devices(), or a group
// of them). Throws invalid_argument for a malformed descriptor.
std::unique_ptr<Index> create_multi_index(Context& context, const std::vector<Context*>& devices,
                                          const std::string& descriptor, int64_t dim, Metric metric);

}  // namespace quiver
