#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "exec/error.h"
#include "exec/loader.h"
#include "exec_test_util.h"

namespace d2k {
namespace {

const std::filesystem::path kFixtures = test::fixture_lib_dir(D2K_EXEC_FIXTURE_DIR);

std::string load_error(const std::filesystem::path& so) {
  try {
    load_impl(so);
  } catch (const ExecError& e) {
    EXPECT_EQ(e.status, Status::INVALID_SUBMISSION);
    return e.what();
  }
  ADD_FAILURE() << "loading " << so << " should have failed";
  return "";
}

TEST(Loader, LoadsAndCallsAHostImplementation) {
  LoadedImpl impl = load_impl(kFixtures / "host_good.so");
  ASSERT_TRUE(impl.loaded());
  EXPECT_EQ(impl.abi_version(), D2K_ABI_VERSION);

  // c = a + b on host tensors, random-ish values.
  const int64_t n = 37;
  std::vector<float> a(n), b(n), c(n, -1.f);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.37f * float(i * i % 11) - 1.5f;
    b[i] = 2.25f - 0.11f * float(i * 7 % 13);
  }
  int64_t shape[1] = {n};
  auto host = [&](float* p) {
    DLTensor t{};
    t.data = p;
    t.device = {kDLCPU, 0};
    t.ndim = 1;
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape;
    return t;
  };
  DLTensor ins[2] = {host(a.data()), host(b.data())};
  DLTensor outs[1] = {host(c.data())};
  const char* in_names[2] = {"a", "b"};
  const char* out_names[1] = {"c"};
  char err[256] = {0};
  d2k_args args{};
  args.abi_version = D2K_ABI_VERSION;
  args.num_inputs = 2;
  args.num_outputs = 1;
  args.inputs = ins;
  args.input_names = in_names;
  args.outputs = outs;
  args.output_names = out_names;
  args.error = err;
  args.error_capacity = sizeof(err);
  uint64_t ws = 0;
  ASSERT_EQ(impl.workspace_size(&args, &ws), D2K_OK);
  EXPECT_EQ(ws, 64u);
  ASSERT_EQ(impl.run(&args), D2K_OK) << err;
  for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(c[i], a[i] + b[i]) << i;

  // A missing input name comes back as a bad-arguments status with a message.
  const char* wrong_names[2] = {"a", "x"};
  args.input_names = wrong_names;
  EXPECT_EQ(impl.run(&args), D2K_ERR_BAD_ARGS);
  EXPECT_NE(std::string(err).find("no input named 'b'"), std::string::npos) << err;

  // Moving keeps the library loaded.
  LoadedImpl moved = std::move(impl);
  EXPECT_FALSE(impl.loaded());
  EXPECT_TRUE(moved.loaded());
  EXPECT_EQ(moved.abi_version(), D2K_ABI_VERSION);
}

TEST(Loader, MissingEntryPointIsInvalidSubmission) {
  std::string msg = load_error(kFixtures / "missing_entry.so");
  EXPECT_NE(msg.find("does not export d2k_workspace_size"), std::string::npos) << msg;
}

TEST(Loader, WrongAbiVersionIsInvalidSubmission) {
  std::string msg = load_error(kFixtures / "wrong_abi.so");
  EXPECT_NE(msg.find("ABI version mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reports 99"), std::string::npos) << msg;
}

TEST(Loader, UnloadableFilesAreInvalidSubmissions) {
  EXPECT_NE(load_error(kFixtures / "no_such_library.so").find("no such file"), std::string::npos);
  test::TempDir tmp;
  std::ofstream(tmp.path() / "text.so") << "not a library";
  EXPECT_NE(load_error(tmp.path() / "text.so").find("cannot be loaded"), std::string::npos);
  // Undefined imports (the forbidden fixture never links cuBLAS) fail at RTLD_NOW.
  std::string msg = load_error(kFixtures / "forbidden.so");
  EXPECT_NE(msg.find("undefined symbol"), std::string::npos) << msg;
}

}  // namespace
}  // namespace d2k
