// Writes the checked-in seed corpus of the fuzz targets: a small saved index of every kind for
// fuzz_load_buffer, a descriptor of every form for fuzz_descriptor, and small data files for the tool
// readers. Usage: make_seeds <tests/fuzz/corpus>. Output is deterministic (fixed data and seeds).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_context.h"

namespace {

constexpr int64_t kDim = 8;
constexpr int64_t kTrainRows = 300;  // enough for 256 PQ centroids a subspace
constexpr int64_t kRows = 40;        // stored: keeps each seed a few KB

void check(qv_status_t s, const char* what) {
  if (s != QV_OK) {
    std::fprintf(stderr, "make_seeds: %s: %s: %s\n", what, qv_status_string(s), qv_last_error_message());
    std::exit(1);
  }
}

void write_file(const std::string& path, const void* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::fprintf(stderr, "make_seeds: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::vector<float> vectors(int64_t rows, uint32_t seed) {
  std::vector<float> x(static_cast<size_t>(rows * kDim));
  uint32_t state = seed;
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;  // a fixed LCG: the same bytes on every machine
    v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return x;
}

struct Seed {
  const char* name;
  const char* descriptor;
  qv_metric_t metric;
  bool custom_ids;
  bool remove_one;
};

void save_index(const std::string& dir, const Seed& seed) {
  qv_index_t* index = nullptr;
  check(qv_index_create(qvfuzz::cpu_context(), seed.descriptor, kDim, seed.metric, &index), seed.name);
  const bool needs_training = std::strstr(seed.descriptor, "IVF") != nullptr;
  if (needs_training) {
    const std::vector<float> train = vectors(kTrainRows, 1);
    check(qv_index_train(index, kTrainRows, train.data()), seed.name);
  }
  const std::vector<float> x = vectors(kRows, 2);
  std::vector<int64_t> ids(kRows);
  for (int64_t i = 0; i < kRows; ++i) ids[i] = seed.custom_ids ? 1000 + 7 * i : i;
  check(qv_index_add(index, kRows, x.data(), seed.custom_ids ? ids.data() : nullptr), seed.name);
  if (seed.remove_one) check(qv_index_remove(index, 1, &ids[3], nullptr), seed.name);
  void* data = nullptr;
  size_t size = 0;
  check(qv_index_save_buffer(index, &data, &size), seed.name);
  write_file(dir + "/" + seed.name + ".qvix", data, size);
  qv_buffer_free(data);
  qv_index_free(index);
}

// Byte strings for edit-distance indexes: kRows words of 0 .. 11 bytes, every byte value possible.
void save_string_index(const std::string& dir, const char* name, const char* descriptor, bool remove_one) {
  qv_index_t* index = nullptr;
  check(qv_index_create(qvfuzz::cpu_context(), descriptor, 0, QV_METRIC_EDIT, &index), name);
  std::vector<int64_t> offsets{0};
  std::vector<uint8_t> bytes;
  uint32_t state = 5;
  for (int64_t i = 0; i < kRows; ++i) {
    state = state * 1664525u + 1013904223u;
    for (uint32_t j = 0; j < (state >> 28) % 12; ++j) bytes.push_back(static_cast<uint8_t>((state >> (j % 24)) & 0xFF));
    offsets.push_back(static_cast<int64_t>(bytes.size()));
  }
  check(qv_index_add_strings(index, kRows, offsets.data(), bytes.data(), nullptr), name);
  const int64_t removed = 3;
  if (remove_one) check(qv_index_remove(index, 1, &removed, nullptr), name);
  void* data = nullptr;
  size_t size = 0;
  check(qv_index_save_buffer(index, &data, &size), name);
  write_file(dir + "/" + name + ".qvix", data, size);
  qv_buffer_free(data);
  qv_index_free(index);
}

// An untrained IVF index and an empty graph save too: both are states a file can hold.
void save_empty(const std::string& dir, const char* name, const char* descriptor) {
  qv_index_t* index = nullptr;
  check(qv_index_create(qvfuzz::cpu_context(), descriptor, kDim, QV_METRIC_L2, &index), name);
  void* data = nullptr;
  size_t size = 0;
  check(qv_index_save_buffer(index, &data, &size), name);
  write_file(dir + "/" + name + ".qvix", data, size);
  qv_buffer_free(data);
  qv_index_free(index);
}

void le32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// TEXMEX: 3 rows of 4 values; the first byte picks the reader (0 fvecs, 1 bvecs, 2 ivecs).
void texmex_seeds(const std::string& dir) {
  for (int reader = 0; reader < 3; ++reader) {
    std::vector<uint8_t> b = {static_cast<uint8_t>(reader)};
    for (int r = 0; r < 3; ++r) {
      le32(b, 4);
      for (int j = 0; j < 4; ++j) {
        if (reader == 1) {
          b.push_back(static_cast<uint8_t>(r * 4 + j));
        } else if (reader == 0) {
          float v = 0.5f * static_cast<float>(r * 4 + j);
          uint32_t u;
          std::memcpy(&u, &v, 4);
          le32(b, u);
        } else {
          le32(b, static_cast<uint32_t>(r * 4 + j));
        }
      }
    }
    static const char* names[] = {"fvecs", "bvecs", "ivecs"};
    write_file(dir + "/" + names[reader], b.data(), b.size());
  }
}

// .npy version 1: 3 x 4 of each dtype the reader takes; the first byte: even vectors, odd ids.
void npy_seeds(const std::string& dir) {
  struct Type { const char* descr; int bytes; };
  static const Type types[] = {{"<f4", 4}, {"<f8", 8}, {"|u1", 1}, {"<i4", 4}, {"<i8", 8}};
  for (const Type& t : types) {
    for (int ids = 0; ids < 2; ++ids) {
      if (ids && (t.descr[1] == 'f')) continue;
      std::string header = std::string("{'descr': '") + t.descr + "', 'fortran_order': False, 'shape': (3, 4), }";
      while ((10 + header.size() + 1) % 64 != 0) header += ' ';
      header += '\n';
      std::vector<uint8_t> b = {static_cast<uint8_t>(ids)};
      const char magic[] = "\x93NUMPY\x01\x00";
      b.insert(b.end(), magic, magic + 8);
      b.push_back(static_cast<uint8_t>(header.size() & 0xff));
      b.push_back(static_cast<uint8_t>(header.size() >> 8));
      b.insert(b.end(), header.begin(), header.end());
      for (int i = 0; i < 12; ++i) {
        std::vector<uint8_t> v(static_cast<size_t>(t.bytes), 0);
        if (t.descr[1] == 'f' && t.bytes == 4) { float f = float(i); std::memcpy(v.data(), &f, 4); }
        else if (t.descr[1] == 'f') { double d = double(i); std::memcpy(v.data(), &d, 8); }
        else v[0] = static_cast<uint8_t>(i);
        b.insert(b.end(), v.begin(), v.end());
      }
      std::string name = std::string(ids ? "ids_" : "vectors_") + (t.descr + 1);
      write_file(dir + "/" + name, b.data(), b.size());
    }
  }
}

// IDX: 3 images of 2 x 2 unsigned bytes (raw; gzip input is left to the fuzzer's mutations).
void idx_seeds(const std::string& dir) {
  std::vector<uint8_t> b = {0};
  b.insert(b.end(), {0, 0, 0x08, 3});
  be32(b, 3);
  be32(b, 2);
  be32(b, 2);
  for (int i = 0; i < 12; ++i) b.push_back(static_cast<uint8_t>(i * 20));
  write_file(dir + "/images3x2x2", b.data(), b.size());
}

void descriptor_seeds(const std::string& dir) {
  static const char* forms[] = {"Flat", "IVF16,Flat", "IVF16,Flat,HostIds", "IVF16,PQ4", "IVF16,PQ4,Refine",
                                "IVF16,PQ4,Refine,HostIds", "OPQ4,IVF16,PQ4", "OPQ4,IVF16,PQ4,Refine",
                                "Graph8", "Graph8,K16", "LC8", "SSS0.5", "SSS0.5,P4", "Sharded2,Flat",
                                "Replicated,IVF16,Flat", "Replicated2,Sharded3,Graph8", "Routed4,LC8"};
  int n = 0;
  for (const char* form : forms) {
    // Byte 0: dim - 1 (15: dim 16, which every M above divides); byte 1: the metric (edit distance
    // for the metric-space kinds).
    const bool metric_space = std::strstr(form, "LC") != nullptr || std::strncmp(form, "SSS", 3) == 0;
    std::string bytes = std::string("\x0f") + static_cast<char>(metric_space ? QV_METRIC_EDIT : n % 3) + form;
    write_file(dir + "/" + std::to_string(n++) + "_" + form, bytes.data(), bytes.size());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <corpus dir with one folder a target>\n");
    return 2;
  }
  const std::string root = argv[1];
  const std::string load = root + "/fuzz_load_buffer";
  static const Seed seeds[] = {
      {"flat", "Flat", QV_METRIC_L2, false, false},
      {"flat_ids_removed", "Flat", QV_METRIC_INNER_PRODUCT, true, true},
      {"ivf_flat", "IVF16,Flat", QV_METRIC_L2, false, false},
      {"ivf_flat_cosine_ids", "IVF16,Flat", QV_METRIC_COSINE, true, true},
      {"ivf_pq", "IVF16,PQ4", QV_METRIC_L2, false, false},
      {"opq_ivf_pq", "OPQ4,IVF16,PQ4", QV_METRIC_L2, true, false},
      {"ivf_pq_refine", "IVF16,PQ4,Refine", QV_METRIC_INNER_PRODUCT, false, true},
      {"ivf_flat_hostids", "IVF16,Flat,HostIds", QV_METRIC_L2, true, true},
      {"graph8", "Graph8", QV_METRIC_L2, false, false},
      {"graph8_ids_removed", "Graph8", QV_METRIC_COSINE, true, true},
      {"lc4_l1", "LC4", QV_METRIC_L1, true, true},
      {"sss_linf", "SSS0.5,P6", QV_METRIC_LINF, false, false},
      {"flat_l1", "Flat", QV_METRIC_L1, false, true},
      // The multi-device kinds (cpp/multi/), logical shards on the CPU.
      {"sharded3_flat", "Sharded3,Flat", QV_METRIC_L2, true, true},
      {"replicated2_ivf_flat", "Replicated2,IVF16,Flat", QV_METRIC_L2, false, false},
      {"replicated2_sharded2_ivf_pq", "Replicated2,Sharded2,IVF16,PQ4", QV_METRIC_L2, true, true},
      {"routed2_lc4_l1", "Routed2,LC4", QV_METRIC_L1, true, true},
  };
  for (const Seed& seed : seeds) save_index(load, seed);
  save_empty(load, "ivf_pq_untrained", "IVF16,PQ4");
  save_empty(load, "graph8_empty", "Graph8");
  save_string_index(load, "strings_flat", "Flat", false);
  save_string_index(load, "strings_lc4", "LC4", true);
  save_string_index(load, "strings_sss", "SSS0.4", true);
  descriptor_seeds(root + "/fuzz_descriptor");
  texmex_seeds(root + "/fuzz_texmex");
  npy_seeds(root + "/fuzz_npy");
  idx_seeds(root + "/fuzz_idx");
  return 0;
}
