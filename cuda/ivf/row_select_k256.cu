// Row selection for k <= 256 (row_select_kernel.cuh).
#include "cuda/ivf/row_select_kernel.cuh"

QV_INSTANTIATE_ROW_SELECT(8, 4)
