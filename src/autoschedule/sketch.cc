#include "autoschedule/sketch.h"

#include <algorithm>
#include <sstream>

#include "schedule/iter_names.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::autoschedule {

namespace {

template <class... Ts> struct Overloaded : Ts... { using Ts::operator()...; };
template <class... Ts> Overloaded(Ts...) -> Overloaded<Ts...>;

// "compute_at conv T_relu ax3.1": the step's kind and stage, then its other
// fields in the order a schedule is read.
std::string step_text(const nlohmann::json& j) {
  std::string s = j.at("step").get<std::string>() + " " + j.at("stage").get<std::string>();
  for (const char* key : {"tensor", "layout", "iter", "iters", "lengths", "order", "annotation", "target_stage", "target_iter", "pragma"})
    if (j.contains(key)) s += " " + (j[key].is_string() ? j[key].get<std::string>() : j[key].dump());
  return s;
}

std::vector<int64_t> grouped_lengths(const std::vector<int64_t>& lengths, const std::vector<int>& groups, int skip) {
  std::vector<int64_t> out;
  size_t next = static_cast<size_t>(skip);
  for (int g : groups) {
    int64_t product = 1;
    for (int i = 0; i < g && next < lengths.size(); ++i) product *= lengths[next++];
    out.push_back(product);
  }
  return out;
}

bool computed_at(const Sketch& sketch, const SketchParams& params, const std::string& stage) {
  for (size_t i = 0; i < sketch.locations.size(); ++i)
    if (sketch.locations[i].stage == stage && params.locations[i] > 0) return true;
  return false;
}

void check_count(const char* what, size_t sites, size_t params) {
  if (sites != params)
    throw Error(std::string("sketch params: ") + std::to_string(params) + " " + what + " values for " +
                std::to_string(sites) + " sites");
}

}  // namespace

const std::vector<int>& auto_unroll_choices() {
  static const std::vector<int> choices = {0, 16, 64, 512};
  return choices;
}

std::string Sketch::print() const {
  std::ostringstream out;
  for (const auto& r : rules) out << "  # " << r << "\n";
  for (const auto& step : steps) {
    std::visit(Overloaded{
                   [&](const schedule::Step& s) { out << "  " << step_text(schedule::to_json(s)) << "\n"; },
                   [&](const TiledSplit& s) {
                     const TileSlot& t = tiles.at(s.slot);
                     out << "  split " << s.stage << " " << s.iter << " [";
                     for (int i = 0; i < t.lengths; ++i) out << (i ? ", " : "") << "?";
                     out << "]  (tile " << s.slot << " of " << t.extent << ")\n";
                   },
                   [&](const FollowSplit& s) {
                     out << "  split " << s.stage << " " << s.iter << " following tile " << s.slot;
                     if (s.skip) out << " after its first " << s.skip;
                     out << " grouped [";
                     for (size_t i = 0; i < s.groups.size(); ++i) out << (i ? ", " : "") << s.groups[i];
                     out << "]\n";
                   },
                   [&](const TiledRfactor& s) {
                     out << "  rfactor " << s.stage << " " << s.axis << " by the product of tile " << s.slot << "\n";
                   },
                   [&](const FetchSplit& s) {
                     const bool warps = blocks.at(s.block).threads_per_unit > 1;
                     out << "  split " << s.stage << " " << s.iter << " by the " << (warps ? "warps" : "threads")
                         << " of block " << s.block << " [";
                     const auto& lengths = blocks.at(s.block).lengths;
                     for (size_t i = 0; i < lengths.size(); ++i)
                       out << (i ? " x " : "") << "tile " << lengths[i].first << "[" << lengths[i].second << "]";
                     out << "]";
                     if (warps) out << " x 32 lanes";
                     if (s.vector_site >= 0) out << ", x" << s.lanes << " lanes if vectorize site " << s.vector_site;
                     out << "\n";
                   },
               },
               step);
  }
  for (const auto& p : parallel) {
    out << "  parallel? " << p.stage << " fusing some of [";
    for (size_t i = 0; i < p.iters.size(); ++i) out << (i ? ", " : "") << p.iters[i];
    out << "]\n";
  }
  for (const auto& v : vectorize) out << "  vectorize? " << v.stage << " " << v.iter << "\n";
  for (const auto& u : unroll) out << "  auto-unroll? " << u.stage << " " << u.iter << "\n";
  for (const auto& p : pipeline) out << "  pipeline? " << p.stage << " " << p.iter << "\n";
  for (const auto& l : locations) {
    out << "  compute location? " << l.stage << ": root or at " << l.target_stage << " [";
    for (size_t i = 0; i < l.target_iters.size(); ++i) out << (i ? ", " : "") << l.target_iters[i];
    out << "]\n";
  }
  return out.str();
}

nlohmann::json SketchParams::to_json() const {
  return {{"tiles", tiles}, {"parallel", parallel}, {"vectorize", vectorize}, {"unroll", unroll},
          {"locations", locations}, {"pipeline", pipeline}};
}

void check_params(const Sketch& sketch, const SketchParams& params) {
  check_count("tile", sketch.tiles.size(), params.tiles.size());
  check_count("parallel", sketch.parallel.size(), params.parallel.size());
  check_count("vectorize", sketch.vectorize.size(), params.vectorize.size());
  check_count("unroll", sketch.unroll.size(), params.unroll.size());
  check_count("location", sketch.locations.size(), params.locations.size());
  check_count("pipeline", sketch.pipeline.size(), params.pipeline.size());
  for (size_t i = 0; i < sketch.tiles.size(); ++i) {
    const TileSlot& t = sketch.tiles[i];
    const auto& lengths = params.tiles[i];
    int64_t product = 1;
    bool positive = lengths.size() == static_cast<size_t>(t.lengths);
    for (int64_t l : lengths) {
      positive = positive && l >= 1 && l <= t.extent;
      if (positive) product *= l;
    }
    if (!positive || t.extent % product != 0)
      throw Error("sketch params: tile " + std::to_string(i) + " (" + t.stage + " " + t.iter + ", extent " +
                  std::to_string(t.extent) + ") needs " + std::to_string(t.lengths) +
                  " lengths whose product divides the extent, got " + nlohmann::json(lengths).dump());
  }
  for (size_t i = 0; i < sketch.parallel.size(); ++i)
    if (params.parallel[i] < 0 || params.parallel[i] > static_cast<int>(sketch.parallel[i].iters.size()))
      throw Error("sketch params: parallel site " + std::to_string(i) + " fuses 0 to " +
                  std::to_string(sketch.parallel[i].iters.size()) + " loops, got " + std::to_string(params.parallel[i]));
  for (size_t i = 0; i < sketch.vectorize.size(); ++i)
    if (params.vectorize[i] != 0 && params.vectorize[i] != 1)
      throw Error("sketch params: vectorize site " + std::to_string(i) + " is 0 or 1");
  for (size_t i = 0; i < sketch.unroll.size(); ++i) {
    const auto& c = auto_unroll_choices();
    if (std::find(c.begin(), c.end(), params.unroll[i]) == c.end())
      throw Error("sketch params: unroll site " + std::to_string(i) + " got " + std::to_string(params.unroll[i]));
  }
  for (size_t i = 0; i < sketch.locations.size(); ++i)
    if (params.locations[i] < 0 || params.locations[i] > static_cast<int>(sketch.locations[i].target_iters.size()))
      throw Error("sketch params: location site " + std::to_string(i) + " got " + std::to_string(params.locations[i]));
  for (size_t i = 0; i < sketch.pipeline.size(); ++i)
    if (params.pipeline[i] != 0 && params.pipeline[i] != 1)
      throw Error("sketch params: pipeline site " + std::to_string(i) + " is 0 or 1");
}

int64_t block_units(const Sketch& sketch, const SketchParams& params, int block) {
  int64_t units = 1;
  for (const auto& [slot, index] : sketch.blocks.at(block).lengths) units *= params.tiles.at(slot).at(index);
  return units;
}

int64_t block_threads(const Sketch& sketch, const SketchParams& params, int block) {
  return block_units(sketch, params, block) * sketch.blocks.at(block).threads_per_unit;
}

schedule::Trace instantiate(const Sketch& sketch, const SketchParams& params) {
  check_params(sketch, params);
  schedule::Trace t;
  for (const auto& step : sketch.steps) {
    std::visit(Overloaded{
                   [&](const schedule::Step& s) { t.add(s); },
                   [&](const TiledSplit& s) { t.split(s.stage, s.iter, params.tiles.at(s.slot)); },
                   [&](const FollowSplit& s) {
                     t.split(s.stage, s.iter, grouped_lengths(params.tiles.at(s.slot), s.groups, s.skip));
                   },
                   [&](const TiledRfactor& s) {
                     int64_t factor = 1;
                     for (int64_t l : params.tiles.at(s.slot)) factor *= l;
                     t.rfactor(s.stage, s.axis, factor);
                   },
                   [&](const FetchSplit& s) {
                     std::vector<int64_t> lengths{block_units(sketch, params, s.block)};
                     const int64_t unit_lanes = sketch.blocks.at(s.block).threads_per_unit;
                     if (unit_lanes > 1) lengths.push_back(unit_lanes);
                     if (s.vector_site >= 0 && params.vectorize.at(s.vector_site)) lengths.push_back(s.lanes);
                     t.split(s.stage, s.iter, lengths);
                   },
               },
               step);
  }
  for (size_t i = 0; i < sketch.locations.size(); ++i) {
    const auto& l = sketch.locations[i];
    if (params.locations[i] > 0) t.compute_at(l.stage, l.target_stage, l.target_iters[params.locations[i] - 1]);
  }
  for (size_t i = 0; i < sketch.unroll.size(); ++i)
    if (params.unroll[i] > 0)
      t.pragma(sketch.unroll[i].stage, sketch.unroll[i].iter, "auto_unroll_max_step$" + std::to_string(params.unroll[i]));
  for (size_t i = 0; i < sketch.vectorize.size(); ++i)
    if (params.vectorize[i]) t.vectorize(sketch.vectorize[i].stage, sketch.vectorize[i].iter);
  for (size_t i = 0; i < sketch.pipeline.size(); ++i)
    if (params.pipeline[i])
      t.add(schedule::AnnotateStep{sketch.pipeline[i].stage, sketch.pipeline[i].iter, schedule::Annotation::Pipeline});
  for (size_t i = 0; i < sketch.parallel.size(); ++i) {
    const auto& p = sketch.parallel[i];
    const int k = params.parallel[i];
    if (k == 0 || computed_at(sketch, params, p.stage)) continue;
    if (k == 1) {
      t.parallel(p.stage, p.iters[0]);
    } else {
      std::vector<std::string> fused(p.iters.begin(), p.iters.begin() + k);
      t.fuse(p.stage, fused);
      t.parallel(p.stage, schedule::fused_name(fused));
    }
  }
  return t;
}

}  // namespace tessera::autoschedule
