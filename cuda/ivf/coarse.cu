#include "cuda/ivf/coarse.h"

#include "cpp/core/error.h"
#include "cuda/flat/compute_modes.h"
#include "cuda/ivf/ivf_kernels.h"
#include "cuda/select/select.h"

namespace quiver::gpu {

namespace {

// Tile rows start 16-byte aligned (the selection's float4 loads).
int64_t tile_ld(int64_t nlist) { return (nlist + 3) / 4 * 4; }

}  // namespace

int64_t coarse_tile_floats(const IvfDevice& ivf, int64_t rows) { return rows * tile_ld(ivf.nlist); }

int64_t coarse_workspace_bytes(Resources& resources, const IvfDevice& ivf, int64_t rows, int64_t nprobe) {
  if (nprobe == ivf.nlist) return 0;
  return select_workspace_bytes<int32_t>(resources.limits(), rows, ivf.nlist, nprobe);
}

void coarse_search(Resources& resources, int slot, const IvfDevice& ivf, int64_t rows, const float* x, int64_t nprobe,
                   float* tile, void* workspace, float* keys, int32_t* lists) {
  if (rows == 0) return;
  const int64_t ld = tile_ld(ivf.nlist);
  const bool l2 = ivf.l2();
  distance_gemm(resources.blas(slot), ComputeMode::fp32, ivf.nlist, rows, ivf.dim, l2 ? -2.f : -1.f,
                ivf.centroids.get(), ivf.dim, x, ivf.dim, tile, ld);
  const float* norms = l2 ? ivf.centroid_norms.get() : nullptr;
  if (nprobe == ivf.nlist) {
    // Every list: no selection (also past the selection's largest k).
    launch_probe_all(tile, ld, rows, ivf.nlist, norms, keys, lists, resources.stream(slot));
    return;
  }
  if (nprobe > kMaxSelectK)
    fail(Status::unsupported, "nprobe = ", nprobe, " is above ", kMaxSelectK, " (and below nlist = ", ivf.nlist, ")");
  SelectRequest<int32_t> request;
  request.keys = tile;
  request.ld = ld;
  request.rows = rows;
  request.cols = ivf.nlist;
  request.k = nprobe;
  request.column_bias = norms;
  request.out_keys = keys;
  request.out_ids = lists;
  select_rows(request, resources.limits(), workspace, resources.stream(slot));
}

}  // namespace quiver::gpu
