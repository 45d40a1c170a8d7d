#pragma once
// Builds, loads and runs hand-written loop IR in tests.
#include <vector>

#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "ir/tensor.h"
#include "runtime/ndarray.h"
#include "tir/stmt.h"

namespace tessera::codegen::testing {

using ir::Expr;
using ir::Tensor;
using ir::Var;
using tir::ForKind;
using tir::Stmt;

inline Expr at(const Tensor& t, std::vector<Expr> indices) { return ir::load(t, std::move(indices)); }

inline Stmt loop(const Var& v, int64_t extent, Stmt body, ForKind kind = ForKind::Serial) {
  return tir::make_for(v, extent, kind, std::move(body));
}

inline tir::LoweredFunc kernel(std::vector<Tensor> args, Stmt body, const std::string& name = "kernel") {
  return tir::LoweredFunc{name, std::move(args), std::move(body)};
}

// Compiles f for this machine, JIT-loads it and calls it on the arrays (in f.args order).
inline void run(const tir::LoweredFunc& f, std::vector<runtime::NDArray*> arrays) {
  Module module = Module::load_object(compile_to_object(f, Target::host()));
  std::vector<void*> args;
  for (runtime::NDArray* a : arrays) args.push_back(a->data());
  module.function(f.name)(args.data());
}

}  // namespace tessera::codegen::testing
