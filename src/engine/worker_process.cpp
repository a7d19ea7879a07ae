// The worker process (`d2k __worker --impl PATH`): the sandboxed child that loads a candidate
// and serves the parent's requests (wire.h). Its parent side is worker_client.cpp; the channel,
// lockdown filter and thread count it uses are exec/worker.h.
#include "engine/worker_process.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <map>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/cuda_util.h"
#include "engine/device_backend.h"
#include "engine/devmem.h"
#include "engine/timed_run.h"
#include "engine/wire.h"
#include "exec/error.h"
#include "exec/loader.h"
#include "exec/worker.h"
#include "measure/timer.h"
#include "tracks/track.h"

namespace d2k {

namespace {

using json = nlohmann::json;

class Worker {
 public:
  explicit Worker(WorkerChannel ch) : ch_(ch) {}

  int serve(const std::filesystem::path& impl_path, const Track& track, const std::vector<WorkloadShape>& shapes) {
    // CUDA, CUPTI and NVML start before the lockdown (they open devices and start threads) and
    // before the candidate's library is loaded (its constructors run in dlopen).
    D2K_CUDA_CHECK(cudaFree(nullptr));
    stream_ = std::make_unique<Stream>();
    timer_ = std::make_unique<measure::Timer>();
    timer_->cupti_available();  // CUPTI's one-time set-up, before the lockdown too
    warm_up_harness();
    track.start_runtime(impl_path);
    // Every thread the harness and the track's runtime need exists now (driver, CUPTI, NVML, an
    // interpreter's): any thread beyond this count after a call is the candidate's, whether it
    // started at import, in prepare's warm-up calls or in a call. The parent counts too, while
    // this worker waits for its "load" (worker_client.cpp).
    const int baseline_threads = count_threads();
    ch_.send({{"type", wire::reply::baseline}, {"threads", baseline_threads}});
    if (auto go = ch_.receive(); !go || go->value("cmd", "") != wire::cmd::load) return 0;
    track.prepare(impl_path, shapes);  // may need exec and files: before the lockdown
    LockdownOptions lo;
    if (const char* k = std::getenv(kAllowProtectionChangesEnv); k && std::string_view(k) == "1")
      lo.deny_protection_changes = lo.deny_open_for_write = false;
    const std::string lock = lock_down_worker(lo);
    // The harness's relocation-read-only pages before the candidate's constructors run: a GOT
    // patched at load time differs from this at the first call.
    const std::uint64_t relro0 = relro_hash();
    ch_.stage("load");
    try {
      impl_ = track.open(impl_path);
    } catch (const ExecError& e) {
      ch_.send({{"type", wire::reply::load_failed}, {"status", std::string(status_name(e.status))}, {"error", e.what()}});
      return 0;
    } catch (const std::exception& e) {
      ch_.send({{"type", wire::reply::load_failed}, {"status", "INVALID_SUBMISSION"}, {"error", e.what()}});
      return 0;
    }
    const std::string mode = lo.deny_protection_changes ? "on" : "on (protection changes allowed: test knob)";
    ch_.send({{"type", wire::reply::ready}, {"lockdown", lock.empty() ? mode : lock}, {"threads", baseline_threads},
              {"relro_hash", relro0}});
    for (;;) {
      auto msg = ch_.receive();
      if (!msg) return 3;  // the parent is gone
      const std::string cmd = msg->value("cmd", "");
      if (cmd == wire::cmd::exit) return 0;
      try {
        ch_.send(dispatch(cmd, *msg));
      } catch (const CudaError& e) {
        // The context is broken (illegal address, trap): report and end this worker.
        ch_.send({{"type", wire::reply::error}, {"status", "RUNTIME_ERROR"}, {"fatal", true}, {"error", e.what()}});
        return 4;
      } catch (const std::exception& e) {
        // The timer reports a device fault as its own error type: whatever was thrown, a sticky
        // fault ends this worker (the next workload gets a fresh one, and no later failure is
        // blamed on the wrong workload).
        const bool fatal = context_broken();
        ch_.send({{"type", wire::reply::error}, {"status", "RUNTIME_ERROR"}, {"fatal", fatal}, {"error", e.what()}});
        if (fatal) return 4;
      }
    }
  }

 private:
  /// Whether the context holds a sticky error (illegal address, trap): such an error survives
  /// being read, so a second synchronise still reports it.
  static bool context_broken() {
    if (cudaDeviceSynchronize() == cudaSuccess) return false;
    cudaGetLastError();
    return cudaDeviceSynchronize() != cudaSuccess;
  }

  /// One short measurement of a memset, so that the timer's threads and buffers (CUPTI, the
  /// NVML sampler, the flush buffer) exist before the thread baseline is taken.
  void warm_up_harness() {
    DevMem scratch(1 << 20, MemKind::local);
    measure::MeasureOptions mo;
    mo.stopping.min_samples = 2;
    mo.stopping.min_time_s = 0;
    mo.stopping.max_time_s = 0.02;
    mo.warmup_min_s = 0;
    timer_->measure([&](std::size_t, cudaStream_t s) { D2K_CUDA_CHECK(cudaMemsetAsync(scratch.get(), 1, 1 << 20, s)); },
                    stream_->get(), mo);
    D2K_CUDA_CHECK(cudaDeviceSynchronize());
  }

  json dispatch(const std::string& cmd, const json& msg) {
    if (cmd == wire::cmd::map) {
      const json& bufs = msg.at("buffers");
      std::vector<int> fds = ch_.take_fds(bufs.size());
      if (fds.size() != bufs.size()) throw std::runtime_error("map: descriptors missing");
      for (std::size_t i = 0; i < bufs.size(); ++i)
        mem_[bufs[i].at("id").get<std::uint64_t>()] = DevMem::import_fd(fds[i], bufs[i].at("bytes").get<std::size_t>());
      return {{"type", wire::reply::mapped}};
    }
    if (cmd == wire::cmd::unmap) {
      // The parent freed these buffers; until this mapping goes, their memory stays allocated.
      // A captured batch may point into them: it goes first.
      batch_.reset();
      for (const json& id : msg.at("ids")) mem_.erase(id.get<std::uint64_t>());
      impl_.release_cached();
      return {{"type", wire::reply::unmapped}};
    }
    if (cmd == wire::cmd::plan) {
      batch_.reset();
      call_.reset();
      mem_.clear();
      plan_ = std::make_unique<WorkloadPlan>(wire::plan_from_json(msg.at("plan")));
      call_ = std::make_unique<DeviceCall>(impl_, *plan_);
      return {{"type", wire::reply::planned}, {"workspace", call_->workspace_bytes()}};
    }
    if (!call_) throw std::runtime_error(cmd + ": no plan");
    if (cmd == wire::cmd::call) {
      auto ins = pointers(msg.at("ins")), outs = pointers(msg.at("outs"));
      call_->launch(ins, outs, stream_->get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));
      D2K_CUDA_CHECK(cudaDeviceSynchronize());
      return {{"type", wire::reply::called}, {"threads_after", count_threads()}, {"relro_hash", relro_hash()}};
    }
    if (cmd == wire::cmd::time) {
      std::vector<std::vector<void*>> ins, outs;
      for (auto& s : msg.at("sets")) {
        ins.push_back(pointers(s.at("ins")));
        outs.push_back(pointers(s.at("outs")));
      }
      if (ins.empty()) throw std::runtime_error("time: no sets");
      measure::MeasureOptions mo = wire::options_from_json(msg.at("options"));
      auto prepare = [&](std::size_t i, std::size_t) {
        ch_.send({{"type", wire::reply::prepare}, {"call", i}});
        auto r = ch_.receive();
        if (!r || r->value("cmd", "") != wire::cmd::prepared) throw std::runtime_error("the parent ended the timing");
      };
      TimedOutcome t = run_timer(*timer_, *call_, ins, outs, mo, prepare, *stream_);
      return wire::timed_to_json(t);
    }
    if (cmd == wire::cmd::batch) {
      std::vector<std::vector<void*>> sets, ins, outs;
      for (auto& s : msg.at("sets")) sets.push_back(pointers(s));
      if (sets.empty()) throw std::runtime_error("batch: no input sets");
      void* slab = pointers(json::array({msg.at("slab")})).at(0);
      batch_pointers(sets, slab, msg.at("stride").get<std::size_t>(), msg.at("offsets").get<std::vector<std::size_t>>(),
                     msg.at("calls").get<std::size_t>(), ins, outs);
      BatchPrepared p = batch_.prepare(*call_, std::move(ins), std::move(outs), stream_->get());
      return {{"type", wire::reply::batch_ready}, {"graph", p.graph}, {"unjoined", p.unjoined}, {"note", p.note}};
    }
    if (cmd == wire::cmd::batch_run) {
      batch_.launch(stream_->get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));
      D2K_CUDA_CHECK(cudaDeviceSynchronize());
      return {{"type", wire::reply::batch_done}};
    }
    throw std::runtime_error("unknown command '" + cmd + "'");
  }

  std::vector<void*> pointers(const json& ids) {
    std::vector<void*> p;
    for (auto& id : ids) {
      auto it = mem_.find(id.get<std::uint64_t>());
      if (it == mem_.end()) throw std::runtime_error("unknown buffer " + id.dump());
      p.push_back(it->second.get());
    }
    return p;
  }

  WorkerChannel ch_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<measure::Timer> timer_;
  LoadedImpl impl_;
  std::unique_ptr<WorkloadPlan> plan_;
  std::unique_ptr<DeviceCall> call_;
  std::map<std::uint64_t, DevMem> mem_;
  CapturedBatch batch_;  // declared after mem_: destroyed before the memory it points into
};

}  // namespace

int worker_main(const std::filesystem::path& impl, const std::string& track,
                const std::vector<WorkloadShape>& shapes) {
  auto ch = WorkerChannel::from_environment();
  if (!ch) {
    std::fprintf(stderr, "d2k __worker: no channel (%s unset): this command is started by d2k itself\n", kChannelFdEnv);
    return 2;
  }
  try {
    Worker w(*ch);
    return w.serve(impl, find_track(track), shapes);
  } catch (const std::exception& e) {
    ch->send({{"type", wire::reply::error}, {"status", "RUNTIME_ERROR"}, {"fatal", true}, {"error", e.what()}});
    return 4;
  }
}


}  // namespace d2k
