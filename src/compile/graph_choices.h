#pragma once
// A graph tuner's choice, read back: its records file names, per chosen
// kernel, the convolutions that take its channel blocks (driver/graph_tuner.h
// writes it). Compiling with that file gives each convolution its blocks.
#include <map>
#include <string>
#include <vector>

#include "graph/passes.h"
#include "records/record.h"

namespace tessera::build {

// The convolutions' blocks a graph tuner's records file chose (records
// without "nodes" choose nothing). Throws tessera::Error when two records
// choose different blocks for one convolution.
std::map<std::string, graph::ConvBlocks> graph_choices(const std::vector<records::Record>& records);

}  // namespace tessera::build
