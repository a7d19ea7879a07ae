# Link libraries per implementation (see dataset/CMakeLists.txt): naive's two batched GEMVs are
# cuBLAS strided-batched GEMMs, as PyTorch's matmul launches them.
set(D2K_LIBS_naive CUDA::cublas)
