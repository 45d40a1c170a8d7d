#pragma once
// Einsum of one or two operands as the operators the build compiles.
// Two operands: letters only one operand has and the output lacks are summed
// away first; the rest are batch letters (both operands and the output),
// contracted letters (both operands, not the output) and each operand's free
// letters (the output's). Each operand is transposed to (batch, free,
// contracted) and reshaped to three axes, one batch_matmul multiplies them
// (it takes B as (batch, N, K)), and the product is reshaped and transposed
// into the output's order. One operand: a sum over the letters the output
// lacks and a transpose. Attention's forms ("bhid,bhjd->bhij",
// "bhij,bhjd->bhid") and any permuted or batched matrix product take this
// path; a letter repeated in one operand (a diagonal) is refused.
#include <string>
#include <vector>

#include "graph/builder.h"

namespace tessera::graph {

// Adds `equation` over `operands` (one or two) to `b`; returns the output
// node. Throws tessera::Error naming the equation for what it does not take.
NodeId einsum(GraphBuilder& b, const std::string& equation, std::vector<NodeId> operands, const std::string& name);

}  // namespace tessera::graph
