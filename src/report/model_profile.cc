#include "report/model_profile.h"

#include <algorithm>
#include <map>
#include <thread>

#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"
#include "tessera/error.h"

namespace tessera::report {

namespace {

// Bytes a tensor occupies as the kernels read and write it.
double stored_bytes(const runtime::ExecutableGraph::Tensor& t) {
  double n = 1;
  for (int64_t d : t.shape) n *= static_cast<double>(d);
  if (t.stored_as == "int8" || t.stored_as == "uint8") return n;
  if (t.half) return 2 * n;
  return 4 * n;
}

}  // namespace

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
      for (int t : call.inputs) k.bytes += stored_bytes(g.tensors[t]);
      for (int t : call.outputs) k.bytes += stored_bytes(g.tensors[t]);
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
