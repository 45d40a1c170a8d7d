#include "ir/expr.h"

#include <cmath>

#include "tessera/error.h"

namespace tessera::ir {

std::string to_string(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int32: return "int32";
  }
  return "?";
}

int64_t size_in_bytes(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float16: return 2;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
    case DType::Int8: return 1;
    case DType::UInt8: return 1;
    case DType::Int32: return 4;
  }
  return 4;
}

DType compute_type(DType storage) {
  if (storage == DType::Float16) return DType::Float32;
  if (storage == DType::Int8 || storage == DType::UInt8) return DType::Int32;
  return storage;
}

bool is_integer(DType t) { return t == DType::Int8 || t == DType::UInt8 || t == DType::Int32 || t == DType::Int64; }

bool is_binary(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Or; }
bool is_comparison(ExprKind k) { return k >= ExprKind::EQ && k <= ExprKind::GE; }

std::string kind_name(ExprKind k) {
  static const char* names[] = {"IntImm", "FloatImm", "Var", "Add", "Sub", "Mul", "Div", "Mod",
                                "FloorDiv", "FloorMod", "Min", "Max", "EQ", "NE", "LT", "LE",
                                "GT", "GE", "And", "Or", "Not", "Select", "Cast", "Call",
                                "TensorLoad", "Reduce"};
  return names[static_cast<int>(k)];
}

Expr::Expr(int v) : Expr(make_int(v)) {}
Expr::Expr(int64_t v) : Expr(make_int(v)) {}
Expr::Expr(float v) : Expr(make_float(v)) {}
Expr::Expr(double v) : Expr(make_float(v)) {}

Var::Var(const std::string& name, DType t) : Expr(std::make_shared<const VarNode>(name, t)) {}

Expr make_int(int64_t v) { return Expr(std::make_shared<const IntImmNode>(v)); }
Expr make_float(double v) { return Expr(std::make_shared<const FloatImmNode>(v)); }
Expr make_bool(bool v) { return cast(DType::Bool, make_int(v ? 1 : 0)); }

namespace {
void unify_integers(Expr& int32, Expr& int64) {
  if (int64.kind() == ExprKind::IntImm) int64 = cast(DType::Int32, int64);
  else int32 = cast(DType::Int64, int32);
}

// One type for both operands of an arithmetic: an integer meets a float as
// a float (literals like `x * 2`); an Int64 literal meets an Int32 value as
// Int32 (`q - zero_point`), any other Int64 widens the Int32 side; a value
// cast to a storage type (Int8, UInt8) computes in Int32.
void unify(Expr& a, Expr& b) {
  for (Expr* e : {&a, &b})
    if (e->dtype() == DType::Int8 || e->dtype() == DType::UInt8) *e = cast(DType::Int32, *e);
  if (a.dtype() == b.dtype()) return;
  if (a.dtype() == DType::Float32 && is_integer(b.dtype())) b = cast(DType::Float32, b);
  else if (b.dtype() == DType::Float32 && is_integer(a.dtype())) a = cast(DType::Float32, a);
  else if (a.dtype() == DType::Int32 && b.dtype() == DType::Int64) unify_integers(a, b);
  else if (b.dtype() == DType::Int32 && a.dtype() == DType::Int64) unify_integers(b, a);
}
}  // namespace

Expr binary(ExprKind k, Expr a, Expr b) {
  if (!a || !b) throw Error("binary " + kind_name(k) + ": undefined operand");
  if (k == ExprKind::And || k == ExprKind::Or) {
    if (a.dtype() != DType::Bool || b.dtype() != DType::Bool)
      throw Error("logical " + kind_name(k) + " needs boolean operands");
    return Expr(std::make_shared<const BinaryNode>(k, DType::Bool, std::move(a), std::move(b)));
  }
  unify(a, b);
  DType t = is_comparison(k) ? DType::Bool : a.dtype();
  return Expr(std::make_shared<const BinaryNode>(k, t, std::move(a), std::move(b)));
}

Expr select(Expr cond, Expr t, Expr f) {
  if (cond.dtype() != DType::Bool) throw Error("select: condition must be boolean");
  unify(t, f);
  return Expr(std::make_shared<const SelectNode>(std::move(cond), std::move(t), std::move(f)));
}
Expr cast(DType t, Expr v) {
  if (v.dtype() == t) return v;
  return Expr(std::make_shared<const CastNode>(t, std::move(v)));
}
Expr call(const std::string& name, std::vector<Expr> args) {
  // round: to the nearest integer, halves to even (what quantization rounds by).
  static const char* known[] = {"exp", "log", "sqrt", "tanh", "sigmoid", "fabs", "erf", "pow", "round"};
  bool ok = false;
  for (const char* k : known) ok |= name == k;
  if (!ok) throw Error("unknown intrinsic '" + name + "'");
  if (args.size() != (name == "pow" ? 2u : 1u))
    throw Error("intrinsic '" + name + "' takes " + (name == "pow" ? "two arguments" : "one argument"));
  for (auto& a : args) a = cast(DType::Float32, a);
  return Expr(std::make_shared<const CallNode>(name, std::move(args)));
}
Expr floordiv(Expr a, Expr b) { return binary(ExprKind::FloorDiv, std::move(a), std::move(b)); }
Expr floormod(Expr a, Expr b) { return binary(ExprKind::FloorMod, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return binary(ExprKind::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(ExprKind::Max, std::move(a), std::move(b)); }
Expr logical_not(Expr a) { return Expr(std::make_shared<const NotNode>(std::move(a))); }
Expr exp(Expr a) { return call("exp", {std::move(a)}); }

Expr operator+(Expr a, Expr b) { return binary(ExprKind::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(ExprKind::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(ExprKind::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return binary(ExprKind::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return binary(ExprKind::Mod, std::move(a), std::move(b)); }
Expr operator-(Expr a) {
  return a.dtype() == DType::Float32 ? make_float(0.0) - a : make_int(0) - a;
}
Expr operator==(Expr a, Expr b) { return binary(ExprKind::EQ, std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return binary(ExprKind::NE, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return binary(ExprKind::LT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return binary(ExprKind::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return binary(ExprKind::GT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return binary(ExprKind::GE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return binary(ExprKind::And, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return binary(ExprKind::Or, std::move(a), std::move(b)); }

bool is_const_int(const Expr& e, int64_t* value) {
  if (!e) return false;
  if (auto* i = e.as<IntImmNode>()) {
    if (value) *value = i->value;
    return true;
  }
  return false;
}
bool is_const_int(const Expr& e, int64_t value_wanted) {
  int64_t v;
  return is_const_int(e, &v) && v == value_wanted;
}

}  // namespace tessera::ir
