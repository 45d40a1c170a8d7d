#include "tir/unroll.h"

#include "ir/functor.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {

namespace {

class Unroller : public StmtMutator {
 public:
  explicit Unroller(int64_t max_copies) : max_copies_(max_copies) {}

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    if (n->for_kind != ForKind::Unrolled || copies_ * n->extent > max_copies_) return StmtMutator::mutate_for(n, s);
    copies_ *= n->extent;
    Stmt body = mutate_stmt(n->body);
    copies_ /= n->extent;
    std::vector<Stmt> unrolled;
    for (int64_t i = 0; i < n->extent; ++i) {
      ir::VarMap m;
      m[n->var] = ir::make_int(i);
      unrolled.push_back(substitute_stmt(body, m));
    }
    return make_seq(std::move(unrolled));
  }

 private:
  int64_t max_copies_;
  int64_t copies_ = 1;  // copies made by the unrolled loops around the current one
};

}  // namespace

Stmt unroll_loops(const Stmt& s, int64_t max_copies) { return Unroller(max_copies).mutate_stmt(s); }

}  // namespace tessera::tir
