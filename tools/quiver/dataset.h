// Where vectors come from. One --dataset/--data/--queries argument may name:
//   fashion-mnist   the Debian package dataset-fashion-mnist (base = train 60 000, queries = t10k);
//                   QUIVER_FASHION_MNIST_DIR overrides its folder
//   synth-...       a standard synthetic size, generated in memory (see synth.h)
//   DIR             a `quiver gen` output folder: base.fvecs, query.fvecs, gt.ivecs (optional)
//   FILE            one vector file (.fvecs, .bvecs, .npy, IDX); its role is the caller's
#pragma once

#include <optional>
#include <string>

#include "matrix.h"
#include "synth.h"

namespace qvtool {

class DataSource {
 public:
  // Classifies spec; throws UsageError when it is none of the above (e.g. a missing file).
  explicit DataSource(const std::string &spec);

  const std::string &name() const { return name_; }
  // True when the source knows both a base and a query set (everything but a single FILE).
  bool is_dataset() const { return kind_ != Kind::File; }

  FloatMatrix base() const;
  FloatMatrix queries(int64_t max_rows = kAllRows) const;
  // Ground truth shipped with the data (gt.ivecs of a gen folder); nullopt when there is none.
  std::optional<IdMatrix> ground_truth(int64_t max_rows = kAllRows) const;

 private:
  enum class Kind { FashionMnist, Synth, Dir, File };
  Kind kind_;
  std::string spec_, name_;
  SynthSpec synth_;
};

std::string fashion_mnist_dir();

}  // namespace qvtool
