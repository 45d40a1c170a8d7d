#include "ir/printer.h"

#include <cmath>
#include <sstream>

namespace tessera::ir {

namespace {

std::string float_literal(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v << "f";
  return os.str();
}

const char* infix(ExprKind k) {
  switch (k) {
    case ExprKind::Add: return " + ";
    case ExprKind::Sub: return " - ";
    case ExprKind::Mul: return "*";
    case ExprKind::Div: return "/";
    case ExprKind::Mod: return " % ";
    case ExprKind::EQ: return " == ";
    case ExprKind::NE: return " != ";
    case ExprKind::LT: return " < ";
    case ExprKind::LE: return " <= ";
    case ExprKind::GT: return " > ";
    case ExprKind::GE: return " >= ";
    case ExprKind::And: return " && ";
    case ExprKind::Or: return " || ";
    default: return nullptr;
  }
}

void print(std::ostream& os, const Expr& e) {
  if (!e) {
    os << "<undefined>";
    return;
  }
  if (auto* i = e.as<IntImmNode>()) {
    os << i->value;
  } else if (auto* f = e.as<FloatImmNode>()) {
    os << float_literal(f->value);
  } else if (auto* v = e.as<VarNode>()) {
    os << v->name;
  } else if (auto* b = e.as<BinaryNode>()) {
    if (const char* op = infix(e.kind())) {
      os << "(";
      print(os, b->a);
      os << op;
      print(os, b->b);
      os << ")";
    } else {
      os << call_style_name(e.kind()) << "(";
      print(os, b->a);
      os << ", ";
      print(os, b->b);
      os << ")";
    }
  } else if (auto* n = e.as<NotNode>()) {
    os << "!";
    print(os, n->a);
  } else if (auto* s = e.as<SelectNode>()) {
    // A select guarding a tensor read is TVM's if_then_else: only the taken side is evaluated.
    os << "tir.if_then_else(";
    print(os, s->cond);
    os << ", ";
    print(os, s->true_value);
    os << ", ";
    print(os, s->false_value);
    os << ")";
  } else if (auto* c = e.as<CastNode>()) {
    if (c->dtype == DType::Bool) {
      os << "(bool)";
      print(os, c->value);
    } else {
      os << to_string(c->dtype) << "(";
      print(os, c->value);
      os << ")";
    }
  } else if (auto* c = e.as<CallNode>()) {
    os << "tir." << c->name << "(";
    for (size_t i = 0; i < c->args.size(); ++i) {
      if (i) os << ", ";
      print(os, c->args[i]);
    }
    os << ")";
  } else if (auto* l = e.as<TensorLoadNode>()) {
    os << l->tensor->name << "[";
    for (size_t i = 0; i < l->indices.size(); ++i) {
      if (i) os << ", ";
      print(os, l->indices[i]);
    }
    os << "]";
  } else if (auto* r = e.as<ReduceNode>()) {
    print(os, r->source);
  }
}

}  // namespace

const char* call_style_name(ExprKind k) {
  switch (k) {
    case ExprKind::FloorDiv: return "floordiv";
    case ExprKind::FloorMod: return "floormod";
    case ExprKind::Min: return "min";
    case ExprKind::Max: return "max";
    default: return nullptr;
  }
}

std::string to_string(const Expr& e) {
  std::ostringstream os;
  print(os, e);
  return os.str();
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  if (t->is_placeholder()) {
    os << t->name << " = PLACEHOLDER [";
    for (size_t i = 0; i < t->shape.size(); ++i) os << (i ? ", " : "") << t->shape[i];
    os << "]";
    return os.str();
  }
  os << t->name << "(";
  for (size_t i = 0; i < t->axes.size(); ++i) os << (i ? ", " : "") << t->axes[i].var.name();
  os << ")";
  if (auto* r = t->body.as<ReduceNode>()) {
    os << " " << to_string(r->combiner) << " ";
  } else {
    os << " = ";
  }
  print(os, t->body);
  return os.str();
}

}  // namespace tessera::ir
