// The one CUDA error type (core/cuda_error.h): stickiness, message, and that the measurement
// library's checks throw it (issue 10: a sticky fault used to surface as a recoverable
// measure_error, and the worker reused a broken context).
#include <gtest/gtest.h>

#include <string>

#include "core/cuda_error.h"
#include "measure/error.h"

namespace d2k {
namespace {

TEST(CudaError, StickyFaultsAreMarked) {
  EXPECT_TRUE(is_sticky(cudaErrorIllegalAddress));
  EXPECT_TRUE(is_sticky(cudaErrorLaunchFailure));
  EXPECT_TRUE(is_sticky(cudaErrorIllegalInstruction));
  EXPECT_TRUE(is_sticky(cudaErrorMisalignedAddress));
  EXPECT_TRUE(is_sticky(cudaErrorAssert));
  EXPECT_FALSE(is_sticky(cudaErrorInvalidValue));
  EXPECT_FALSE(is_sticky(cudaErrorInvalidConfiguration));
  EXPECT_FALSE(is_sticky(cudaErrorMemoryAllocation));
  const CudaError e(cudaErrorIllegalAddress, "sample 7: device error after the call");
  EXPECT_TRUE(e.sticky);
  EXPECT_EQ(e.code, cudaErrorIllegalAddress);
  const std::string what = e.what();
  EXPECT_NE(what.find("sample 7"), std::string::npos);
  EXPECT_NE(what.find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_NE(what.find("sticky"), std::string::npos);
  EXPECT_FALSE(CudaError(cudaErrorInvalidValue, "x").sticky);
}

TEST(CudaError, CheckMacroThrowsTheOneType) {
  try {
    D2K_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no throw";
  } catch (const CudaError& e) {
    EXPECT_FALSE(e.sticky);
    EXPECT_NE(std::string(e.what()).find("test_cuda_error.cpp"), std::string::npos);
  }
  EXPECT_NO_THROW(D2K_CUDA_CHECK(cudaSuccess));
  // Not a measure_error: a catch of measure_error (recoverable) must not swallow a CUDA fault.
  bool as_measure_error = false;
  try {
    D2K_CUDA_CHECK(cudaErrorIllegalAddress);
  } catch (const measure::measure_error&) {
    as_measure_error = true;
  } catch (const CudaError& e) {
    EXPECT_TRUE(e.sticky);
  }
  EXPECT_FALSE(as_measure_error);
}

}  // namespace
}  // namespace d2k
