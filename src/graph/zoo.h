#pragma once
// The model zoo: the image classifiers that TVM's tutorials fetch with
// get_network, built with seeded random weights (the same weights on every
// run and in both layouts). Architectures follow torchvision's (see each
// zoo_<family>.cc), 1000 classes, outputs are logits [batch, 1000].
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

// name: one of network_names(); layout: "NCHW" (data NCHW, kernels OIHW) or
// "NHWC" (data NHWC, kernels HWIO, the same weights transposed). The input is
// called "data": 224x224 RGB images, 299x299 for inception_v3. Throws
// tessera::Error for an unknown name (listing the valid ones), a batch below 1
// or another layout.
Graph get_network(const std::string& name, int64_t batch = 1, const std::string& layout = "NCHW");

// resnet-18/34/50/101/152, vgg-11/13/16/19, mobilenet, mobilenet-v2,
// squeezenet_v1.1, inception_v3.
std::vector<std::string> network_names();

}  // namespace tessera::graph
