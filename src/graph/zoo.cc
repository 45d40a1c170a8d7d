#include "graph/zoo.h"

#include <functional>
#include <utility>

#include "graph/zoo_blocks.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

using Factory = std::function<Graph(int64_t batch, const std::string& layout)>;

const std::vector<std::pair<std::string, Factory>>& networks() {
  using namespace std::placeholders;
  static const std::vector<std::pair<std::string, Factory>> table = {
      {"resnet-18", std::bind(zoo::resnet, 18, _1, _2)},
      {"resnet-34", std::bind(zoo::resnet, 34, _1, _2)},
      {"resnet-50", std::bind(zoo::resnet, 50, _1, _2)},
      {"resnet-101", std::bind(zoo::resnet, 101, _1, _2)},
      {"resnet-152", std::bind(zoo::resnet, 152, _1, _2)},
      {"vgg-11", std::bind(zoo::vgg, 11, _1, _2)},
      {"vgg-13", std::bind(zoo::vgg, 13, _1, _2)},
      {"vgg-16", std::bind(zoo::vgg, 16, _1, _2)},
      {"vgg-19", std::bind(zoo::vgg, 19, _1, _2)},
      {"mobilenet", zoo::mobilenet_v1},
      {"mobilenet-v2", zoo::mobilenet_v2},
      {"squeezenet_v1.1", zoo::squeezenet_v1_1},
      {"inception_v3", zoo::inception_v3},
  };
  return table;
}

}  // namespace

std::vector<std::string> network_names() {
  std::vector<std::string> names;
  for (const auto& entry : networks()) names.push_back(entry.first);
  return names;
}

Graph get_network(const std::string& name, int64_t batch, const std::string& layout) {
  if (layout != "NCHW" && layout != "NHWC")
    throw Error("get_network: layout " + support::quoted(layout) + " is not NCHW or NHWC");
  if (batch < 1 || batch > (int64_t{1} << 20))
    throw Error("get_network: batch " + std::to_string(batch) + " must be between 1 and 2^20");
  for (const auto& [known, factory] : networks())
    if (known == name) return factory(batch, layout);
  std::string valid;
  for (const std::string& n : network_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw Error("get_network: unknown network " + support::quoted(name) + " (valid: " + valid + ")");
}

}  // namespace tessera::graph
