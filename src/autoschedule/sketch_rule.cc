#include "autoschedule/sketch_rule.h"

#include <algorithm>

#include "schedule/gpu_schedule.h"
#include "schedule/iter_names.h"
#include "schedule/trace.h"

namespace tessera::autoschedule {

void SketchBuilder::add(const schedule::Step& step) {
  schedule::apply(state_, step);
  sketch_.steps.push_back(step);
}

std::string SketchBuilder::fuse(const std::string& stage, const std::vector<std::string>& iters) {
  if (iters.size() == 1) return iters[0];
  add(schedule::FuseStep{stage, iters});
  return schedule::fused_name(iters);
}

int SketchBuilder::tile(const std::string& stage, const std::string& iter, int lengths) {
  const schedule::Stage& s = state_.stage(stage);
  const schedule::Iterator& it = s.iters.at(s.iter_index(iter));
  const int slot = static_cast<int>(sketch_.tiles.size());
  sketch_.tiles.push_back(TileSlot{stage, iter, it.extent, lengths, it.kind == ir::IterKind::Reduce});
  schedule::apply(state_, schedule::SplitStep{stage, iter, std::vector<int64_t>(lengths, 1)});
  sketch_.steps.push_back(TiledSplit{stage, iter, slot});
  return slot;
}

int SketchBuilder::add_slot(TileSlot slot) {
  sketch_.tiles.push_back(std::move(slot));
  return static_cast<int>(sketch_.tiles.size()) - 1;
}

void SketchBuilder::follow(const std::string& stage, const std::string& iter, int slot, std::vector<int> groups,
                           int skip) {
  schedule::apply(state_, schedule::SplitStep{stage, iter, std::vector<int64_t>(groups.size(), 1)});
  sketch_.steps.push_back(FollowSplit{stage, iter, slot, std::move(groups), skip});
}

void SketchBuilder::rfactor(const std::string& stage, const std::string& axis, int slot) {
  schedule::apply(state_, schedule::RfactorStep{stage, axis, 1});
  sketch_.steps.push_back(TiledRfactor{stage, axis, slot});
}

int SketchBuilder::add_block(BlockThreads threads) {
  sketch_.blocks.push_back(std::move(threads));
  return static_cast<int>(sketch_.blocks.size()) - 1;
}

void SketchBuilder::fetch_split(const std::string& stage, const std::string& iter, int block, int vector_site,
                                int64_t lanes) {
  // (The state holds the loops without the vector lanes: their site may be off.)
  std::vector<int64_t> lengths{1};
  if (sketch_.blocks.at(block).threads_per_unit > 1) lengths.push_back(1);
  schedule::apply(state_, schedule::SplitStep{stage, iter, lengths});
  sketch_.steps.push_back(FetchSplit{stage, iter, block, vector_site, lanes});
}

bool SketchBuilder::structured(const std::string& stage) const {
  return std::find(structured_.begin(), structured_.end(), stage) != structured_.end();
}

std::vector<std::string> names_of(const schedule::Stage& s, ir::IterKind kind) {
  std::vector<std::string> out;
  for (const auto& it : s.iters)
    if (it.kind == kind) out.push_back(it.name);
  return out;
}

std::vector<std::string> parts(const std::vector<std::string>& names, size_t part) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(schedule::split_part(n, part));
  return out;
}

bool untouched(const schedule::Stage& s) { return s.loop_steps.empty() && s.location == schedule::Location::Root; }

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> lists) {
  std::vector<std::string> out;
  for (const auto& l : lists) out.insert(out.end(), l.begin(), l.end());
  return out;
}

std::string add_plain_gpu_stage(SketchBuilder& b, int stage, int max_threads) {
  const schedule::Stage& s = b.stage(stage);
  if (s.location != schedule::Location::Root) return "";
  const std::string name = s.name();
  std::vector<std::string> spatial;
  int64_t elements = 1;
  for (const auto& it : s.iters) {
    if (it.kind != ir::IterKind::Spatial) break;
    spatial.push_back(it.name);
    elements *= it.extent;
  }
  if (spatial.empty()) return "";
  const std::string all = b.fuse(name, spatial);
  b.add(schedule::SplitStep{name, all, {schedule::gpu_block_threads(elements, max_threads)}});
  b.add(schedule::AnnotateStep{name, schedule::split_part(all, 0), schedule::Annotation::BlockX});
  b.add(schedule::AnnotateStep{name, schedule::split_part(all, 1), schedule::Annotation::ThreadX});
  if (s.tensor->is_reduction()) b.sites().unroll.push_back({name, schedule::split_part(all, 0)});
  return schedule::split_part(all, 1);
}

}  // namespace tessera::autoschedule
