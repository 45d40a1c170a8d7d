// The runtime end to end without the graph layer: two kernels compiled by our
// codegen, linked into one shared object, written as an artifact, loaded and
// run by GraphExecutor; outputs against the reference implementations.
#include "runtime/graph_executor.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>

#include <cmath>
#include <map>
#include <random>

#include <fstream>
#include <sstream>

#include "codegen/llvm_codegen.h"
#include "codegen/shared_object.h"
#include "target/target.h"
#include "ir/tensor.h"
#include "ops/conv2d.h"
#include "ops/elementwise.h"
#include "ops/reference.h"
#include "runtime/npy.h"
#include "runtime/thread_pool.h"
#include "schedule/default_schedule.h"
#include "schedule/manual_schedule.h"
#include "tessera/error.h"
#include "tir/lower.h"

namespace tessera::runtime {
namespace {

// Kernel object for `out`'s DAG under the best hand-written schedule.
std::string compile_kernel(const ir::Tensor& out, const std::string& name) {
  ir::ComputeDAG dag({out});
  const target::Target target = target::Target::host();
  const schedule::Trace trace = schedule::best_manual_schedule(dag, target.vector_unit());
  return codegen::compile_to_object(tir::lower(dag, trace, name), target);
}

// data (1, 8, 10, 10) -> conv 3x3 pad 1 (16 channels) -> relu -> conv 1x1 (8) -> out,
// plus the relu'd activation as a second output.
struct TinyModel {
  Artifact artifact;
  NDArray w1{{16, 8, 3, 3}}, w2{{8, 16, 1, 1}};

  // `suffix` ends every kernel's name: models whose libraries differ.
  explicit TinyModel(const std::string& suffix = "") {
    w1.fill_random(1, -0.5f, 0.5f);
    w2.fill_random(2, -0.5f, 0.5f);
    auto data = ir::placeholder({1, 8, 10, 10}, "data");
    auto k1 = ir::placeholder({16, 8, 3, 3}, "kernel");
    auto mid = ir::placeholder({1, 16, 10, 10}, "data");
    auto k2 = ir::placeholder({8, 16, 1, 1}, "kernel");
    auto act = ir::placeholder({1, 16, 10, 10}, "x");
    std::vector<std::string> objects = {
        compile_kernel(ops::conv2d_nchw(data, k1, ops::Conv2dAttrs::symmetric(1, 1)), "conv_3x3" + suffix),
        compile_kernel(ops::relu(act), "relu" + suffix),
        compile_kernel(ops::conv2d_nchw(mid, k2, ops::Conv2dAttrs::symmetric(1, 0)), "conv_1x1" + suffix)};
    artifact.target = target::Target::host().str();
    artifact.instruction_sets = target::Target::host().instruction_sets();
    artifact.shared_object = codegen::link_shared_object(objects);
    ExecutableGraph& g = artifact.graph;
    g.tensors = {{"data", {1, 8, 10, 10}},   {"w1", {16, 8, 3, 3}}, {"conv1", {1, 16, 10, 10}},
                 {"relu1", {1, 16, 10, 10}}, {"w2", {8, 16, 1, 1}}, {"out", {1, 8, 10, 10}}};
    g.inputs = {0};
    g.constants = {1, 4};
    g.outputs = {5, 3};
    g.calls = {{"conv_3x3" + suffix, {0, 1}, {2}}, {"relu" + suffix, {2}, {3}}, {"conv_1x1" + suffix, {3, 4}, {5}}};
    artifact.params.push_back(copy(w1));
    artifact.params.push_back(copy(w2));
  }

  static Artifact copy_of(const Artifact& a) {
    Artifact c;
    c.target = a.target;
    c.shared_object = a.shared_object;
    c.graph = a.graph;
    for (const NDArray& p : a.params) c.params.push_back(copy(p));
    return c;
  }

  static NDArray copy(const NDArray& a) { return runtime::copy_of(a); }

  // The reference: the same computation with ops::reference.
  std::pair<NDArray, NDArray> expected(const NDArray& x) const {
    NDArray conv1({1, 16, 10, 10}), relu1({1, 16, 10, 10}), out({1, 8, 10, 10});
    ops::reference::conv2d_nchw(x.data(), x.shape(), w1.data(), w1.shape(), ops::Conv2dAttrs::symmetric(1, 1),
                                conv1.data());
    ops::reference::relu(conv1.data(), conv1.size(), relu1.data());
    ops::reference::conv2d_nchw(relu1.data(), relu1.shape(), w2.data(), w2.shape(), ops::Conv2dAttrs::symmetric(1, 0),
                                out.data());
    return {std::move(out), std::move(relu1)};
  }
};

double max_rel_error(const NDArray& got, const NDArray& want) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    err = std::max(err, static_cast<double>(std::abs(got[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
  }
  return err / scale;
}

std::string temp_path(const std::string& name) { return "/tmp/tessera-" + std::to_string(getpid()) + "-" + name; }

TEST(GraphExecutor, RunsAnArtifactAndMatchesTheReference) {
  TinyModel model;
  const std::string path = temp_path("tiny.tsr");
  write_artifact(model.artifact, path);
  GraphExecutor ex = GraphExecutor::load(path);
  unlink(path.c_str());

  ASSERT_EQ(ex.num_inputs(), 1);
  ASSERT_EQ(ex.num_outputs(), 2);
  EXPECT_EQ(ex.input_name(0), "data");
  EXPECT_EQ(ex.output_name(1), "relu1");
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (uint64_t seed : {7, 8}) {  // a second input: nothing of the first run may stay behind
      NDArray x({1, 8, 10, 10});
      x.fill_random(seed);
      ex.set_input("data", x);
      ex.run();
      auto [want_out, want_relu] = model.expected(x);
      EXPECT_LE(max_rel_error(ex.get_output(0), want_out), 1e-4) << "threads " << threads;
      EXPECT_LE(max_rel_error(ex.get_output("relu1"), want_relu), 1e-4) << "threads " << threads;
    }
  }
  set_num_threads(0);
}

TEST(GraphExecutor, WrongInputsAreErrorsNamingThem) {
  TinyModel model;
  GraphExecutor ex(std::move(model.artifact), "tiny");
  EXPECT_THROW(
      {
        try {
          ex.set_input("images", NDArray({1, 8, 10, 10}));
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "the model has no input 'images' (its inputs: 'data')");
          throw;
        }
      },
      Error);
  try {
    ex.set_input(0, NDArray({1, 8, 10, 11}));
    FAIL() << "a wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "input 'data' has shape [1, 8, 10, 10], got [1, 8, 10, 11]");
  }
  EXPECT_THROW(ex.get_output(2), Error);
}

TEST(GraphExecutor, BenchmarkReportsInTheSeedsWords) {
  TinyModel model;
  GraphExecutor ex(std::move(model.artifact), "tiny");
  BenchmarkResult r = ex.benchmark(3, 4);
  ASSERT_EQ(r.seconds.size(), 4u);
  for (double s : r.seconds) EXPECT_GT(s, 0);
  EXPECT_LE(r.min(), r.median());
  EXPECT_LE(r.median(), *std::max_element(r.seconds.begin(), r.seconds.end()));
  EXPECT_NE(r.summary().find("Mean inference time (std dev): "), std::string::npos);
  EXPECT_THROW(ex.benchmark(0, 1), Error);
  BenchmarkResult fixed{{0.001, 0.003}};
  EXPECT_EQ(fixed.summary(), "Mean inference time (std dev): 2.00 ms (1.00 ms)");
}

// `bench --profile`'s numbers: one finite, positive time for each call of
// the graph, by kernel; no runs is an error. (Which kernel is slower is a
// timing, asserted nowhere in the suite.)
TEST(GraphExecutor, ProfileGivesEveryCallAPositiveTime) {
  TinyModel model;
  GraphExecutor ex(std::move(model.artifact), "tiny");
  const std::vector<double> seconds = ex.profile(20);
  ASSERT_EQ(seconds.size(), ex.graph().calls.size());
  std::map<std::string, double> by_kernel;
  for (size_t i = 0; i < seconds.size(); ++i) {
    EXPECT_TRUE(std::isfinite(seconds[i]) && seconds[i] > 0) << ex.graph().calls[i].kernel;
    by_kernel[ex.graph().calls[i].kernel] = seconds[i];
  }
  EXPECT_EQ(by_kernel.size(), 3u);
  EXPECT_TRUE(by_kernel.count("conv_3x3") && by_kernel.count("relu") && by_kernel.count("conv_1x1"));
  EXPECT_THROW(ex.profile(0), Error);
}

// Models loaded side by side each run their own library: their in-memory
// files must not share a path (dlopen would hand back the first library, and
// the second model's kernels would be missing or, with equal names, wrong).
TEST(GraphExecutor, ModelsLoadedTogetherKeepTheirOwnKernels) {
  std::vector<GraphExecutor> executors;
  std::vector<TinyModel> models;
  executors.reserve(3);
  models.reserve(3);
  for (const std::string suffix : {"_a", "_b", "_c"}) models.emplace_back(suffix);
  for (int round = 0; round < 2; ++round) {  // the second round reuses freed descriptors
    executors.clear();
    for (TinyModel& m : models) executors.emplace_back(TinyModel::copy_of(m.artifact), "tiny" + std::to_string(round));
    NDArray x({1, 8, 10, 10});
    x.fill_random(3);
    for (size_t i = 0; i < executors.size(); ++i) {
      executors[i].set_input(0, x);
      executors[i].run();
      EXPECT_LE(max_rel_error(executors[i].get_output(0), models[i].expected(x).first), 1e-4) << "model " << i;
    }
  }
}

TEST(GraphExecutor, AKernelMissingFromTheLibraryIsNamed) {
  TinyModel model;
  model.artifact.graph.calls[1].kernel = "softmax";
  try {
    GraphExecutor ex(std::move(model.artifact), "tiny.tsr");
    FAIL() << "loaded a graph calling a kernel that does not exist";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "tiny.tsr: no kernel 'softmax' in its library");
  }
}

TEST(GraphExecutor, AGraphCallingAFunctionOutsideItsLibraryIsRefused) {
  // dlsym would find libc's abort through the library's dependencies.
  for (const char* name : {"abort", "memcpy", "exit"}) {
    TinyModel model;
    model.artifact.graph.calls[1].kernel = name;
    try {
      GraphExecutor ex(std::move(model.artifact), "tiny.tsr");
      ADD_FAILURE() << "loaded a graph calling " << name;
    } catch (const Error& e) {
      // Refused either way: not found (no dependency has it), or found outside the library.
      const std::string m = e.what();
      EXPECT_TRUE(m == std::string("tiny.tsr: '") + name + "' is not a kernel of its library" ||
                  m == std::string("tiny.tsr: no kernel '") + name + "' in its library")
          << m;
    }
  }
}

TEST(GraphExecutor, ACallWhoseBuffersDoNotFitItsKernelIsRefused) {
  {
    // An edited shape: the 1x1 convolution would write 80,000 floats into a
    // buffer planned for them while its kernel computes 800; or, the other
    // way round, write 800 into a buffer of 8.
    TinyModel model;
    model.artifact.graph.tensors[5].shape = {1, 8, 1, 1};
    try {
      GraphExecutor ex(std::move(model.artifact), "tiny.tsr");
      FAIL() << "loaded a graph whose output buffer is smaller than its kernel writes";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(),
                   "tiny.tsr: the graph gives kernel 'conv_1x1' tensor 'out' of 8 elements as argument 2, which holds 800");
    }
  }
  TinyModel model;
  model.artifact.graph.calls[1].inputs.push_back(0);  // relu given two inputs
  try {
    GraphExecutor ex(std::move(model.artifact), "tiny.tsr");
    FAIL() << "loaded a call with a buffer too many";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "tiny.tsr: the graph calls kernel 'relu' with 3 buffers; it takes 2");
  }
}

TEST(GraphExecutor, AnArtifactForACpuThisHostIsNotIsRefused) {
  TinyModel model;
  model.artifact.instruction_sets = {"sse4.2", "avx9000"};  // no CPU has it; the runtime cannot vouch for it
  try {
    GraphExecutor ex(std::move(model.artifact), "tiny.tsr");
    FAIL() << "loaded kernels for a CPU this host is not";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tiny.tsr: compiled for"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("use avx9000, which this host's CPU lacks"), std::string::npos) << e.what();
  }
  // What this host's own compiler records, it runs.
  TinyModel here;
  EXPECT_FALSE(here.artifact.instruction_sets.empty());
  EXPECT_NO_THROW(GraphExecutor(std::move(here.artifact), "tiny.tsr"));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// The artifact's bytes with every section's CRC computed anew: damage that
// gets past the checksums (a deliberate edit) meets the graph's own checks.
std::string reseal(std::string bytes) {
  size_t pos = 16;  // magic, version, section count
  while (pos < bytes.size()) {
    uint32_t name_length = 0;
    std::memcpy(&name_length, bytes.data() + pos, 4);
    pos += 4 + name_length;
    uint64_t size = 0;
    std::memcpy(&size, bytes.data() + pos, 8);
    const uint32_t crc = static_cast<uint32_t>(
        crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data() + pos + 12), size));
    std::memcpy(bytes.data() + pos + 8, &crc, 4);
    pos += 12 + size;
  }
  return bytes;
}

// Each damage is one error naming the file; none crashes or loads.
TEST(Artifact, DamagedFilesAreClearErrors) {
  TinyModel model;
  const std::string path = temp_path("good.tsr"), bad = temp_path("bad.tsr");
  write_artifact(model.artifact, path);
  const std::string good = read_bytes(path);
  unlink(path.c_str());

  struct Damage {
    std::string what, bytes, message;
  };
  std::string newer = good;
  newer[8] = 9;
  std::string huge_section = good;
  // The first section's size field follows its 4-byte name length and "target".
  std::memset(huge_section.data() + 16 + 4 + 6, 0x7f, 8);
  std::string junk_graph = good;
  junk_graph.replace(junk_graph.find("\"calls\""), 7, "\"calks\"");
  std::string bad_id = good;
  bad_id.replace(bad_id.find("\"outputs\":[5,3]"), 15, "\"outputs\":[9,3]");
  // The weights are read straight into their arrays, their checksum summed on the way.
  std::string flipped_weight = good;
  flipped_weight[flipped_weight.find("params") + 6 + 12 + 5] ^= 0x10;
  std::vector<Damage> damages = {
      {"empty", "", "is not a Tessera artifact"},
      {"another format", "GIF89a....", "is not a Tessera artifact"},
      {"a newer version", newer, "has format version 9; this runtime reads 3 (recompile the model)"},
      {"cut in the header", good.substr(0, 14), "is truncated: the section count"},
      {"cut in the params", good.substr(0, good.size() / 2), "is truncated"},
      {"cut by one byte", good.substr(0, good.size() - 1), "is truncated: section 'kernels'"},
      {"a byte too many", good + "x", "has bytes after its last section"},
      {"an absurd section size", huge_section, "is truncated: section 'target' needs"},
      {"a renamed field", junk_graph, "section 'graph' does not match its checksum"},
      {"a flipped weight bit", flipped_weight, "section 'params' does not match its checksum"},
      {"a renamed field, checksum made to match", reseal(junk_graph), "damaged graph"},
      {"an output out of range, checksum made to match", reseal(bad_id), "an output names tensor 9, but the graph has 6"},
  };
  for (const auto& d : damages) {
    write_bytes(bad, d.bytes);
    try {
      GraphExecutor::load(bad);
      ADD_FAILURE() << d.what << ": loaded";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(bad), std::string::npos) << d.what << ": " << m;
      EXPECT_NE(m.find(d.message), std::string::npos) << d.what << ": " << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << d.what << ": " << m;
    }
  }
  unlink(bad.c_str());
  EXPECT_THROW(GraphExecutor::load(temp_path("missing.tsr")), Error);
}

// The peak resident memory (kB) `run_artifact path` reports (its VmHWM:
// counted from its exec, where wait4's ru_maxrss would count the pages of
// the forked test process too).
long run_artifact_peak_kb(const std::string& path) {
  const std::string command = std::string(TESSERA_RUN_ARTIFACT) + " " + path + " --number 1 --repeat 1";
  FILE* out = popen(command.c_str(), "r");
  if (out == nullptr) return -1;
  long kb = -1;
  char line[512];
  while (std::fgets(line, sizeof(line), out))
    if (std::sscanf(line, "peak resident memory: %ld kB", &kb) == 1) break;
  while (std::fgets(line, sizeof(line), out)) {
  }
  EXPECT_EQ(pclose(out), 0) << command;
  EXPECT_GT(kb, 0) << command << " reported no peak memory";
  return kb;
}

// Loading held the weights two or three times over (the file's bytes, the
// arrays read from them, the executor's buffer); it holds them once now, and
// a weight only twice while it is being copied into place.
// What the compiler knew of each kernel survives the file (a report reads it
// back); an artifact written without it reads as one that has none.
TEST(Artifact, KernelInfoRoundTripsAndIsOptional) {
  TinyModel model;
  const std::string path = temp_path("info.tsr");
  write_artifact(model.artifact, path);
  EXPECT_TRUE(read_artifact(path).kernel_info.empty());
  model.artifact.kernel_info = {{"conv_3x3", "conv1 + relu", 230400.5, true, "abcd", "ef01"},
                                {"relu", "relu", 1600, false, "2345", ""}};
  write_artifact(model.artifact, path);
  const Artifact back = read_artifact(path);
  ASSERT_EQ(back.kernel_info.size(), 2u);
  EXPECT_EQ(back.kernel_info[0].name, "conv_3x3");
  EXPECT_EQ(back.kernel_info[0].nodes, "conv1 + relu");
  EXPECT_EQ(back.kernel_info[0].flop, 230400.5);
  EXPECT_TRUE(back.kernel_info[0].tuned);
  EXPECT_EQ(back.kernel_info[0].workload_key, "abcd");
  EXPECT_EQ(back.kernel_info[0].task_key, "ef01");
  EXPECT_FALSE(back.kernel_info[1].tuned);
  EXPECT_EQ(copy_artifact(back).kernel_info.size(), 2u);
  GraphExecutor ex(read_artifact(path), "info");  // it still runs
  unlink(path.c_str());
}

TEST(Artifact, LoadingHoldsTheWeightsOnce) {
  TinyModel tiny;
  const std::string tiny_path = temp_path("tiny-rss.tsr"), big_path = temp_path("big-rss.tsr");
  write_artifact(tiny.artifact, tiny_path);
  constexpr int kBallast = 16;
  constexpr int64_t kFloats = int64_t(1) << 20;  // 4 MB each, 64 MB in all, read by no kernel
  {
    TinyModel big;
    for (int i = 0; i < kBallast; ++i) {
      big.artifact.graph.constants.push_back(static_cast<int>(big.artifact.graph.tensors.size()));
      big.artifact.graph.tensors.push_back({"ballast" + std::to_string(i), {kFloats}});
      NDArray weights({kFloats});
      weights.fill_random(i);
      big.artifact.params.push_back(std::move(weights));
    }
    write_artifact(big.artifact, big_path);
  }
  const double weights_kb = kBallast * kFloats * 4 / 1024.0;
  const long tiny_kb = run_artifact_peak_kb(tiny_path), big_kb = run_artifact_peak_kb(big_path);
  unlink(tiny_path.c_str());
  unlink(big_path.c_str());
  EXPECT_GT(big_kb - tiny_kb, 0.9 * weights_kb) << "the weights are not all resident? big " << big_kb << " KB, tiny "
                                                << tiny_kb << " KB";
  EXPECT_LT(big_kb - tiny_kb, 1.3 * weights_kb) << "big " << big_kb << " KB, tiny " << tiny_kb << " KB";
}

TEST(Artifact, EveryFlippedBitIsACaughtDamageNotACrash) {
  TinyModel model;
  const std::string path = temp_path("flip.tsr");
  write_artifact(model.artifact, path);
  const std::string good = read_bytes(path);
  std::mt19937_64 random(27);
  // Bits in the sections' bytes (past the header and the first section's
  // header), the kernels' and the weights' above all.
  for (int i = 0; i < 40; ++i) {
    std::string bytes = good;
    const size_t at = 40 + random() % (bytes.size() - 40);
    bytes[at] = static_cast<char>(bytes[at] ^ (1 << (random() % 8)));
    write_bytes(path, bytes);
    try {
      GraphExecutor ex = GraphExecutor::load(path);
      ADD_FAILURE() << "byte " << at << " flipped, and the artifact loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  unlink(path.c_str());
}

TEST(Npy, RoundTripsAndRefusesOtherDtypes) {
  NDArray a({2, 3, 4});
  a.fill_random(3);
  const std::string path = temp_path("a.npy");
  write_npy(a, path);
  NDArray b = read_npy(path);
  EXPECT_EQ(b.shape(), a.shape());
  for (int64_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]);
  // The header is padded so that the data starts at a multiple of 64 bytes.
  EXPECT_EQ((read_bytes(path).size() - a.size() * 4) % 64, 0u);

  std::string f8 = read_bytes(path);
  f8.replace(f8.find("<f4"), 3, "<f8");
  write_bytes(path, f8);
  try {
    read_npy(path);
    FAIL() << "read float64 as float32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dtype <f8, Tessera reads float32 ('<f4') and integers"), std::string::npos)
        << e.what();
  }
  std::string shortened = read_bytes(path);
  write_bytes(path, shortened.substr(0, shortened.size() - 4));
  EXPECT_THROW(read_npy(path), Error);
  unlink(path.c_str());
}

// A hand-made .npy: version 1.0, `header` padded to 64 bytes, then `data`.
std::string npy_bytes(std::string header, const std::string& data) {
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const uint16_t n = static_cast<uint16_t>(header.size());
  out.append(reinterpret_cast<const char*>(&n), 2);
  return out + header + data;
}

void expect_npy_error(const std::string& bytes, const std::string& message) {
  const std::string path = temp_path("hostile.npy");
  write_bytes(path, bytes);
  try {
    read_npy(path);
    ADD_FAILURE() << "read without error; wanted: " << message;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  unlink(path.c_str());
}

TEST(Npy, IntegersAreReadAsExactFloatsAndHugeOnesRefused) {
  // Token ids as numpy saves them (int64), and a boolean mask.
  const std::vector<int64_t> ids = {0, 7, -3, 50256, (int64_t{1} << 24)};
  const std::string path = temp_path("ids.npy");
  write_bytes(path, npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }",
                              std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * 8)));
  NDArray a = read_npy(path);
  ASSERT_EQ(a.shape(), (std::vector<int64_t>{5}));
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(a[static_cast<int64_t>(i)], static_cast<float>(ids[i]));
  write_bytes(path, npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (1, 3), }", std::string("\1\0\1", 3)));
  a = read_npy(path);
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[1], 0.0f);
  EXPECT_EQ(a[2], 1.0f);
  unlink(path.c_str());
  // 2^24 + 1 has no float32: refused, not rounded to a neighbouring id.
  const int64_t huge = (int64_t{1} << 24) + 1;
  expect_npy_error(npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
                             std::string(reinterpret_cast<const char*>(&huge), 8)),
                   "element 0 is 16777217, beyond the integers float32 holds exactly");
}

TEST(Npy, AHeaderIsParsedAsADictNotSearchedForWords) {
  const std::string four_floats(16, '\0');
  // A float64 file whose header mentions '<f4' inside another value.
  expect_npy_error(npy_bytes("{'shape': (4,), 'x': \"'descr': '<f4'\", 'descr': '<f8', 'fortran_order': False}", four_floats),
                   "unknown key 'x'");
  expect_npy_error(npy_bytes("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", four_floats),
                   "'descr' appears twice");
  expect_npy_error(npy_bytes("{'fortran_order': False, 'shape': (4,)}", four_floats), "no dtype");
  // The real thing, spelled with numpy's trailing comma.
  const std::string path = temp_path("ok.npy");
  write_bytes(path, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", four_floats));
  EXPECT_EQ(read_npy(path).shape(), (std::vector<int64_t>{2, 2}));
  unlink(path.c_str());
}

TEST(Npy, ASmallFileClaimingAHugeShapeIsRefusedBeforeAllocating) {
  // 500,000,000 floats would be 2 GB; the file has 16 bytes of data.
  expect_npy_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (500000000,), }", std::string(16, '\0')),
                   "shorter than its shape needs: 16 bytes of data for 2000000000");
  // Trailing bytes after the data are damage too.
  expect_npy_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", std::string(12, '\0')),
                   "4 bytes after the data");
}

}  // namespace
}  // namespace tessera::runtime
