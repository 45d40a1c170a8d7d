#pragma once
// Tensor expressions: immutable, shared nodes. Integer expressions are 64-bit
// (indices); floating point is fp32. Variables compare by identity.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::ir {

// Float16, Int8 and UInt8 are storage types (half storage: half the memory
// traffic; quantized networks: a quarter): a tensor holds its elements in
// them, arithmetic on a loaded element happens in its compute_type (Float32,
// Int32), and a store into such a tensor rounds to the nearest half or keeps
// the low byte (the value must already be in range: quantized kernels clamp
// before). Code generators convert at the memory.
enum class DType { Float32, Int64, Bool, Float16, Int8, UInt8, Int32 };
std::string to_string(DType t);
int64_t size_in_bytes(DType t);  // of one element
// The type arithmetic on a loaded element has: Float32 for Float16, Int32 for
// Int8 and UInt8, else itself.
DType compute_type(DType storage);
bool is_integer(DType t);  // Int8, UInt8, Int32, Int64

enum class ExprKind {
  IntImm, FloatImm, Var,
  Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max,
  EQ, NE, LT, LE, GT, GE, And, Or,
  Not, Select, Cast, Call, TensorLoad, Reduce,
};
bool is_binary(ExprKind k);
bool is_comparison(ExprKind k);

struct ExprNode {
  ExprNode(ExprKind k, DType t) : kind(k), dtype(t) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  const DType dtype;
};

class Expr {
 public:
  Expr() = default;
  Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}  // NOLINT
  Expr(int v);      // NOLINT: integer literal
  Expr(int64_t v);  // NOLINT
  Expr(float v);    // NOLINT: fp32 literal
  Expr(double v);   // NOLINT

  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  explicit operator bool() const { return node_ != nullptr; }
  ExprKind kind() const { return node_->kind; }
  DType dtype() const { return node_->dtype; }
  template <class T> const T* as() const { return dynamic_cast<const T*>(node_.get()); }
  bool same_as(const Expr& o) const { return node_ == o.node_; }
  const std::shared_ptr<const ExprNode>& ptr() const { return node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct IntImmNode : ExprNode {
  explicit IntImmNode(int64_t v) : ExprNode(ExprKind::IntImm, DType::Int64), value(v) {}
  const int64_t value;
};
struct FloatImmNode : ExprNode {
  explicit FloatImmNode(double v) : ExprNode(ExprKind::FloatImm, DType::Float32), value(v) {}
  const double value;
};
struct VarNode : ExprNode {
  explicit VarNode(std::string n, DType t = DType::Int64) : ExprNode(ExprKind::Var, t), name(std::move(n)) {}
  const std::string name;
};
struct BinaryNode : ExprNode {
  BinaryNode(ExprKind k, DType t, Expr x, Expr y) : ExprNode(k, t), a(std::move(x)), b(std::move(y)) {}
  const Expr a, b;
};
struct NotNode : ExprNode {
  explicit NotNode(Expr x) : ExprNode(ExprKind::Not, DType::Bool), a(std::move(x)) {}
  const Expr a;
};
struct SelectNode : ExprNode {
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(ExprKind::Select, t.dtype()), cond(std::move(c)), true_value(std::move(t)), false_value(std::move(f)) {}
  const Expr cond, true_value, false_value;
};
struct CastNode : ExprNode {
  CastNode(DType t, Expr v) : ExprNode(ExprKind::Cast, t), value(std::move(v)) {}
  const Expr value;
};
// Pure math intrinsics on fp32: exp, log, sqrt, tanh, sigmoid, fabs, erf of
// one argument; pow of two.
struct CallNode : ExprNode {
  CallNode(std::string n, std::vector<Expr> a) : ExprNode(ExprKind::Call, DType::Float32), name(std::move(n)), args(std::move(a)) {}
  const std::string name;
  const std::vector<Expr> args;
};

class Var : public Expr {
 public:
  Var() = default;
  explicit Var(const std::string& name, DType t = DType::Int64);
  explicit Var(std::shared_ptr<const VarNode> n) : Expr(std::move(n)) {}
  const VarNode* node() const { return as<VarNode>(); }
  const std::string& name() const { return node()->name; }
};

struct VarHash {
  size_t operator()(const Var& v) const { return std::hash<const void*>()(v.get()); }
};
struct VarEq {
  bool operator()(const Var& a, const Var& b) const { return a.get() == b.get(); }
};

// Constructors.
Expr make_int(int64_t v);
Expr make_float(double v);
Expr make_bool(bool v);
Expr binary(ExprKind k, Expr a, Expr b);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DType t, Expr v);
Expr call(const std::string& name, std::vector<Expr> args);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr logical_not(Expr a);
Expr exp(Expr a);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // truncating for ints
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);

// Helpers for constants.
bool is_const_int(const Expr& e, int64_t* value = nullptr);
bool is_const_int(const Expr& e, int64_t value_wanted);
std::string kind_name(ExprKind k);

}  // namespace tessera::ir
