// The probe's stand-in for gemm::kernelSource()'s include mapping.
#include "../../templates/gemm/common.cuh"
