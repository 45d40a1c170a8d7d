// C-like source of a lowered kernel: real C syntax where it is cheap (flat
// row-major indexing, restrict pointers), helper names where C has none
// (floordiv, floormod, min, max, sigmoid).
#include "codegen/c_printer.h"

#include <cctype>
#include <charconv>
#include <optional>

#include "ir/printer.h"
#include "tessera/error.h"

namespace tessera::codegen {

using ir::Expr;
using ir::ExprKind;

std::string c_identifier(const std::string& name) {
  std::string id;
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "_" + id;
  return id;
}

std::string float_literal(double v) {
  char buffer[64];
  auto end = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(v)).ptr;
  std::string s(buffer, end);
  if (s.find_first_of(".einn") == std::string::npos) s += ".0";
  return s + "f";
}

std::string to_c(const tir::LoweredFunc& f) { return CSourcePrinter().print(f); }

std::string CSourcePrinter::print(const tir::LoweredFunc& f) {
  out_ << "void " << name(f.name) << "(";
  for (size_t i = 0; i < f.args.size(); ++i)
    out_ << (i ? ", " : "") << type_name(f.args[i]->dtype) << "* restrict " << name(f.args[i]->name);
  out_ << ") {\n";
  stmt(f.body, 1);
  out_ << "}\n";
  return out_.str();
}

std::string CSourcePrinter::type_name(ir::DType t) const {
  switch (t) {
    case ir::DType::Float32: return "float";
    case ir::DType::Int64: return "int64_t";
    case ir::DType::Bool: return "bool";
    case ir::DType::Float16: return "_Float16";
    case ir::DType::Int8: return "signed char";
    case ir::DType::UInt8: return "unsigned char";
    case ir::DType::Int32: return "int";
  }
  return "float";
}

std::string CSourcePrinter::load_text(const ir::TensorLoadNode& n, const std::string& index) {
  return name(n.tensor->name) + "[" + index + "]";
}

void CSourcePrinter::store(const tir::StoreNode* n, int depth) {
  out_ << indent(depth) << name(n->buffer->name) << "[" << flat_index(n->indices, n->buffer->shape)
       << "] = " << expr(n->value) << ";\n";
}

std::string CSourcePrinter::name(const std::string& n) const { return c_identifier(n); }

std::string CSourcePrinter::function_name(const std::string& name) const {
  if (name == "sigmoid") return "sigmoid";
  if (name == "round") return "rintf";  // halves to even, as the default rounding mode
  return name + "f";  // expf, logf, sqrtf, tanhf, fabsf
}

std::string CSourcePrinter::binary_call(ExprKind kind, ir::DType, const std::string& a, const std::string& b) const {
  return std::string(ir::call_style_name(kind)) + "(" + a + ", " + b + ")";
}

namespace {

struct BinaryOperator {
  const char* symbol;
  int precedence;
};

}  // namespace

std::string CSourcePrinter::expr(const Expr& e, int context) {
  int own = kPrimary;
  std::string text = expr_text(e, &own);
  return own < context ? "(" + text + ")" : text;
}

std::string CSourcePrinter::expr_text(const Expr& e, int* precedence) {
  switch (e.kind()) {
    case ExprKind::IntImm: {
      int64_t v = e.as<ir::IntImmNode>()->value;
      if (v < 0) *precedence = kUnary;
      return std::to_string(v);
    }
    case ExprKind::FloatImm: {
      std::string s = float_literal(e.as<ir::FloatImmNode>()->value);
      if (s[0] == '-') *precedence = kUnary;
      return s;
    }
    case ExprKind::Var: return name(e.as<ir::VarNode>()->name);
    case ExprKind::Not: *precedence = kUnary; return "!" + expr(e.as<ir::NotNode>()->a, kUnary);
    case ExprKind::Select: {
      const auto* n = e.as<ir::SelectNode>();
      *precedence = kSelect;
      return expr(n->cond, kOr) + " ? " + expr(n->true_value, kOr) + " : " + expr(n->false_value, kSelect);
    }
    case ExprKind::Cast: {
      const auto* n = e.as<ir::CastNode>();
      *precedence = kUnary;
      return "(" + type_name(n->dtype) + ")" + expr(n->value, kUnary);
    }
    case ExprKind::Call: {
      const auto* n = e.as<ir::CallNode>();
      std::string s = function_name(n->name) + "(";
      for (size_t i = 0; i < n->args.size(); ++i) s += (i ? ", " : "") + expr(n->args[i]);
      return s + ")";
    }
    case ExprKind::TensorLoad: {
      const auto* n = e.as<ir::TensorLoadNode>();
      return load_text(*n, flat_index(n->indices, n->tensor->shape));
    }
    case ExprKind::Reduce: return "reduce(...)";
    default: break;
  }
  return expr_of_binary(*e.as<ir::BinaryNode>(), precedence);
}

std::string CSourcePrinter::expr_of_binary(const ir::BinaryNode& b, int* precedence) {
  const auto* n = &b;
  auto infix = [](ExprKind k) -> std::optional<BinaryOperator> {
    switch (k) {
      case ExprKind::Add: return BinaryOperator{" + ", kAdditive};
      case ExprKind::Sub: return BinaryOperator{" - ", kAdditive};
      case ExprKind::Mul: return BinaryOperator{"*", kMultiplicative};
      case ExprKind::Div: return BinaryOperator{"/", kMultiplicative};
      case ExprKind::Mod: return BinaryOperator{" % ", kMultiplicative};
      case ExprKind::EQ: return BinaryOperator{" == ", kEquality};
      case ExprKind::NE: return BinaryOperator{" != ", kEquality};
      case ExprKind::LT: return BinaryOperator{" < ", kRelational};
      case ExprKind::LE: return BinaryOperator{" <= ", kRelational};
      case ExprKind::GT: return BinaryOperator{" > ", kRelational};
      case ExprKind::GE: return BinaryOperator{" >= ", kRelational};
      case ExprKind::And: return BinaryOperator{" && ", kAnd};
      case ExprKind::Or: return BinaryOperator{" || ", kOr};
      default: return std::nullopt;
    }
  };
  if (auto op = infix(n->kind)) {
    *precedence = op->precedence;
    // Left-associative: the right operand needs parentheses at equal precedence.
    return expr(n->a, op->precedence) + op->symbol + expr(n->b, op->precedence + 1);
  }
  if (ir::call_style_name(n->kind)) return binary_call(n->kind, n->a.dtype(), expr(n->a), expr(n->b));
  throw Error("c_printer: unsupported expression kind " + ir::kind_name(n->kind));
}

std::string CSourcePrinter::flat_index(const std::vector<Expr>& indices, const std::vector<int64_t>& shape) {
  std::string s;
  int64_t stride = 1;
  std::vector<std::string> terms;
  for (size_t d = indices.size(); d-- > 0;) {
    if (!ir::is_const_int(indices[d], int64_t{0})) {
      // Integer addition is associative: a trailing term needs no parentheses.
      std::string term = expr(indices[d], stride == 1 ? kAdditive : kMultiplicative);
      terms.push_back(stride == 1 ? term : term + "*" + std::to_string(stride));
    }
    stride *= d < shape.size() ? shape[d] : 1;
  }
  if (terms.empty()) return "0";
  for (size_t i = terms.size(); i-- > 0;) s += terms[i] + (i ? " + " : "");
  return s;
}

void CSourcePrinter::loop(const tir::ForNode* n, int depth) {
  std::string v = name(n->var.name());
  out_ << indent(depth) << "for (" << index_type() << " " << v << " = 0; " << v << " < " << n->extent << "; ++" << v
       << ") {";
  if (n->for_kind != tir::ForKind::Serial) out_ << "  // " << tir::to_string(n->for_kind);
  out_ << "\n";
  stmt(n->body, depth + 1);
  out_ << indent(depth) << "}\n";
}

void CSourcePrinter::allocate(const tir::AllocateNode* n, int depth) {
  out_ << indent(depth) << type_name(n->buffer->dtype) << " " << name(n->buffer->name) << "["
       << n->buffer->num_elements() << "];  // [";
  for (size_t i = 0; i < n->buffer->shape.size(); ++i) out_ << (i ? ", " : "") << n->buffer->shape[i];
  out_ << "]";
  if (n->scope != tir::MemoryScope::Global) out_ << " " << tir::to_string(n->scope);
  out_ << "\n";
  stmt(n->body, depth);
}

void CSourcePrinter::barrier(int depth) { out_ << indent(depth) << "barrier();\n"; }

void CSourcePrinter::stmt(const tir::Stmt& s, int depth) {
  if (!s) return;
  switch (s->kind) {
    case tir::StmtKind::For: loop(tir::as<tir::ForNode>(s), depth); break;
    case tir::StmtKind::Store: store(tir::as<tir::StoreNode>(s), depth); break;
    case tir::StmtKind::Allocate: allocate(tir::as<tir::AllocateNode>(s), depth); break;
    case tir::StmtKind::IfThenElse: {
      const auto* n = tir::as<tir::IfThenElseNode>(s);
      out_ << indent(depth) << "if (" << expr(n->cond) << ") {\n";
      stmt(n->then_case, depth + 1);
      if (n->else_case) {
        out_ << indent(depth) << "} else {\n";
        stmt(n->else_case, depth + 1);
      }
      out_ << indent(depth) << "}\n";
      break;
    }
    case tir::StmtKind::Seq:
      for (const tir::Stmt& x : tir::as<tir::SeqNode>(s)->stmts) stmt(x, depth);
      break;
    case tir::StmtKind::Barrier: barrier(depth); break;
  }
}

}  // namespace tessera::codegen
