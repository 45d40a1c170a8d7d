// C-like source of a lowered kernel: real C syntax where it is cheap (flat
// row-major indexing, restrict pointers), helper names where C has none
// (floordiv, floormod, min, max, sigmoid).
#include "codegen/c_printer.h"

#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>

#include "ir/printer.h"
#include "tessera/error.h"

namespace tessera::codegen {
namespace {

using ir::Expr;
using ir::ExprKind;

// C operator precedence, higher binds tighter.
enum Precedence { kSelect = 1, kOr, kAnd, kEquality, kRelational, kAdditive, kMultiplicative, kUnary, kPrimary };

std::string identifier(const std::string& name) {
  std::string id;
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "_" + id;
  return id;
}

std::string c_type(ir::DType t) {
  switch (t) {
    case ir::DType::Float32: return "float";
    case ir::DType::Int64: return "int64_t";
    case ir::DType::Bool: return "bool";
  }
  return "float";
}

std::string float_literal(double v) {
  char buffer[64];
  auto end = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(v)).ptr;
  std::string s(buffer, end);
  if (s.find_first_of(".einn") == std::string::npos) s += ".0";
  return s + "f";
}

struct BinaryOperator {
  const char* symbol;
  Precedence precedence;
};

std::optional<BinaryOperator> infix(ExprKind k) {
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
}

std::string c_function(const std::string& name) {
  if (name == "sigmoid") return "sigmoid";
  return name + "f";  // expf, logf, sqrtf, tanhf, fabsf
}

class CPrinter {
 public:
  std::string print(const tir::LoweredFunc& f) {
    out_ << "void " << identifier(f.name) << "(";
    for (size_t i = 0; i < f.args.size(); ++i) {
      out_ << (i ? ", " : "") << c_type(f.args[i]->dtype) << "* restrict " << identifier(f.args[i]->name);
    }
    out_ << ") {\n";
    stmt(f.body, 1);
    out_ << "}\n";
    return out_.str();
  }

 private:
  // Wraps e in parentheses when it binds looser than its context needs.
  std::string expr(const Expr& e, int context = 0) {
    int own = kPrimary;
    std::string text = expr_text(e, &own);
    return own < context ? "(" + text + ")" : text;
  }

  std::string expr_text(const Expr& e, int* precedence) {
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
      case ExprKind::Var: return identifier(e.as<ir::VarNode>()->name);
      case ExprKind::Not: *precedence = kUnary; return "!" + expr(e.as<ir::NotNode>()->a, kUnary);
      case ExprKind::Select: {
        const auto* n = e.as<ir::SelectNode>();
        *precedence = kSelect;
        return expr(n->cond, kOr) + " ? " + expr(n->true_value, kOr) + " : " + expr(n->false_value, kSelect);
      }
      case ExprKind::Cast: {
        const auto* n = e.as<ir::CastNode>();
        *precedence = kUnary;
        return "(" + c_type(n->dtype) + ")" + expr(n->value, kUnary);
      }
      case ExprKind::Call: {
        const auto* n = e.as<ir::CallNode>();
        std::string s = c_function(n->name) + "(";
        for (size_t i = 0; i < n->args.size(); ++i) s += (i ? ", " : "") + expr(n->args[i]);
        return s + ")";
      }
      case ExprKind::TensorLoad: {
        const auto* n = e.as<ir::TensorLoadNode>();
        return identifier(n->tensor->name) + "[" + flat_index(n->indices, n->tensor->shape) + "]";
      }
      case ExprKind::Reduce: return "reduce(...)";
      default: break;
    }
    const auto* n = e.as<ir::BinaryNode>();
    if (auto op = infix(n->kind)) {
      *precedence = op->precedence;
      // Left-associative: the right operand needs parentheses at equal precedence.
      return expr(n->a, op->precedence) + op->symbol + expr(n->b, op->precedence + 1);
    }
    if (const char* f = ir::call_style_name(n->kind)) return std::string(f) + "(" + expr(n->a) + ", " + expr(n->b) + ")";
    throw Error("c_printer: unsupported expression kind " + ir::kind_name(n->kind));
  }

  // i*64 + k for indices (i, k) into shape [.., 64].
  std::string flat_index(const std::vector<Expr>& indices, const std::vector<int64_t>& shape) {
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

  void stmt(const tir::Stmt& s, int depth) {
    if (!s) return;
    std::string indent(2 * depth, ' ');
    switch (s->kind) {
      case tir::StmtKind::For: {
        const auto* n = tir::as<tir::ForNode>(s);
        std::string v = identifier(n->var.name());
        out_ << indent << "for (int64_t " << v << " = 0; " << v << " < " << n->extent << "; ++" << v << ") {";
        switch (n->for_kind) {
          case tir::ForKind::Parallel: out_ << "  // parallel"; break;
          case tir::ForKind::Vectorized: out_ << "  // vectorized"; break;
          case tir::ForKind::Unrolled: out_ << "  // unrolled"; break;
          case tir::ForKind::Serial: break;
        }
        out_ << "\n";
        stmt(n->body, depth + 1);
        out_ << indent << "}\n";
        break;
      }
      case tir::StmtKind::Store: {
        const auto* n = tir::as<tir::StoreNode>(s);
        out_ << indent << identifier(n->buffer->name) << "[" << flat_index(n->indices, n->buffer->shape)
             << "] = " << expr(n->value) << ";\n";
        break;
      }
      case tir::StmtKind::Allocate: {
        const auto* n = tir::as<tir::AllocateNode>(s);
        out_ << indent << c_type(n->buffer->dtype) << " " << identifier(n->buffer->name) << "["
             << n->buffer->num_elements() << "];  // [";
        for (size_t i = 0; i < n->buffer->shape.size(); ++i) out_ << (i ? ", " : "") << n->buffer->shape[i];
        out_ << "]\n";
        stmt(n->body, depth);
        break;
      }
      case tir::StmtKind::IfThenElse: {
        const auto* n = tir::as<tir::IfThenElseNode>(s);
        out_ << indent << "if (" << expr(n->cond) << ") {\n";
        stmt(n->then_case, depth + 1);
        if (n->else_case) {
          out_ << indent << "} else {\n";
          stmt(n->else_case, depth + 1);
        }
        out_ << indent << "}\n";
        break;
      }
      case tir::StmtKind::Seq:
        for (const tir::Stmt& x : tir::as<tir::SeqNode>(s)->stmts) stmt(x, depth);
        break;
    }
  }

  std::ostringstream out_;
};

}  // namespace

std::string to_c(const tir::LoweredFunc& f) { return CPrinter().print(f); }

}  // namespace tessera::codegen
