#include "graph/op.h"

namespace tessera::graph {

Op Op::named(const std::string& name) { return Op(ops::find_operator(name).name); }

const ops::Operator& Op::definition() const { return ops::find_operator(std::string(name_)); }

std::vector<Op> all_ops() {
  std::vector<Op> ops;
  for (const ops::Operator* op : ops::all_operators()) ops.push_back(Op::named(op->name));
  return ops;
}

}  // namespace tessera::graph
