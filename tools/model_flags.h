#pragma once
// --batch, --layout, --shape, --dim, --buckets: how a network (zoo name or .onnx file) is loaded, and
// --no-winograd, --keep-layout: how it is compiled; shared by the whole-network verbs
// (model_command.h, network_tune_command.h).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/model_source.h"

#include "flag_checks.h"

namespace tessera::cli {

// How a network is loaded: --batch, --layout, and for ONNX models --shape
// NAME=DIMS and --dim SYMBOL=N.
struct ModelFlags {
  int64_t batch = 0;  // 0: the model's own (1 for the zoo and a symbolic ONNX batch)
  std::string layout = "NCHW";
  std::vector<std::string> shapes, dims;
  std::string buckets;

  // The flags parsed (throws tessera::Error naming a malformed one).
  graph::ModelOptions options() const {
    graph::ModelOptions o{batch, layout, {}, {}};
    for (const std::string& s : shapes) graph::parse_shape_flag(s, o);
    for (const std::string& d : dims) graph::parse_dim_flag(d, o);
    if (!buckets.empty()) graph::parse_buckets_flag(buckets, o);
    return o;
  }
  bool given() const { return batch != 0 || layout != "NCHW" || !shapes.empty() || !dims.empty() || !buckets.empty(); }
};

inline void add_model_flags(CLI::App* cmd, ModelFlags& model, bool& no_winograd, bool& keep_layout) {
  cmd->add_flag("--no-winograd", no_winograd, "compute every convolution directly (no Winograd F(4x4, 3x3))");
  cmd->add_flag("--keep-layout", keep_layout,
                "kernels compute in the model's layout (--layout), not NCHW<lanes>c: the auto-scheduler's path");
  cmd->add_option("--batch", model.batch,
                  "batch size (default: the model's own; 1 for the zoo and a symbolic ONNX batch)")
      ->check(at_least(1));
  cmd->add_option("--layout", model.layout, "activation layout of the model")
      ->check(CLI::IsMember({"NCHW", "NHWC"}))
      ->capture_default_str();
  cmd->add_option("--shape", model.shapes,
                  "ONNX: an input's shape, NAME=DIMS (e.g. input_ids=1x128; a range 1x1..512 varies that axis); "
                  "repeatable");
  cmd->add_option("--dim", model.dims,
                  "ONNX: the size of a symbolic dimension in every input, SYMBOL=N (e.g. sequence=128), or a range "
                  "SYMBOL=MIN..MAX that one artifact runs at any size of; repeatable");
  cmd->add_option("--buckets", model.buckets,
                  "sizes a varying dimension is compiled at, e.g. 16,64,256,512 (default: powers of two up to the "
                  "range's max, from max/32)");
}

}  // namespace tessera::cli
