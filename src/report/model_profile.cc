#include "report/model_profile.h"

#include <algorithm>
#include <map>
#include <thread>

#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"
#include "tessera/error.h"

namespace tessera::report {

ModelProfile profile_model(runtime::Artifact artifact, const std::string& source, int threads, int number, int repeat) {
  if (artifact.gpu) throw Error("report: '" + source + "' is compiled for a GPU; its profile needs a CPU model");
  if (artifact.varying)
    throw Error("report: '" + source +
                "' is compiled for a range of shapes; profile it at one size (tessera compile "
                "without --dim ranges)");
  ModelProfile p;
  p.source = source;
  p.target = artifact.target;
  std::map<std::string, runtime::KernelInfo> info;
  for (const runtime::KernelInfo& k : artifact.kernel_info) info[k.name] = k;

  runtime::GraphExecutor ex(std::move(artifact), source);
  if (threads > 0) ex.set_threads(threads);
  p.threads = ex.threads() > 0 ? ex.threads() : static_cast<int>(std::thread::hardware_concurrency());
  runtime::set_num_threads(p.threads);
  ex.set_random_inputs();
  p.latency = ex.benchmark(number, repeat).min();
  const std::vector<double> seconds = ex.profile(number);

  std::map<std::string, size_t> index;
  const runtime::ExecutableGraph& g = ex.graph();
  for (size_t i = 0; i < g.calls.size(); ++i) {
    const auto& call = g.calls[i];
    auto [it, added] = index.emplace(call.kernel, p.kernels.size());
    if (added) {
      KernelProfile k;
      k.name = call.kernel;
      // The tensors it reads and writes, as stored (int8, half or float32 elements).
      for (const std::vector<int>* tensors : {&call.inputs, &call.outputs})
        for (int t : *tensors) k.bytes += double(g.num_elements(t)) * double(g.element_bytes(t));
      if (auto known = info.find(call.kernel); known != info.end()) {
        k.known = true;
        k.nodes = known->second.nodes;
        k.flop = known->second.flop;
        k.tuned = known->second.tuned;
        k.workload_key = known->second.workload_key;
        k.task_key = known->second.task_key;
      }
      p.kernels.push_back(std::move(k));
    }
    KernelProfile& k = p.kernels[it->second];
    ++k.calls;
    k.seconds += seconds[i];
  }
  std::stable_sort(p.kernels.begin(), p.kernels.end(),
                   [](const KernelProfile& a, const KernelProfile& b) { return a.seconds > b.seconds; });
  return p;
}

}  // namespace tessera::report
