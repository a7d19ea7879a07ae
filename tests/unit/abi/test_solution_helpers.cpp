// The helpers every implementation uses instead of its own copy: d2k::expect_tensor (and the
// checked d2k::input/output overloads), d2k::Workspace, and D2K_ENTRY's status mapping.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "d2k/solution.h"

namespace {

struct HostTensor {
  std::vector<int64_t> shape, strides;
  DLTensor t{};
  HostTensor(std::vector<int64_t> s, DLDataType dt, DLDeviceType dev = kDLCPU) : shape(std::move(s)) {
    t.device = {dev, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = dt;
    t.shape = shape.data();
  }
};

std::string message_of(const HostTensor& h, const char* name, DLDeviceType dev, DLDataType dt,
                       std::initializer_list<int64_t> shape) {
  try {
    d2k::expect_tensor(h.t, name, dev, dt, shape);
  } catch (const d2k::abi_error& e) {
    return e.what();
  }
  return "";
}

TEST(ExpectTensor, AcceptsTheDeclaredTensor) {
  HostTensor x({4, 8}, d2k::dl::bf16);
  EXPECT_NO_THROW(d2k::expect_tensor(x.t, "x", kDLCPU, d2k::dl::bf16, {4, 8}));
  x.strides = {8, 1};
  x.t.strides = x.strides.data();
  EXPECT_NO_THROW(d2k::expect_tensor(x.t, "x", kDLCPU, d2k::dl::bf16, {4, 8}));
}

TEST(ExpectTensor, NamesTheTensorAndWhatDiffers) {
  HostTensor x({4, 7}, d2k::dl::bf16);
  EXPECT_EQ(message_of(x, "x", kDLCPU, d2k::dl::bf16, {4, 8}), "tensor 'x': shape [4,7] does not match [4,8]");
  EXPECT_EQ(message_of(x, "x", kDLCPU, d2k::dl::bf16, {4, 7, 1}), "tensor 'x': shape [4,7] does not match [4,7,1]");
  EXPECT_EQ(message_of(x, "x", kDLCPU, d2k::dl::f32, {4, 7}), "tensor 'x': dtype bfloat16 is not float32");
  EXPECT_EQ(message_of(x, "x", kDLCUDA, d2k::dl::bf16, {4, 7}), "tensor 'x': must be a CUDA tensor");
  HostTensor g({4, 7}, d2k::dl::bf16, kDLCUDA);
  EXPECT_EQ(message_of(g, "w", kDLCPU, d2k::dl::bf16, {4, 7}), "tensor 'w': must be a host tensor");
  x.strides = {1, 4};  // column-major
  x.t.strides = x.strides.data();
  EXPECT_EQ(message_of(x, "x", kDLCPU, d2k::dl::bf16, {4, 7}), "tensor 'x': must be contiguous");
  // A unit dimension may carry any stride.
  HostTensor r({1, 7}, d2k::dl::i32);
  r.strides = {99, 1};
  r.t.strides = r.strides.data();
  EXPECT_EQ(message_of(r, "r", kDLCPU, d2k::dl::i32, {1, 7}), "");
}

TEST(ExpectTensor, CheckedLookupByName) {
  HostTensor a({3}, d2k::dl::f32), b({5}, d2k::dl::i32);
  const DLTensor ins[2] = {a.t, b.t};
  const char* names[2] = {"a", "b"};
  d2k_args args{};
  args.num_inputs = 2;
  args.inputs = ins;
  args.input_names = names;
  EXPECT_EQ(&d2k::input(&args, "b", kDLCPU, d2k::dl::i32, {5}), &ins[1]);
  EXPECT_THROW(d2k::input(&args, "b", kDLCPU, d2k::dl::i32, {6}), d2k::abi_error);
  EXPECT_THROW(d2k::input(&args, "c", kDLCPU, d2k::dl::i32, {5}), d2k::abi_error);
}

struct Buffers {
  float* a;
  int32_t* b;
  char* c;
};
Buffers carve(d2k::Workspace& ws, int64_t n) {
  return Buffers{ws.take<float>(n), ws.take<int32_t>(3), ws.take<char>(1)};
}

TEST(Workspace, CountingAndBoundAgree) {
  d2k::Workspace count;
  carve(count, 10);
  // 40 bytes at 0, 12 at 256, 1 at 512.
  EXPECT_EQ(count.bytes(), 513u);

  std::vector<char> mem(count.bytes());
  d2k_args args{};
  args.workspace = mem.data();
  args.workspace_bytes = mem.size();
  d2k::Workspace ws(&args);
  Buffers b = carve(ws, 10);
  EXPECT_EQ(reinterpret_cast<char*>(b.a), mem.data());
  EXPECT_EQ(reinterpret_cast<char*>(b.b), mem.data() + 256);
  EXPECT_EQ(b.c, mem.data() + 512);
  EXPECT_EQ(ws.bytes(), count.bytes());
}

TEST(Workspace, SmallerThanTheCarveUpThrows) {
  std::vector<char> mem(512);
  d2k_args args{};
  args.workspace = mem.data();
  args.workspace_bytes = mem.size();
  d2k::Workspace ws(&args);
  EXPECT_THROW(carve(ws, 10), d2k::workspace_error);
  d2k::Workspace small(&args, 16);  // 16-byte alignment: 40 + 12 + 1 fits
  EXPECT_NO_THROW(carve(small, 10));
  // No workspace at all (the harness passes none when 0 bytes were asked for): empty slices only.
  d2k_args none{};
  d2k::Workspace empty(&none);
  EXPECT_EQ(empty.take<float>(0), nullptr);
  EXPECT_EQ(empty.take<int32_t>(0), nullptr);
  d2k::Workspace missing(&none);
  EXPECT_THROW(missing.take<float>(1), d2k::workspace_error);
}

int32_t entry_with_short_workspace(const d2k_args* args) {
  D2K_ENTRY(args, {
    d2k::Workspace ws(args);
    ws.take<float>(1024);
    return D2K_OK;
  });
}

TEST(Workspace, EntryReportsWorkspaceStatus) {
  char err[200] = {};
  std::vector<char> mem(16);
  d2k_args args{};
  args.workspace = mem.data();
  args.workspace_bytes = mem.size();
  args.error = err;
  args.error_capacity = sizeof err;
  EXPECT_EQ(entry_with_short_workspace(&args), D2K_ERR_WORKSPACE);
  EXPECT_STREQ(err, "workspace of 16 bytes is smaller than the 4096 the carve-up needs");
}

}  // namespace
