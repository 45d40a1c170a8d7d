#include "runtime/executable_graph.h"

#include <algorithm>
#include <set>

#include "runtime/stored_values.h"
#include "support/checked_math.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

constexpr int kFormatVersion = 1;

std::string describe(const ExecutableGraph& g, int tensor) {
  return "tensor " + std::to_string(tensor) + " (" + support::quoted(g.tensors[tensor].name) + ")";
}

}  // namespace

int64_t ExecutableGraph::num_elements(int tensor) const {
  const Tensor& t = tensors.at(tensor);
  return support::bounded_product(t.shape, [&] { return "tensor " + support::quoted(t.name); });
}

int64_t ExecutableGraph::element_bytes(int tensor) const {
  const Tensor& t = tensors.at(tensor);
  return t.half ? 2 : stored_element_bytes(t.stored_as);
}

int ExecutableGraph::storage_root(int tensor) const {
  while (tensors.at(tensor).view_of >= 0) tensor = tensors[tensor].view_of;  // validate: views point back
  return tensor;
}

void ExecutableGraph::validate() const {
  const int n = static_cast<int>(tensors.size());
  auto check_id = [&](int id, const std::string& where) {
    if (id < 0 || id >= n)
      throw Error(where + " names tensor " + std::to_string(id) + ", but the graph has " + std::to_string(n));
  };
  for (int t = 0; t < n; ++t) {
    // A shape of no axes is a scalar (a sum over every axis): one element.
    for (int64_t d : tensors[t].shape)
      if (d <= 0) throw Error(describe(*this, t) + " has a dimension of " + std::to_string(d));
    num_elements(t);  // throws on overflow
    if (const int v = tensors[t].view_of; v != -1) {
      if (v < 0 || v >= t) throw Error(describe(*this, t) + " is a view of tensor " + std::to_string(v) + ", not of an earlier one");
      if (num_elements(v) != num_elements(t))
        throw Error(describe(*this, t) + " is a view of " + describe(*this, v) + ", which has another size");
      if (tensors[v].half != tensors[t].half || tensors[v].stored_as != tensors[t].stored_as)
        throw Error(describe(*this, t) + " is a view of " + describe(*this, v) + ", which is stored in another precision");
    }
  }
  auto is_view = [&](int id) { return tensors[id].view_of >= 0; };
  // Which tensors hold data before the first call: inputs and constants.
  std::vector<bool> ready(n, false);
  auto mark_given = [&](const std::vector<int>& ids, const std::string& what) {
    for (int id : ids) {
      check_id(id, what);
      if (is_view(id)) throw Error(describe(*this, id) + " is a view: it cannot be an input or a constant");
      if (ready[id]) throw Error(describe(*this, id) + " is listed twice among the inputs and constants");
      ready[id] = true;
    }
  };
  mark_given(inputs, "an input");
  mark_given(constants, "a constant");
  for (int t = 0; t < n; ++t)
    if (tensors[t].integer && std::find(inputs.begin(), inputs.end(), t) == inputs.end())
      throw Error(describe(*this, t) + " is marked integer, which only an input may be");
  for (int t = 0; t < n; ++t)
    if (const std::string& s = tensors[t].stored_as; !s.empty() && s != "int8" && s != "uint8" && s != "int32")
      throw Error(describe(*this, t) + " is stored as " + support::quoted(s) + ": int8, uint8 or int32 are");
  for (int t : inputs) {  // ids checked by mark_given
    if (tensors[t].half) throw Error(describe(*this, t) + " is an input stored in half precision: inputs are float32");
    if (!tensors[t].stored_as.empty())
      throw Error(describe(*this, t) + " is an input stored as " + tensors[t].stored_as + ": inputs are float32");
  }
  for (size_t c = 0; c < calls.size(); ++c) {
    const Call& call = calls[c];
    const std::string where = "call " + std::to_string(c) + " (" + support::quoted(call.kernel) + ")";
    if (call.kernel.empty()) throw Error(where + " has no kernel name");
    if (call.outputs.empty()) throw Error(where + " writes no tensor");
    for (int id : call.inputs) {
      check_id(id, where);
      if (!ready[storage_root(id)]) throw Error(where + " reads " + describe(*this, id) + " before anything writes it");
    }
    for (int id : call.outputs) {
      check_id(id, where);
      if (is_view(id)) throw Error(where + " writes " + describe(*this, id) + ", a view");
      if (ready[id]) throw Error(where + " writes " + describe(*this, id) + ", which already holds data");
      ready[id] = true;
    }
  }
  if (outputs.empty()) throw Error("the graph has no outputs");
  for (int id : outputs) {
    check_id(id, "an output");
    if (!ready[storage_root(id)]) throw Error("output " + describe(*this, id) + " is never written");
    if (tensors[id].half)
      throw Error(describe(*this, id) + " is an output stored in half precision: outputs are float32");
    if (!tensors[storage_root(id)].stored_as.empty())
      throw Error(describe(*this, id) + " is an output stored as " + tensors[storage_root(id)].stored_as +
                  ": outputs are float32 (dequantize it)");
  }
}

bool ExecutableGraph::has_half_tensors() const {
  return std::any_of(tensors.begin(), tensors.end(), [](const Tensor& t) { return t.half; });
}

nlohmann::json ExecutableGraph::to_json() const {
  nlohmann::json j;
  j["version"] = kFormatVersion;
  j["tensors"] = nlohmann::json::array();
  for (const auto& t : tensors) {
    nlohmann::json tensor = {{"name", t.name}, {"shape", t.shape}};
    if (t.view_of >= 0) tensor["view_of"] = t.view_of;
    if (t.integer) tensor["integer"] = true;
    if (t.half) tensor["half"] = true;
    if (!t.stored_as.empty()) tensor["stored_as"] = t.stored_as;
    j["tensors"].push_back(tensor);
  }
  j["inputs"] = inputs;
  j["constants"] = constants;
  j["outputs"] = outputs;
  j["calls"] = nlohmann::json::array();
  for (const auto& c : calls) j["calls"].push_back({{"kernel", c.kernel}, {"inputs", c.inputs}, {"outputs", c.outputs}});
  return j;
}

ExecutableGraph ExecutableGraph::from_json(const nlohmann::json& j, const std::string& source) {
  ExecutableGraph g;
  try {
    if (!j.is_object()) throw Error("not a JSON object");
    const int version = j.at("version").get<int>();
    if (version != kFormatVersion)
      throw Error("graph format version " + std::to_string(version) + ", this runtime reads version " +
                  std::to_string(kFormatVersion));
    for (const auto& t : j.at("tensors"))
      g.tensors.push_back({t.at("name").get<std::string>(), t.at("shape").get<std::vector<int64_t>>(),
                           t.value("view_of", -1), t.value("integer", false), t.value("half", false),
                           t.value("stored_as", std::string())});
    g.inputs = j.at("inputs").get<std::vector<int>>();
    g.constants = j.at("constants").get<std::vector<int>>();
    g.outputs = j.at("outputs").get<std::vector<int>>();
    for (const auto& c : j.at("calls"))
      g.calls.push_back({c.at("kernel").get<std::string>(), c.at("inputs").get<std::vector<int>>(),
                         c.at("outputs").get<std::vector<int>>()});
    g.validate();
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": damaged graph: " + e.what());
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return g;
}

}  // namespace tessera::runtime
