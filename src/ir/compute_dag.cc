#include "ir/compute_dag.h"

#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ir/functor.h"
#include "ir/printer.h"
#include "support/fnv1a.h"
#include "tessera/error.h"

namespace tessera::ir {

ComputeDAG::ComputeDAG(std::vector<Tensor> outputs) : outputs_(std::move(outputs)) {
  if (outputs_.empty()) throw Error("a compute DAG needs at least one output");
  std::set<const TensorNode*> done, visiting;
  std::function<void(const Tensor&)> visit = [&](const Tensor& t) {
    if (done.count(t.get())) return;
    if (!visiting.insert(t.get()).second) throw Error("cycle in compute DAG at '" + t->name + "'");
    for (const auto& in : t->inputs()) visit(in);
    visiting.erase(t.get());
    done.insert(t.get());
    tensors_.push_back(t);
  };
  for (const auto& o : outputs_) visit(o);
  std::set<std::string> names;
  for (const auto& t : tensors_)
    if (!t->is_placeholder() && !names.insert(t->name).second)
      throw Error("compute DAG has two compute tensors named '" + t->name + "'");
}

std::vector<Tensor> ComputeDAG::placeholders() const {
  std::vector<Tensor> out;
  for (const auto& t : tensors_)
    if (t->is_placeholder()) out.push_back(t);
  return out;
}

std::vector<Tensor> ComputeDAG::arguments() const {
  auto args = placeholders();
  args.insert(args.end(), outputs_.begin(), outputs_.end());
  return args;
}

int ComputeDAG::index_of(const Tensor& t) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i] == t) return static_cast<int>(i);
  return -1;
}

int ComputeDAG::index_of(const std::string& name) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i]->name == name && !tensors_[i]->is_placeholder()) return static_cast<int>(i);
  return -1;
}

std::vector<Tensor> ComputeDAG::consumers(const Tensor& t) const {
  std::vector<Tensor> out;
  for (const auto& c : tensors_)
    for (const auto& in : c->inputs())
      if (in == t) out.push_back(c);
  return out;
}

double ComputeDAG::flop_count() const {
  double total = 0;
  for (const auto& t : tensors_) {
    if (t->is_placeholder()) continue;
    double per_element = 0;
    Expr body = t->body;
    double reduce_extent = 1;
    if (auto* r = body.as<ReduceNode>()) {
      for (const auto& a : r->axes) reduce_extent *= static_cast<double>(a.extent);
      body = r->source;
      per_element += 1;  // the combine
    }
    post_order_visit(body, [&](const Expr& e) {
      if (e.dtype() != DType::Float32 && e.dtype() != DType::Int32) return;  // integer index arithmetic is not work
      if (is_binary(e.kind()) || e.kind() == ExprKind::Call) per_element += 1;
    });
    total += static_cast<double>(t->num_elements()) * reduce_extent * per_element;
  }
  return total;
}

std::string ComputeDAG::print() const {
  std::ostringstream os;
  for (const auto& t : tensors_) os << to_string(t) << "\n";
  return os.str();
}

namespace {
// Prints an expression with variables and tensors named by position, so that
// two DAGs computing the same thing print alike whatever their names.
class CanonicalPrinter {
 public:
  explicit CanonicalPrinter(const ComputeDAG& dag) : dag_(dag) {}

  std::string print(const Expr& e) {
    std::ostringstream os;
    emit(os, e);
    return os.str();
  }
  void name_var(const Var& v) { vars_.emplace(v.get(), "v" + std::to_string(vars_.size())); }

 private:
  void emit(std::ostream& os, const Expr& e) {
    if (auto* i = e.as<IntImmNode>()) {
      os << i->value;
    } else if (auto* f = e.as<FloatImmNode>()) {
      os.precision(17);
      os << f->value << "f";
    } else if (e.as<VarNode>()) {
      auto it = vars_.find(e.get());
      os << (it == vars_.end() ? "?" : it->second);
    } else if (auto* b = e.as<BinaryNode>()) {
      os << kind_name(e.kind()) << "(";
      emit(os, b->a);
      os << ",";
      emit(os, b->b);
      os << ")";
    } else if (auto* n = e.as<NotNode>()) {
      os << "Not(";
      emit(os, n->a);
      os << ")";
    } else if (auto* s = e.as<SelectNode>()) {
      os << "Select(";
      emit(os, s->cond);
      os << ",";
      emit(os, s->true_value);
      os << ",";
      emit(os, s->false_value);
      os << ")";
    } else if (auto* c = e.as<CastNode>()) {
      os << to_string(c->dtype) << "(";
      emit(os, c->value);
      os << ")";
    } else if (auto* c = e.as<CallNode>()) {
      os << c->name << "(";
      for (const auto& a : c->args) {
        emit(os, a);
        os << ",";
      }
      os << ")";
    } else if (auto* l = e.as<TensorLoadNode>()) {
      os << "t" << dag_.index_of(l->tensor) << "[";
      for (const auto& i : l->indices) {
        emit(os, i);
        os << ",";
      }
      os << "]";
    } else if (auto* r = e.as<ReduceNode>()) {
      os << to_string(r->combiner) << "(";
      emit(os, r->source);
      os << ")";
    }
  }

  const ComputeDAG& dag_;
  std::unordered_map<const void*, std::string> vars_;
};

}  // namespace

std::string ComputeDAG::canonical() const {
  CanonicalPrinter p(*this);
  std::ostringstream os;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    os << "t" << i << (t->is_placeholder() ? " placeholder " : " compute ") << to_string(t->dtype) << " [";
    for (int64_t d : t->shape) os << d << ",";
    os << "]";
    if (!t->is_placeholder()) {
      for (const auto& a : t->axes) p.name_var(a.var);
      for (const auto& a : t->reduce_axes) {
        p.name_var(a.var);
        os << " r" << a.extent;
      }
      os << " = " << p.print(t->body);
    }
    os << "\n";
  }
  os << "outputs";
  for (const auto& o : outputs_) os << " t" << index_of(o);
  return os.str();
}

std::string ComputeDAG::workload_key() const {
  std::string c = canonical();
  char buf[33];
  snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(support::fnv1a(c)),
           static_cast<unsigned long long>(support::fnv1a(c, 0x9e3779b97f4a7c15ull)));
  return buf;
}

}  // namespace tessera::ir
