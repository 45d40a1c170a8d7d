#pragma once
// --batch and --layout: how a network (zoo name or .onnx file) is loaded, and
// --no-winograd, --keep-layout: how it is compiled; shared by the whole-network verbs
// (model_command.h, network_tune_command.h).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "flag_checks.h"

namespace tessera::cli {

inline void add_model_flags(CLI::App* cmd, int64_t& batch, std::string& layout, bool& no_winograd, bool& keep_layout) {
  cmd->add_flag("--no-winograd", no_winograd, "compute every convolution directly (no Winograd F(4x4, 3x3))");
  cmd->add_flag("--keep-layout", keep_layout,
                "kernels compute in the model's layout (--layout), not NCHW<lanes>c: the auto-scheduler's path");
  cmd->add_option("--batch", batch, "batch size (default: the model's own; 1 for the zoo and a symbolic ONNX batch)")
      ->check(at_least(1));
  cmd->add_option("--layout", layout, "activation layout of the model")
      ->check(CLI::IsMember({"NCHW", "NHWC"}))
      ->capture_default_str();
}

}  // namespace tessera::cli
