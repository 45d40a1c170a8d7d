#pragma once
// The attributes of one operator call, type-erased: each operator declares its
// own struct (Conv2dAttrs in ops/conv2d.h, ClipAttrs in ops/elementwise.h, ...)
// in its own file, and graph nodes, the interpreter and compile hold it as an
// `Attrs` without a central list of every operator's struct. An attributes
// struct is a plain value with `std::string to_string() const` (the text
// `tessera show` prints, "strides=[2, 2] ...").
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>

namespace tessera::ops {

// Operators without attributes (add, relu, dense, ...).
struct NoAttrs {
  std::string to_string() const { return ""; }
};

class Attrs {
 public:
  Attrs() = default;  // NoAttrs
  template <class T>
    requires(!std::is_same_v<std::decay_t<T>, Attrs>)
  Attrs(T value) : held_(std::make_shared<const Holder<std::decay_t<T>>>(std::move(value))) {}

  // The struct when it is a T, else nullptr. An empty Attrs is a NoAttrs.
  template <class T>
  const T* get_if() const {
    if (!held_) {
      if constexpr (std::is_same_v<T, NoAttrs>) return &kNone;
      return nullptr;
    }
    if (auto* h = dynamic_cast<const Holder<T>*>(held_.get())) return &h->value;
    return nullptr;
  }
  // The struct, or a tessera::Error when it holds another (a malformed graph
  // or a call with the wrong attributes, not a user's typo).
  template <class T>
  const T& as() const {
    if (const T* a = get_if<T>()) return *a;
    throw_not(typeid(T).name());
  }
  // "strides=[2, 2] padding=[1, 1, 1, 1] ..."; empty for NoAttrs.
  std::string to_string() const { return held_ ? held_->to_string() : ""; }

 private:
  [[noreturn]] void throw_not(const char* expected) const;
  struct Base {
    virtual ~Base() = default;
    virtual std::string to_string() const = 0;
    virtual const std::type_info& type() const = 0;
  };
  template <class T>
  struct Holder final : Base {
    explicit Holder(T v) : value(std::move(v)) {}
    std::string to_string() const override { return value.to_string(); }
    const std::type_info& type() const override { return typeid(T); }
    T value;
  };
  static inline const NoAttrs kNone{};
  // Shared: attributes never change after a node is made (passes build new
  // ones), so copying a graph copies pointers.
  std::shared_ptr<const Base> held_;
};

}  // namespace tessera::ops
