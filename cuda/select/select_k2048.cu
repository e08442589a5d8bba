// Selection kernels for k <= 2048 (warp queue of 64 register(s) per lane, thread queue of 8).
#include "cuda/select/select_kernel.cuh"

QV_INSTANTIATE_SELECT(64, 8)
