#include "cpp/select/topk.h"

#include <cstddef>
#include <limits>
#include <utility>

namespace quiver {

TopK::TopK(int64_t k, float* keys, int64_t* indices, const IdFilter* filter, const int64_t* ids)
    : k_(k), keys_(keys), indices_(indices), filter_(filter), ids_(ids) {
  sink_.threshold = std::numeric_limits<float>::infinity();
  sink_.accept = &TopK::accept;
}

void TopK::accept(ScanSink* sink, float key, int64_t index) {
  // sink_ is the first member of a standard-layout-like class; the cast recovers the owner.
  reinterpret_cast<TopK*>(sink)->offer(key, index);
}

bool TopK::worse(int64_t a, int64_t b) const {
  return keys_[a] > keys_[b] || (keys_[a] == keys_[b] && indices_[a] > indices_[b]);
}

void TopK::sift_up(int64_t i) {
  while (i > 0) {
    const int64_t parent = (i - 1) / 2;
    if (!worse(i, parent)) break;
    std::swap(keys_[i], keys_[parent]);
    std::swap(indices_[i], indices_[parent]);
    i = parent;
  }
}

void TopK::sift_down(int64_t i) {
  for (;;) {
    const int64_t left = 2 * i + 1, right = left + 1;
    int64_t largest = i;
    if (left < size_ && worse(left, largest)) largest = left;
    if (right < size_ && worse(right, largest)) largest = right;
    if (largest == i) return;
    std::swap(keys_[i], keys_[largest]);
    std::swap(indices_[i], indices_[largest]);
    i = largest;
  }
}

void TopK::offer(float key, int64_t index) {
  if (k_ == 0) return;
  if (size_ == k_ && !(key < keys_[0] || (key == keys_[0] && index < indices_[0]))) return;
  if (filter_ && !filter_->allows(ids_ ? ids_[index] : index)) return;
  if (size_ < k_) {
    keys_[size_] = key;
    indices_[size_] = index;
    sift_up(size_++);
  } else {
    keys_[0] = key;
    indices_[0] = index;
    sift_down(0);
  }
  if (size_ == k_) sink_.threshold = keys_[0];
}

}  // namespace quiver
