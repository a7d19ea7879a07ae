# Link libraries per implementation (see dataset/CMakeLists.txt): naive ends in a cuBLAS bf16 GEMM,
# library is one cuBLASLt fp8 GEMM with block scaling.
set(D2K_LIBS_naive CUDA::cublas)
set(D2K_LIBS_library CUDA::cublasLt)
