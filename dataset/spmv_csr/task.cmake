# Link libraries per implementation (see dataset/CMakeLists.txt): the library target is cuSPARSE.
set(D2K_LIBS_library CUDA::cusparse)
