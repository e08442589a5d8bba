// Selection kernels for k <= 512 (warp queue of 16 register(s) per lane, thread queue of 6).
#include "cuda/select/select_kernel.cuh"

QV_INSTANTIATE_SELECT(16, 6)
