#include "schedule/trace.h"

#include <algorithm>
#include <set>

#include "ir/functor.h"
#include "schedule/iter_names.h"
#include "schedule/stage_steps.h"
#include "support/bounded_json.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::schedule {

namespace {

using nlohmann::json;

// Stages attached at a removed iterator follow it to its replacement.
void retarget_attachments(State& state, const std::string& stage, const std::string& old_iter,
                          const std::string& new_iter) {
  for (auto& s : state.stages())
    if (s.location == Location::At && s.attach_stage == stage && s.attach_iter == old_iter)
      s.attach_iter = new_iter;
}

void apply_split(State& state, const SplitStep& st) {
  Stage& s = state.stage(st.stage);
  s.split(st);
  retarget_attachments(state, st.stage, st.iter, split_part(st.iter, st.lengths.size()));
}

void apply_fuse(State& state, const FuseStep& st) {
  Stage& s = state.stage(st.stage);
  s.fuse(st);
  const std::string fused = fused_name(st.iters);
  for (const auto& n : st.iters) retarget_attachments(state, st.stage, n, fused);
}

bool reads_stage(const State& state, int consumer, int producer, std::set<int>& seen) {
  if (!seen.insert(consumer).second) return false;
  for (const auto& in : state.stages()[consumer].tensor->inputs()) {
    int p = state.stage_of(in.get());
    if (p < 0) continue;
    if (p == producer) return true;
    if (state.stages()[p].location == Location::Inlined && reads_stage(state, p, producer, seen)) return true;
  }
  return false;
}

bool is_output(const State& state, const Stage& s) {
  for (const auto& o : state.dag().outputs())
    if (state.stage_of(o.get()) == state.stage_index(s.name())) return true;
  return false;
}

void apply_compute_at(State& state, const ComputeAtStep& st) {
  int p = state.stage_index(st.stage), c = state.stage_index(st.target_stage);
  Stage& target = state.stages()[c];
  target.iter_index(st.target_iter);  // validates
  // The target reads the stage, or a stage computed inside the target's
  // loops does (lowering checks that it is computed at the same or a deeper loop).
  auto reads = [&](int consumer) {
    std::set<int> seen;
    return reads_stage(state, consumer, p, seen);
  };
  bool read = reads(c);
  for (size_t q = 0; q < state.stages().size() && !read; ++q) {
    const Stage& qs = state.stages()[q];
    read = qs.location == Location::At && qs.attach_stage == st.target_stage && reads(static_cast<int>(q));
  }
  if (!read)
    throw Error("compute_at: neither stage " + support::quoted(st.target_stage) +
                " nor a stage computed inside it reads " + support::quoted(st.stage));
  if (target.location == Location::Inlined)
    throw Error("compute_at: target stage " + support::quoted(st.target_stage) + " is inlined");
  Stage& s = state.stages()[p];
  s.location = Location::At;
  s.attach_stage = st.target_stage;
  s.attach_iter = st.target_iter;
}

void apply_compute_inline(State& state, const ComputeInlineStep& st) {
  Stage& s = state.stage(st.stage);
  if (s.tensor->is_reduction()) throw Error("compute_inline: stage " + support::quoted(st.stage) + " is a reduction");
  if (is_output(state, s))
    throw Error("compute_inline: stage " + support::quoted(st.stage) + " is an output of the task");
  for (const auto& o : state.stages())
    if (o.location == Location::At && o.attach_stage == st.stage)
      throw Error("compute_inline: stage " + support::quoted(o.name()) + " is computed at " +
                  support::quoted(st.stage));
  s.location = Location::Inlined;
}

void apply_pragma(State& state, const PragmaStep& st) {
  Stage& s = state.stage(st.stage);
  s.iter_index(st.iter);
  const std::string key = "auto_unroll_max_step$";
  if (st.pragma.rfind(key, 0) != 0)
    throw Error("unknown pragma " + support::quoted(st.pragma) + " (valid: auto_unroll_max_step$N)");
  int64_t n = 0;
  try {
    size_t used = 0;
    const std::string digits = st.pragma.substr(key.size());
    n = std::stoll(digits, &used);
    if (used != digits.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw Error("pragma " + support::quoted(st.pragma) + ": N is not a whole number");
  }
  if (n < 0 || n > kMaxAutoUnrollStep)
    throw Error("pragma " + support::quoted(st.pragma) + ": N must be from 0 to " + std::to_string(kMaxAutoUnrollStep));
  s.auto_unroll_max_step = n;
}

template <class... Ts> struct Overloaded : Ts... { using Ts::operator()...; };
template <class... Ts> Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

void apply(State& state, const Step& step) {
  std::visit(Overloaded{
                 [&](const SplitStep& s) { apply_split(state, s); },
                 [&](const ReorderStep& s) { state.stage(s.stage).reorder(s); },
                 [&](const FuseStep& s) { apply_fuse(state, s); },
                 [&](const AnnotateStep& s) { state.stage(s.stage).annotate(s); },
                 [&](const ComputeAtStep& s) { apply_compute_at(state, s); },
                 [&](const ComputeInlineStep& s) { apply_compute_inline(state, s); },
                 [&](const ComputeRootStep& s) { state.stage(s.stage).location = Location::Root; },
                 [&](const CacheWriteStep& s) { apply_cache_write(state, s); },
                 [&](const CacheReadStep& s) { apply_cache_read(state, s); },
                 [&](const RfactorStep& s) { apply_rfactor(state, s); },
                 [&](const PragmaStep& s) { apply_pragma(state, s); },
             },
             step);
}

json to_json(const Step& step) {
  return std::visit(
      Overloaded{
          [](const SplitStep& s) { return json{{"step", "split"}, {"stage", s.stage}, {"iter", s.iter}, {"lengths", s.lengths}}; },
          [](const ReorderStep& s) { return json{{"step", "reorder"}, {"stage", s.stage}, {"order", s.order}}; },
          [](const FuseStep& s) { return json{{"step", "fuse"}, {"stage", s.stage}, {"iters", s.iters}}; },
          [](const AnnotateStep& s) {
            return json{{"step", "annotate"}, {"stage", s.stage}, {"iter", s.iter}, {"annotation", to_string(s.annotation)}};
          },
          [](const ComputeAtStep& s) {
            return json{{"step", "compute_at"}, {"stage", s.stage}, {"target_stage", s.target_stage}, {"target_iter", s.target_iter}};
          },
          [](const ComputeInlineStep& s) { return json{{"step", "compute_inline"}, {"stage", s.stage}}; },
          [](const ComputeRootStep& s) { return json{{"step", "compute_root"}, {"stage", s.stage}}; },
          // A scope is written only when given: CPU schedules read as before.
          [](const CacheWriteStep& s) {
            json j{{"step", "cache_write"}, {"stage", s.stage}};
            if (!s.scope.empty()) j["scope"] = s.scope;
            return j;
          },
          [](const CacheReadStep& s) {
            json j{{"step", "cache_read"}, {"stage", s.stage}, {"tensor", s.tensor}, {"layout", s.layout}};
            if (!s.scope.empty()) j["scope"] = s.scope;
            if (!s.dtype.empty()) j["dtype"] = s.dtype;
            return j;
          },
          [](const RfactorStep& s) {
            json j{{"step", "rfactor"}, {"stage", s.stage}, {"axis", s.axis}, {"factor", s.factor}};
            if (s.by_range) j["by_range"] = true;  // written only when set: earlier records read as before
            return j;
          },
          [](const PragmaStep& s) { return json{{"step", "pragma"}, {"stage", s.stage}, {"iter", s.iter}, {"pragma", s.pragma}}; },
      },
      step);
}

Step step_from_json(const json& j) {
  try {
    const std::string kind = j.at("step").get<std::string>();
    auto str = [&](const char* k) { return j.at(k).get<std::string>(); };
    if (kind == "split") {
      const json& lengths = j.at("lengths");
      if (!lengths.is_array() || lengths.size() > kMaxSplitLengths)
        throw Error("split lengths must be an array of at most " + std::to_string(kMaxSplitLengths) + " integers");
      for (const json& l : lengths)
        if (!l.is_number_integer())
          throw Error("split lengths must be integers, got " +
                      support::quoted(l.dump(-1, ' ', false, json::error_handler_t::replace)));
      return SplitStep{str("stage"), str("iter"), lengths.get<std::vector<int64_t>>()};
    }
    if (kind == "reorder") return ReorderStep{str("stage"), j.at("order").get<std::vector<std::string>>()};
    if (kind == "fuse") return FuseStep{str("stage"), j.at("iters").get<std::vector<std::string>>()};
    if (kind == "annotate") return AnnotateStep{str("stage"), str("iter"), annotation_from_string(str("annotation"))};
    if (kind == "compute_at") return ComputeAtStep{str("stage"), str("target_stage"), str("target_iter")};
    if (kind == "compute_inline") return ComputeInlineStep{str("stage")};
    if (kind == "compute_root") return ComputeRootStep{str("stage")};
    auto optional_str = [&](const char* k) { return j.contains(k) ? str(k) : std::string(); };
    if (kind == "cache_write") return CacheWriteStep{str("stage"), optional_str("scope")};
    if (kind == "cache_read") {
      const json& layout = j.at("layout");
      if (!layout.is_array() || layout.size() > kMaxStageIterators)
        throw Error("cache_read layout must be an array of at most " + std::to_string(kMaxStageIterators) + " integers");
      return CacheReadStep{str("stage"), str("tensor"), layout.get<std::vector<int>>(), optional_str("scope"),
                           optional_str("dtype")};
    }
    if (kind == "rfactor")
      return RfactorStep{str("stage"), str("axis"), j.at("factor").get<int64_t>(),
                         j.contains("by_range") && j.at("by_range").get<bool>()};
    if (kind == "pragma") return PragmaStep{str("stage"), str("iter"), str("pragma")};
    throw Error("unknown step kind " + support::quoted(kind));
  } catch (const json::exception& e) {
    // The step is echoed only when short: it may be megabytes of junk.
    std::string text = j.dump();
    if (text.size() > 200) text = text.substr(0, 200) + "...";
    throw Error("malformed schedule step " + text + ": " + e.what());
  }
}

Trace& Trace::split(const std::string& stage, const std::string& iter, std::vector<int64_t> lengths) {
  return add(SplitStep{stage, iter, std::move(lengths)});
}
Trace& Trace::reorder(const std::string& stage, std::vector<std::string> order) {
  return add(ReorderStep{stage, std::move(order)});
}
Trace& Trace::fuse(const std::string& stage, std::vector<std::string> iters) {
  return add(FuseStep{stage, std::move(iters)});
}
Trace& Trace::annotate(const std::string& stage, const std::string& iter, Annotation a) {
  return add(AnnotateStep{stage, iter, a});
}
Trace& Trace::parallel(const std::string& stage, const std::string& iter) { return annotate(stage, iter, Annotation::Parallel); }
Trace& Trace::vectorize(const std::string& stage, const std::string& iter) { return annotate(stage, iter, Annotation::Vectorize); }
Trace& Trace::unroll(const std::string& stage, const std::string& iter) { return annotate(stage, iter, Annotation::Unroll); }
Trace& Trace::compute_at(const std::string& stage, const std::string& target, const std::string& iter) {
  return add(ComputeAtStep{stage, target, iter});
}
Trace& Trace::compute_inline(const std::string& stage) { return add(ComputeInlineStep{stage}); }
Trace& Trace::compute_root(const std::string& stage) { return add(ComputeRootStep{stage}); }
Trace& Trace::cache_write(const std::string& stage, const std::string& scope) {
  return add(CacheWriteStep{stage, scope});
}
Trace& Trace::cache_read(const std::string& stage, const std::string& tensor, std::vector<int> layout,
                         const std::string& scope, const std::string& dtype) {
  return add(CacheReadStep{stage, tensor, std::move(layout), scope, dtype});
}
Trace& Trace::bind(const std::string& stage, const std::string& iter, Annotation thread_axis) {
  if (!is_gpu_binding(thread_axis))
    throw Error("bind " + stage + "." + iter + ": " + to_string(thread_axis) + " is not a block or thread axis");
  return annotate(stage, iter, thread_axis);
}
Trace& Trace::rfactor(const std::string& stage, const std::string& axis, int64_t factor, bool by_range) {
  return add(RfactorStep{stage, axis, factor, by_range});
}
Trace& Trace::pragma(const std::string& stage, const std::string& iter, const std::string& p) {
  return add(PragmaStep{stage, iter, p});
}

State Trace::replay(const ir::ComputeDAG& dag) const {
  State state(dag);
  for (size_t i = 0; i < steps_.size(); ++i) {
    try {
      apply(state, steps_[i]);
    } catch (const Error& e) {
      std::string step = schedule::to_json(steps_[i]).dump(-1, ' ', false, json::error_handler_t::replace);
      if (step.size() > 200) step = step.substr(0, 200) + "...";
      throw Error("schedule step " + std::to_string(i) + " " + step + ": " + e.what());
    }
  }
  return state;
}

json Trace::to_json() const {
  json steps = json::array();
  for (const auto& s : steps_) steps.push_back(schedule::to_json(s));
  return steps;
}

Trace Trace::from_json(const json& j) {
  if (!j.is_array()) throw Error("a schedule trace must be a JSON array of steps, got: " + j.dump().substr(0, 80));
  if (j.size() > kMaxTraceSteps)
    throw Error("a schedule trace holds at most " + std::to_string(kMaxTraceSteps) + " steps, got " +
                std::to_string(j.size()));
  Trace t;
  for (const auto& s : j) t.add(step_from_json(s));
  return t;
}

Trace Trace::parse(const std::string& text) {
  json j;
  try {
    j = support::parse_bounded_json(text);
  } catch (const Error& e) {
    throw Error(std::string("schedule: ") + e.what());
  }
  return from_json(j);
}

}  // namespace tessera::schedule
