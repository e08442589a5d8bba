#include "dataset.h"

#include <cstdlib>
#include <filesystem>

#include "errors.h"
#include "idx_io.h"
#include "texmex_io.h"
#include "vector_file.h"

namespace fs = std::filesystem;

namespace qvtool {

static const char *const kFashionDefaultDir = "/usr/share/datasets/fashion-mnist";

std::string fashion_mnist_dir() {
  const char *env = std::getenv("QUIVER_FASHION_MNIST_DIR");
  return env && *env ? env : kFashionDefaultDir;
}

static std::string fashion_file(const char *name) {
  std::string path = fashion_mnist_dir() + "/" + name;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Failure("fashion-mnist: " + path +
                  " not found; install the Debian package dataset-fashion-mnist "
                  "(apt-get install dataset-fashion-mnist) or set QUIVER_FASHION_MNIST_DIR");
  return path;
}

DataSource::DataSource(const std::string &spec) : spec_(spec), name_(spec) {
  std::error_code ec;
  if (spec == "fashion-mnist") {
    kind_ = Kind::FashionMnist;
  } else if (auto s = synth_spec_by_name(spec)) {
    kind_ = Kind::Synth;
    synth_ = *s;
  } else if (fs::is_directory(spec, ec)) {
    kind_ = Kind::Dir;
    if (!fs::exists(spec + "/base.fvecs", ec) || !fs::exists(spec + "/query.fvecs", ec))
      throw UsageError(spec + ": not a data set folder (a `quiver gen` output has base.fvecs, "
                              "query.fvecs and gt.ivecs)");
    name_ = fs::path(spec).lexically_normal().filename().string();
    if (name_.empty()) name_ = fs::path(spec).lexically_normal().parent_path().filename().string();
  } else if (fs::is_regular_file(spec, ec)) {
    kind_ = Kind::File;
  } else {
    throw UsageError("'" + spec + "' is not a data set (fashion-mnist, synth-100k-128, "
                     "synth-1m-128, synth-10m-96), a `quiver gen` folder or a vector file");
  }
}

FloatMatrix DataSource::base() const {
  switch (kind_) {
    case Kind::FashionMnist: return read_idx_ubyte(fashion_file("train-images-idx3-ubyte.gz"));
    case Kind::Synth: return synth_generate(synth_, SynthPart::Base);
    case Kind::Dir: return read_fvecs(spec_ + "/base.fvecs");
    case Kind::File: return read_vectors(spec_);
  }
  return {};
}

FloatMatrix DataSource::queries(int64_t max_rows) const {
  FloatMatrix q;
  switch (kind_) {
    case Kind::FashionMnist: q = read_idx_ubyte(fashion_file("t10k-images-idx3-ubyte.gz"), max_rows); break;
    case Kind::Synth: q = synth_generate(synth_, SynthPart::Queries); break;
    case Kind::Dir: q = read_fvecs(spec_ + "/query.fvecs", max_rows); break;
    case Kind::File: q = read_vectors(spec_, max_rows); break;
  }
  q.truncate_rows(max_rows);
  return q;
}

std::optional<IdMatrix> DataSource::ground_truth(int64_t max_rows) const {
  std::error_code ec;
  if (kind_ != Kind::Dir || !fs::exists(spec_ + "/gt.ivecs", ec)) return std::nullopt;
  return read_ivecs(spec_ + "/gt.ivecs", max_rows);
}

}  // namespace qvtool
