#include "measure/vta_measure.h"

#include <chrono>
#include <filesystem>

#include "ops/conv2d_packed.h"
#include "runtime/vta_device.h"
#include "support/read_file.h"
#include "support/write_file.h"
#include "tessera/error.h"
#include "vta/conv2d_packed.h"
#include "vta/target_config.h"

namespace tessera::measure {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

VtaBuilder::VtaBuilder(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera_vta_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw Error("VtaBuilder: cannot make a temporary directory");
    dir_ = pattern;
    owns_dir_ = true;
  }
}

VtaBuilder::~VtaBuilder() {
  std::error_code ignored;
  if (owns_dir_) std::filesystem::remove_all(dir_, ignored);
}

std::vector<BuildResult> VtaBuilder::build(const std::vector<MeasureInput>& inputs) {
  std::vector<BuildResult> out;
  for (const MeasureInput& in : inputs) {
    const auto start = std::chrono::steady_clock::now();
    BuildResult r;
    try {
      if (in.accelerator.is_null()) throw Error("not an accelerator's kernel (VtaBuilder lowers conv2d_packed.vta)");
      const ops::Conv2dPackedAttrs attrs = ops::conv2d_packed_from_json(in.accelerator.at("workload"));
      const vta::Conv2dPackedSchedule schedule = vta::Conv2dPackedSchedule::from_config(in.accelerator.at("config"));
      const vta::VtaConfig config = vta::config_of(in.target);
      if (const std::string misfit = vta::conv2d_packed_misfit(attrs, schedule, config); !misfit.empty()) {
        r.error = ErrorKind::Instantiation;
        r.error_message = schedule.to_string() + ": " + misfit;
      } else {
        runtime::VtaKernelCode k =
            runtime::VtaKernelCode::of("candidate", vta::lower_conv2d_packed(attrs, schedule, config));
        r.object_path = dir_ + "/candidate_" + std::to_string(counter_++) + ".vta.json";
        r.function_name = "candidate";
        support::write_file_atomically(r.object_path, runtime::VtaCode{config, {std::move(k)}}.to_json().dump());
      }
    } catch (const std::exception& e) {
      r.error = ErrorKind::Instantiation;
      r.error_message = e.what();
    }
    r.time_cost = seconds_since(start);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<MeasureResult> VtaRunner::run(const std::vector<MeasureInput>& inputs,
                                          const std::vector<BuildResult>& builds) {
  std::vector<MeasureResult> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (builds[i].error != ErrorKind::None) {
      out.push_back(result_of_failed_build(builds[i]));
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    MeasureResult r;
    try {
      const std::string& path = builds[i].object_path;
      r.costs.assign(static_cast<size_t>(repeat_),
                     runtime::simulated_seconds_of_program(support::read_file(path), "VTA program '" + path + "'"));
    } catch (const std::exception& e) {
      r.error = ErrorKind::RuntimeDevice;
      r.error_message = e.what();
    }
    r.all_cost = builds[i].time_cost + seconds_since(start);
    r.timestamp = unix_time_now();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tessera::measure
