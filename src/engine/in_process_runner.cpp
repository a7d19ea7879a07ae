// The in-process runner (`--isolation none`): the target is loaded into this process, for
// debugging and for measuring what the isolation costs.
#include <chrono>
#include <memory>

#include "core/cuda_util.h"
#include "engine/runner.h"
#include "engine/timed_run.h"
#include "exec/error.h"
#include "exec/loader.h"
#include "exec/worker.h"

namespace d2k {

namespace {

class InProcessRunner final : public TargetRunner {
 public:
  explicit InProcessRunner(const ImplTarget& t) {
    try {
      impl_ = load_impl(t.so);
    } catch (const ExecError& e) {
      load_error_ = failed(e.status, e.what(), true);
    } catch (const std::exception& e) {
      load_error_ = failed(Status::INVALID_SUBMISSION, e.what(), true);
    }
  }
  MemKind memory_kind() const override { return MemKind::local; }

  CallOutcome set_plan(const WorkloadPlan& plan) override {
    if (!load_error_.ok) return load_error_;
    batch_.reset();
    call_.reset();
    try {
      call_ = std::make_unique<DeviceCall>(impl_, plan);
    } catch (const std::exception& e) {
      return failed(Status::RUNTIME_ERROR, e.what(), false);
    }
    return {};
  }

  CallOutcome call(const DeviceSet& ins, const DeviceSet& outs) override {
    return guarded([&] {
      CallOutcome o;
      o.threads_before = count_threads();
      call_->launch(ins.ptrs(), outs.ptrs(), stream_.get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      D2K_CUDA_CHECK(cudaDeviceSynchronize());
      o.threads_after = count_threads();
      return o;
    });
  }

  TimedOutcome time(const std::vector<DeviceSet>& ins, const std::vector<DeviceSet>& outs, const measure::MeasureOptions& mo,
                    const PrepareFn& prepare) override {
    TimedOutcome t;
    t.call = guarded([&] {
      std::vector<std::vector<void*>> ip, op;
      for (auto& s : ins) ip.push_back(s.ptrs());
      for (auto& s : outs) op.push_back(s.ptrs());
      t = run_timer(timer(), *call_, ip, op, mo, prepare, stream_);
      return CallOutcome{};
    });
    return t;
  }

  BatchPrepared batch_prepare(const BatchSpec& b) override {
    BatchPrepared p;
    p.call = guarded([&] {
      std::vector<std::vector<void*>> sets, ins, outs;
      for (const DeviceSet* s : b.ins) sets.push_back(s->ptrs());
      batch_pointers(sets, b.slab->get(), b.stride, b.out_offsets, b.calls, ins, outs);
      p = batch_.prepare(*call_, std::move(ins), std::move(outs), stream_.get());
      return CallOutcome{};
    });
    return p;
  }

  CallOutcome batch_start() override {
    return guarded([&] {
      batch_.launch(stream_.get());
      return CallOutcome{};
    });
  }

  CallOutcome batch_wait(double) override {
    return guarded([&] {
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      D2K_CUDA_CHECK(cudaDeviceSynchronize());
      return CallOutcome{};
    });
  }

 private:
  template <class F>
  CallOutcome guarded(F&& f) {
    try {
      return f();
    } catch (const CudaError&) {
      // A sticky error poisons this process's context: nothing after it can be trusted.
      throw;
    } catch (const std::exception& e) {
      // A device fault reported as another error type (the timer's) is still sticky.
      if (cudaDeviceSynchronize() != cudaSuccess) {
        cudaGetLastError();
        if (cudaError_t c = cudaDeviceSynchronize(); c != cudaSuccess) throw CudaError(c, e.what(), __FILE__, __LINE__);
      }
      return failed(Status::RUNTIME_ERROR, e.what(), false);
    }
  }
  measure::Timer& timer() {
    if (!timer_) timer_ = std::make_unique<measure::Timer>();
    return *timer_;
  }

  LoadedImpl impl_;
  CallOutcome load_error_;
  std::unique_ptr<DeviceCall> call_;
  Stream stream_;
  std::unique_ptr<measure::Timer> timer_;
  CapturedBatch batch_;
};

}  // namespace

std::unique_ptr<TargetRunner> make_in_process_runner(const ImplTarget& target) {
  return std::make_unique<InProcessRunner>(target);
}

}  // namespace d2k
