#pragma once
// Compile on first call (seed 004's torch.compile, for Tessera's own models):
// a JitModel holds a network source and compiles it when it is first called,
// and again for each new input shape (guards on shapes; inputs are float32).
// Compiled models are cached in memory, per input shapes, and on disk, keyed
// by the graph, the target and the records, so a second process starts warm.
//
// Modes:
//   default          best records (or the hand-written schedules), no search
//   reduce-overhead  the same kernels; a call's outputs are read in place
//                    (the Python binding returns views of the executor's
//                    memory, valid until the next call: no allocation, no copy)
// In every mode the kernels read the caller's input buffers in place.
//   max-autotune     on the first compile, tunes the tasks that have no
//                    record within a time budget (progress shown), then builds
// A new shape past the recompile limit is an error naming the limit and the
// shapes compiled so far, never a silent fallback.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "graph/graph.h"
#include "target/target.h"
#include "runtime/graph_executor.h"
#include "runtime/varying_executor.h"

namespace tessera::jit {

enum class JitMode { kDefault, kReduceOverhead, kMaxAutotune };
// "default", "reduce-overhead", "max-autotune"; tessera::Error listing them otherwise.
JitMode jit_mode_from_string(const std::string& text);
std::string to_string(JitMode mode);

struct JitOptions {
  std::string target;            // "" this host, else Target::parse text
  int threads = 0;               // 0: the target's (one per core)
  std::string records;           // tuning log the build applies; "" none
  JitMode mode = JitMode::kDefault;
  int recompile_limit = 8;       // distinct input shapes (or ranges, with dynamic) compiled at most
  // A dimension seen at a second size compiles one artifact for every size
  // from 1 to its largest so far rounded up to a power of two (buckets,
  // driver::compile_varying); later sizes in it run without compiling. Off:
  // each new shape compiles anew.
  bool dynamic = false;
  bool disk_cache = true;
  std::string cache_dir;         // "" default_cache_dir()
  double autotune_minutes = 10;  // max-autotune: budget of the first compile's tuning
  std::string autotune_log;      // max-autotune: its records; "" CACHE_DIR/autotune-TARGET.log (shared by models)
  std::ostream* log = nullptr;   // compile messages and warnings; null: std::cerr
  // "int8": compiled as `compile --quantize int8` (driver::CompileOptions):
  // calibrated on `calibrate` (N seeded samples or a .npy) by `calibration`
  // ("min-max", "percentile", "kl-entropy"). Fixed shapes only.
  std::string quantize;
  std::string calibrate = "8";
  std::string calibration = "min-max";
};

// Makes the network for given input shapes; throws tessera::Error when it
// cannot take them.
using GraphFactory = std::function<graph::Graph(const std::vector<std::vector<int64_t>>& input_shapes)>;
// A zoo name or an .onnx file in `layout`, at the batch of the first input's
// first dimension; other dimensions must be the model's. Given the ONNX
// model's input names, its inputs take whole shapes instead (a sequence
// length as well as a batch: what the ONNX file's symbolic dimensions allow).
GraphFactory model_source(const std::string& model, const std::string& layout = "NCHW",
                          std::vector<std::string> onnx_input_names = {});

// A network built for one set of input shapes (a torch FX graph converted,
// say): other shapes are an error naming both.
GraphFactory fixed_graph(graph::Graph graph);

// `text` ("" this host, else Target::parse text) with `threads` (0: as stated).
target::Target resolve_target(const std::string& text, int threads);

struct JitInput {
  const float* data = nullptr;  // contiguous, the shape's size
  std::vector<int64_t> shape;
};

// An output of the last call: the executor's memory, valid until the next call.
struct JitOutput {
  const float* data = nullptr;
  std::vector<int64_t> shape;
};

// What the last call did.
struct CallInfo {
  bool compiled = false;      // this call built (or loaded) a model
  bool from_disk = false;     // ... from the disk cache
  double compile_seconds = 0; // time spent before running
  double run_seconds = 0;
  std::string cache_key;
};

class JitModel {
 public:
  JitModel(std::string name, GraphFactory factory, JitOptions options = {});
  ~JitModel();
  JitModel(JitModel&&) noexcept;

  // Runs on `inputs`, compiling first when their shapes are new. Returns the
  // outputs, valid until the next call.
  const std::vector<JitOutput>& run(const std::vector<JitInput>& inputs);
  const CallInfo& last_call() const { return last_; }
  int compilations() const { return static_cast<int>(compiled_.size() + ranges_.size()); }
  const JitOptions& options() const { return options_; }
  const std::string& name() const { return name_; }

 private:
  using Shapes = std::vector<std::vector<int64_t>>;
  // One dimension's range (dynamic): the shapes at its largest size, the
  // (input, axis) places it fills, the artifact's executor.
  struct Range {
    Shapes shapes;
    std::vector<std::pair<size_t, size_t>> places;
    int64_t max = 0;
    std::unique_ptr<runtime::VaryingExecutor> executor;
  };
  runtime::GraphExecutor& compile(const Shapes& shapes);
  // The range a call's shapes fall in, compiling it when the shapes are a
  // known one's at another size of one dimension; null otherwise.
  Range* range_for(const Shapes& shapes);
  void check_recompile_limit(const Shapes& shapes) const;
  // The compile step both paths share: records (tuning first in
  // max-autotune), the disk cache, then `build` on a miss.
  runtime::Artifact build_cached(const graph::Graph& model, const std::string& extra_key,
                                 const std::function<runtime::Artifact(const driver::CompileOptions&)>& build);
  std::ostream& log() const;

  std::string name_;
  GraphFactory factory_;
  JitOptions options_;
  std::map<Shapes, std::unique_ptr<runtime::GraphExecutor>> compiled_;
  std::vector<Range> ranges_;
  std::vector<runtime::NDArray> range_outputs_;  // the last ranged call's outputs, cut to its size
  std::vector<JitOutput> outputs_;
  CallInfo last_;
};

}  // namespace tessera::jit
