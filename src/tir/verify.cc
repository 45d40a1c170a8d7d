#include "tir/verify.h"

#include <set>

#include "ir/functor.h"
#include "tessera/error.h"

namespace tessera::tir {

namespace {
class Verifier {
 public:
  explicit Verifier(const LoweredFunc& f) {
    for (const auto& a : f.args) known_.insert(a.get());
  }

  void check(const Stmt& s, bool in_vector) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::For: {
        auto* n = as<ForNode>(s);
        if (in_vector && n->for_kind == ForKind::Parallel)
          throw Error("loop '" + n->var.name() + "' is parallel inside a vectorised loop");
        if (n->extent <= 0) throw Error("loop '" + n->var.name() + "' has extent " + std::to_string(n->extent));
        check(n->body, in_vector || n->for_kind == ForKind::Vectorized);
        break;
      }
      case StmtKind::Store: {
        auto* n = as<StoreNode>(s);
        need(n->buffer);
        for (const auto& i : n->indices) check_expr(i);
        check_expr(n->value);
        break;
      }
      case StmtKind::Allocate: {
        auto* n = as<AllocateNode>(s);
        known_.insert(n->buffer.get());
        check(n->body, in_vector);
        known_.erase(n->buffer.get());
        break;
      }
      case StmtKind::IfThenElse: {
        auto* n = as<IfThenElseNode>(s);
        check_expr(n->cond);
        check(n->then_case, in_vector);
        check(n->else_case, in_vector);
        break;
      }
      case StmtKind::Seq:
        for (const auto& x : as<SeqNode>(s)->stmts) check(x, in_vector);
        break;
    }
  }

 private:
  void need(const ir::Tensor& t) {
    if (!known_.count(t.get())) throw Error("kernel uses buffer '" + t->name + "' outside its allocation");
  }
  void check_expr(const ir::Expr& e) {
    ir::post_order_visit(e, [&](const ir::Expr& x) {
      if (auto* l = x.as<ir::TensorLoadNode>()) need(l->tensor);
      if (x.kind() == ir::ExprKind::Reduce) throw Error("a reduction survived lowering");
    });
  }
  std::set<const ir::TensorNode*> known_;
};
}  // namespace

void verify(const LoweredFunc& f) { Verifier(f).check(f.body, false); }

}  // namespace tessera::tir
