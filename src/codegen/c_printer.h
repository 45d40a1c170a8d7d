#pragma once
// Prints a lowered kernel as C-family source. to_c writes C-like source for
// people (tessera op --show); CSourcePrinter is the printer it uses, whose
// hooks (types, math functions, loops, buffers, barriers) the GPU source
// emitter (codegen/gpu_source.h) overrides to write CUDA C and OpenCL C.
#include <sstream>
#include <string>

#include "tir/stmt.h"

namespace tessera::codegen {

std::string to_c(const tir::LoweredFunc& f);

// A name made of letters, digits and '_' ("conv.local" -> "conv_local").
std::string c_identifier(const std::string& name);
// A float literal that reads back to the same float ("0.5f", "1e-05f").
std::string float_literal(double v);

class CSourcePrinter {
 public:
  virtual ~CSourcePrinter() = default;
  std::string print(const tir::LoweredFunc& f);

 protected:
  // C operator precedence, higher binds tighter.
  enum Precedence { kSelect = 1, kOr, kAnd, kEquality, kRelational, kAdditive, kMultiplicative, kUnary, kPrimary };

  virtual std::string name(const std::string& n) const;             // of a buffer or variable
  virtual std::string type_name(ir::DType t) const;                // "float", "int64_t", "bool"
  virtual std::string index_type() const { return "int64_t"; }     // loop variables
  virtual std::string function_name(const std::string& name) const;  // "exp" -> "expf"
  // floordiv, floormod, min, max of two printed operands of type t.
  virtual std::string binary_call(ir::ExprKind kind, ir::DType t, const std::string& a, const std::string& b) const;
  virtual void loop(const tir::ForNode* n, int depth);
  virtual void allocate(const tir::AllocateNode* n, int depth);
  virtual void barrier(int depth);
  // An element read and a store, by index text (what half storage converts).
  virtual std::string load_text(const ir::TensorLoadNode& n, const std::string& index);
  virtual void store(const tir::StoreNode* n, int depth);

  // A binary expression's text, its precedence written to *precedence.
  virtual std::string expr_of_binary(const ir::BinaryNode& n, int* precedence);

  void stmt(const tir::Stmt& s, int depth);
  // Wraps e in parentheses when it binds looser than its context needs.
  std::string expr(const ir::Expr& e, int context = 0);
  // i*64 + k for indices (i, k) into shape [.., 64].
  std::string flat_index(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape);
  static std::string indent(int depth) { return std::string(2 * depth, ' '); }

  std::ostringstream out_;

 private:
  std::string expr_text(const ir::Expr& e, int* precedence);
};

}  // namespace tessera::codegen
