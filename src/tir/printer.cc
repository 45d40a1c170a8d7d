#include "tir/printer.h"

#include <sstream>

#include "ir/printer.h"

namespace tessera::tir {

namespace {
void print(std::ostream& os, const Stmt& s, int indent) {
  std::string pad(indent * 2, ' ');
  if (!s) return;
  switch (s->kind) {
    case StmtKind::For: {
      auto* n = as<ForNode>(s);
      os << pad << "for " << n->var.name() << " in 0.." << n->extent;
      if (n->for_kind != ForKind::Serial) os << " (" << to_string(n->for_kind) << ")";
      os << "\n";
      print(os, n->body, indent + 1);
      break;
    }
    case StmtKind::Store: {
      auto* n = as<StoreNode>(s);
      os << pad << n->buffer->name << "[";
      for (size_t i = 0; i < n->indices.size(); ++i) os << (i ? ", " : "") << ir::to_string(n->indices[i]);
      os << "] = " << ir::to_string(n->value) << "\n";
      break;
    }
    case StmtKind::Allocate: {
      auto* n = as<AllocateNode>(s);
      os << pad << "allocate " << n->buffer->name << "[";
      for (size_t i = 0; i < n->buffer->shape.size(); ++i) os << (i ? ", " : "") << n->buffer->shape[i];
      os << "]";
      if (n->scope != MemoryScope::Global) os << " (" << to_string(n->scope) << ")";
      os << "\n";
      print(os, n->body, indent);
      break;
    }
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      os << pad << "if " << ir::to_string(n->cond) << "\n";
      print(os, n->then_case, indent + 1);
      if (n->else_case) {
        os << pad << "else\n";
        print(os, n->else_case, indent + 1);
      }
      break;
    }
    case StmtKind::Seq:
      for (const auto& x : as<SeqNode>(s)->stmts) print(os, x, indent);
      break;
    case StmtKind::Barrier: os << pad << "barrier\n"; break;
  }
}
}  // namespace

std::string to_string(const Stmt& s, int indent) {
  std::ostringstream os;
  print(os, s, indent);
  return os.str();
}

std::string to_string(const LoweredFunc& f) {
  std::ostringstream os;
  os << f.name << "(";
  for (size_t i = 0; i < f.args.size(); ++i) {
    os << (i ? ", " : "") << f.args[i]->name << "[";
    for (size_t d = 0; d < f.args[i]->shape.size(); ++d) os << (d ? ", " : "") << f.args[i]->shape[d];
    os << "]";
  }
  os << ")\n";
  print(os, f.body, 1);
  return os.str();
}

}  // namespace tessera::tir
