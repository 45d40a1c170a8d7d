// tessera._tessera: the Python bindings of Tessera's public C++ API
// (include/tessera/tessera.h) and of the jit. Arrays cross as numpy float32:
// inputs are read in place when C-contiguous (no copy), outputs are new
// arrays (one copy out of the executor), or, for a jit in reduce-overhead
// mode, views of the executor's memory valid until the next call. Long calls
// (compile, tune, run) release the GIL; a Module or Jit object runs one call
// at a time (its executor and memory are one), so threads sharing one take
// turns instead of overwriting each other's activations.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>

#include <array>
#include <cstring>
#include <tuple>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include "compile/build.h"
#include "target/target.h"
#include "graph/builder.h"
#include "graph/einsum.h"
#include "graph/model_source.h"
#include "graph/printer.h"
#include "jit/jit_model.h"
#include "ops/conv3d.h"
#include "ops/layer_norm.h"
#include "ops/reduce.h"
#include "ops/resize.h"
#include "ops/slice.h"
#include "ops/take.h"
#include "ops/operator.h"
#include "ops/unary_math.h"
#include "driver/compile.h"
#include "driver/report.h"
#include "driver/tune_network.h"
#include "records/pick_best.h"
#include "support/write_file.h"
#include "runtime/artifact.h"
#include "runtime/graph_executor.h"
#include "runtime/varying_executor.h"
#include "tessera/error.h"
#include "arrays.h"
#include "timing.h"
#include "gpu_module.h"

namespace py = pybind11;
using namespace tessera;
using namespace tessera::python;

namespace {

// A network as loaded (the graph, and where it came from: the jit reloads it
// at other batch sizes), or as built with a GraphBuilder (fixed shapes).
struct Model {
  std::string source, layout;
  graph::Graph graph;
  bool built = false;
  // Loaded with a range of one dimension (dims={"sequence": (1, 512)}):
  // `graph` is the model at the largest size; compile() makes one artifact
  // of buckets from these options.
  std::optional<graph::ModelOptions> varying;
};

std::pair<int64_t, int64_t> pair_of(const std::vector<int64_t>& v, const char* what) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  throw Error(std::string(what) + ": one or two numbers");
}

// Padding given as one number, (h, w), or (top, left, bottom, right).
std::array<int64_t, 4> padding_of(const std::vector<int64_t>& v) {
  if (v.size() == 4) return {v[0], v[1], v[2], v[3]};
  auto [h, w] = pair_of(v, "padding");
  return {h, w, h, w};
}

graph::Pool2dAttrs pool_attrs(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                            const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad) {
  graph::Pool2dAttrs a;
  std::tie(a.kernel_h, a.kernel_w) = pair_of(kernel, "kernel");
  std::tie(a.stride_h, a.stride_w) = pair_of(stride.empty() ? kernel : stride, "stride");
  auto p = padding_of(padding);
  a.pad_top = p[0], a.pad_left = p[1], a.pad_bottom = p[2], a.pad_right = p[3];
  a.ceil_mode = ceil_mode;
  a.count_include_pad = count_include_pad;
  return a;
}

// A compiled model: an executor, and its artifact for save().
class Module {
 public:
  Module(runtime::Artifact artifact, std::string source)
      : artifact_(runtime::copy_artifact(artifact)), executor_(std::move(artifact), source) {}
  // The file is read once: the executor runs a copy of the artifact save() writes.
  explicit Module(const std::string& path)
      : artifact_(runtime::read_artifact(path)), executor_(runtime::copy_artifact(artifact_), path) {}

  py::object call(const py::args& args) {
    if (static_cast<int>(args.size()) != executor_.num_inputs())
      throw py::value_error("the model takes " + std::to_string(executor_.num_inputs()) + " inputs, got " +
                            std::to_string(args.size()));
    std::vector<FloatArray> inputs;
    for (size_t i = 0; i < args.size(); ++i) {
      inputs.push_back(as_input(args[i], i));
      if (shape_of(inputs.back()) != executor_.input_shape(static_cast<int>(i)))
        throw py::value_error("input '" + executor_.input_name(static_cast<int>(i)) + "' has shape " +
                              std::string(py::str(py::tuple(py::cast(executor_.input_shape(static_cast<int>(i)))))) +
                              ", got " + std::string(py::str(py::tuple(py::cast(shape_of(inputs.back()))))));
    }
    // The outputs are made while the GIL is held, and filled under the lock.
    std::vector<py::array> outputs;
    std::vector<float*> output_data;
    for (int i = 0; i < executor_.num_outputs(); ++i) {
      const auto& shape = executor_.output_shape(i);
      FloatArray out(std::vector<py::ssize_t>(shape.begin(), shape.end()));
      output_data.push_back(out.mutable_data());
      outputs.push_back(std::move(out));
    }
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> one_call_at_a_time(mutex_);
      for (size_t i = 0; i < inputs.size(); ++i) executor_.bind_input(static_cast<int>(i), inputs[i].data());
      executor_.run();
      executor_.unbind_inputs();
      for (int i = 0; i < executor_.num_outputs(); ++i)
        std::memcpy(output_data[static_cast<size_t>(i)], executor_.output_data(i),
                    static_cast<size_t>(outputs[static_cast<size_t>(i)].size()) * sizeof(float));
    }
    return single_or_tuple({outputs.begin(), outputs.end()});
  }
  void save(const std::string& path) const { runtime::write_artifact(artifact_, path); }
  py::dict benchmark(int number, int repeat) { return benchmark_dict(executor_, mutex_, number, repeat); }
  const runtime::GraphExecutor& executor() const { return executor_; }

 private:
  runtime::Artifact artifact_;
  runtime::GraphExecutor executor_;
  std::mutex mutex_;  // over executor_: one call at a time
};

// A model compiled over a range of one dimension: called with arrays of any
// size in it (runtime::VaryingExecutor pads them to a bucket).
class VaryingModule {
 public:
  VaryingModule(runtime::Artifact artifact, std::string source)
      : artifact_(runtime::copy_artifact(artifact)), executor_(std::move(artifact), source) {}

  py::object call(const py::args& args) {
    if (static_cast<int>(args.size()) != executor_.num_inputs())
      throw py::value_error("the model takes " + std::to_string(executor_.num_inputs()) + " inputs, got " +
                            std::to_string(args.size()));
    std::vector<runtime::NDArray> inputs;
    for (size_t i = 0; i < args.size(); ++i) inputs.push_back(to_ndarray(as_input(args[i], i)));
    std::vector<runtime::NDArray> outputs;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> one_call_at_a_time(mutex_);
      for (size_t i = 0; i < inputs.size(); ++i) executor_.set_input(static_cast<int>(i), inputs[i]);
      executor_.run();
      for (int i = 0; i < executor_.num_outputs(); ++i) outputs.push_back(executor_.get_output(i));
    }
    std::vector<py::object> arrays;
    for (auto& out : outputs) arrays.push_back(to_numpy(std::move(out)));
    return single_or_tuple(std::move(arrays));
  }
  void save(const std::string& path) const { runtime::write_artifact(artifact_, path); }
  py::dict dimension() const {
    const runtime::VaryingShapes& v = executor_.varying();
    py::dict d;
    d["name"] = v.name;
    d["min"] = v.min;
    d["max"] = v.max;
    d["buckets"] = v.buckets;
    return d;
  }
  py::dict last_run() const {
    std::lock_guard<std::mutex> lock(mutex_);
    py::dict d;
    d["size"] = executor_.size();
    d["bucket"] = executor_.bucket();
    return d;
  }

 private:
  runtime::Artifact artifact_;
  runtime::VaryingExecutor executor_;
  mutable std::mutex mutex_;  // over executor_: one call at a time
};

// A Module, or a VaryingModule for an artifact compiled over a range.
py::object module_of(runtime::Artifact artifact, const std::string& source) {
  if (artifact.varying) return py::cast(std::make_unique<VaryingModule>(std::move(artifact), source));
  if (artifact.gpu) return make_gpu_module(std::move(artifact), source);
  return py::cast(std::make_unique<Module>(std::move(artifact), source));
}

std::vector<std::pair<std::string, std::vector<int64_t>>> io_of(const runtime::GraphExecutor& ex, bool inputs) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> r;
  const int n = inputs ? ex.num_inputs() : ex.num_outputs();
  for (int i = 0; i < n; ++i)
    r.emplace_back(inputs ? ex.input_name(i) : ex.output_name(i), inputs ? ex.input_shape(i) : ex.output_shape(i));
  return r;
}

// compile's and tune's quantize= arguments after the first two (quantize,
// calibrate): how the quantizer chooses ranges and which layers it skips.
graph::QuantizeOptions quantize_options(const std::string& calibration, const std::vector<int>& skip_layers,
                                        double global_scale) {
  graph::QuantizeOptions q;
  q.calibration.method = graph::calibration_method(calibration);
  q.skip_layers = std::set<int>(skip_layers.begin(), skip_layers.end());
  q.global_scale = global_scale;
  return q;
}

py::object compile(const Model& model, const std::string& target, const std::optional<std::string>& records,
                   int threads, bool keep_layout, bool shipped_records, const std::string& dtype,
                   const std::string& convolutions, const std::string& quantize, const std::string& calibrate,
                   const std::string& calibration, const std::vector<int>& skip_layers, double global_scale) {
  const target::Target t = jit::resolve_target(target, threads);
  runtime::Artifact artifact;
  {
    py::gil_scoped_release release;
    driver::CompileOptions options;
    options.keep_layout = keep_layout;
    options.shipped_records = shipped_records;
    options.dtype = dtype;
    options.convolutions = convolutions;
    options.quantize = quantize;  // as compile --quantize and its calibration flags
    options.calibrate = calibrate;
    options.quantization = quantize_options(calibration, skip_layers, global_scale);
    if (records) options.records.push_back(*records);
    if (model.varying) {
      const graph::ModelOptions& o = *model.varying;
      artifact = driver::compile_varying([&](int64_t size) { return graph::load_model(model.source, o.at_size(size)); },
                                         *o.varying, t, options)
                     .artifact;
    } else {
      artifact = driver::compile(model.graph, t, options).artifact;
    }
  }
  return module_of(std::move(artifact), model.source);
}

// A jit-compiled model: jit::JitModel behind a Python call.
class Jit {
 public:
  // `at_shapes`, when given, makes the model at other input shapes (a Python
  // callable: list of shapes -> Model; the torch backend's part traced at
  // them), so that dynamic=True can compile a range of a built model too.
  Jit(const Model& model, jit::JitOptions options, std::optional<py::function> at_shapes = std::nullopt)
      : model_(model.source, factory_of(model, std::move(at_shapes)), std::move(options)) {}
  py::object call(const py::args& args) {
    std::vector<FloatArray> inputs;
    std::vector<jit::JitInput> jit_inputs;
    for (size_t i = 0; i < args.size(); ++i) {
      inputs.push_back(as_input(args[i], i));
      jit_inputs.push_back({inputs.back().data(), shape_of(inputs.back())});
    }
    const bool views = model_.options().mode == jit::JitMode::kReduceOverhead;
    const std::vector<jit::JitOutput>* results = nullptr;
    std::vector<runtime::NDArray> copies;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> one_call_at_a_time(mutex_);
      results = &model_.run(jit_inputs);
      if (!views)
        for (const jit::JitOutput& r : *results) {
          runtime::NDArray out(r.shape);
          std::memcpy(out.data(), r.data, static_cast<size_t>(out.size()) * sizeof(float));
          copies.push_back(std::move(out));
        }
    }
    std::vector<py::object> outputs;
    if (!views) {
      for (auto& out : copies) outputs.push_back(to_numpy(std::move(out)));
      return single_or_tuple(std::move(outputs));
    }
    // No copy: valid until the next call, like torch's reduce-overhead outputs.
    py::object owner = py::cast(this, py::return_value_policy::reference);
    for (const jit::JitOutput& r : *results)
      outputs.push_back(FloatArray(std::vector<py::ssize_t>(r.shape.begin(), r.shape.end()), r.data, owner));
    return single_or_tuple(std::move(outputs));
  }
  py::dict last_call() const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto c = model_.last_call();
    py::dict d;
    d["compiled"] = c.compiled;
    d["from_disk"] = c.from_disk;
    d["compile_ms"] = c.compile_seconds * 1e3;
    d["run_ms"] = c.run_seconds * 1e3;
    d["cache_key"] = c.cache_key;
    return d;
  }
  int compilations() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return model_.compilations();
  }

 private:
  static jit::GraphFactory factory_of(const Model& model, std::optional<py::function> at_shapes) {
    if (!model.built) {
      std::vector<std::string> names;  // an ONNX model's inputs then take whole shapes (a sequence varies too)
      for (auto id : model.graph.input_ids()) names.push_back(model.graph.node(id).name);
      return jit::model_source(model.source, model.layout, std::move(names));
    }
    jit::GraphFactory as_built = jit::fixed_graph(model.graph);
    if (!at_shapes) return as_built;
    // Shared: the factory is copied, and the callable is released under the GIL.
    auto callable = std::shared_ptr<py::function>(new py::function(std::move(*at_shapes)), [](py::function* f) {
      py::gil_scoped_acquire gil;
      delete f;
    });
    std::vector<std::vector<int64_t>> built_shapes;
    for (auto id : model.graph.input_ids()) built_shapes.push_back(model.graph.node(id).type.shape);
    return [as_built, callable, built_shapes](const std::vector<std::vector<int64_t>>& shapes) {
      if (shapes == built_shapes) return as_built(shapes);
      py::gil_scoped_acquire gil;  // runs are called with the GIL released
      try {
        return (*callable)(shapes).cast<const Model&>().graph;
      } catch (const py::error_already_set& e) {
        throw Error(e.what());  // the jit's way of saying these shapes cannot be built
      }
    };
  }

  jit::JitModel model_;
  mutable std::mutex mutex_;  // over model_: one call at a time
};

}  // namespace

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera, an auto-tuning deep-learning compiler: the C++ core";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);

  py::class_<Model>(m, "Model")
      .def_readonly("source", &Model::source)
      .def_readonly("layout", &Model::layout)
      .def_property_readonly("inputs",
                             [](const Model& mo) {
                               std::vector<std::pair<std::string, std::vector<int64_t>>> r;
                               for (auto id : mo.graph.input_ids())
                                 r.emplace_back(mo.graph.node(id).name, mo.graph.node(id).type.shape);
                               return r;
                             })
      .def_property_readonly("num_nodes", [](const Model& mo) { return mo.graph.size(); })
      .def("__repr__", [](const Model& mo) {
        return "<tessera.Model " + mo.source + ": " + std::to_string(mo.graph.size()) + " nodes>";
      });
  m.def(
      "load_model",
      [](const std::string& source, int64_t batch, const std::string& layout,
         const std::map<std::string, std::vector<int64_t>>& shapes, const std::map<std::string, py::object>& dims,
         const std::vector<int64_t>& buckets) {
        if (batch < 0) throw py::value_error("batch must be at least 1 (0: the model's own), got " + std::to_string(batch));
        graph::ModelOptions options{batch, layout, shapes, {}};
        // A size, or a range (MIN, MAX) that one artifact runs every size of.
        for (const auto& [name, value] : dims) {
          if (py::isinstance<py::int_>(value)) {
            graph::parse_dim_flag(name + "=" + std::to_string(value.cast<int64_t>()), options);
            continue;
          }
          const auto range = value.cast<std::vector<int64_t>>();
          if (range.size() != 2) throw py::value_error("dims['" + name + "']: a size or a (min, max) range");
          graph::parse_dim_flag(name + "=" + std::to_string(range[0]) + ".." + std::to_string(range[1]), options);
        }
        if (!buckets.empty()) {
          std::string list;
          for (int64_t b : buckets) list += (list.empty() ? "" : ",") + std::to_string(b);
          graph::parse_buckets_flag(list, options);
        }
        py::gil_scoped_release release;
        if (!options.varying) return Model{source, layout, graph::load_model(source, options), false, std::nullopt};
        return Model{source, layout, graph::load_model(source, options.at_size(options.varying->max)), false, options};
      },
      py::arg("model"), py::arg("batch") = 0, py::arg("layout") = "NCHW", py::arg("shapes") = py::dict(),
      py::arg("dims") = py::dict(), py::arg("buckets") = std::vector<int64_t>{});

  // Networks from elsewhere (the torch backend's FX graphs): node ids in,
  // node ids out; each method checks its operands' shapes (tessera.Error).
  py::class_<graph::GraphBuilder>(m, "GraphBuilder")
      .def(py::init<>())
      .def(
          "input",
          [](graph::GraphBuilder& b, const std::string& name, std::vector<int64_t> shape, bool integer) {
            return b.input(name, std::move(shape), integer ? graph::DataType::kInt64 : graph::DataType::kFloat32);
          },
          py::arg("name"), py::arg("shape"), py::arg("integer") = false)
      .def("constant", [](graph::GraphBuilder& b, const std::string& name, const py::handle& value) {
        return b.constant(name, to_ndarray(as_input(value, 0)));
      })
      .def("shape", [](const graph::GraphBuilder& b, graph::NodeId id) { return b.shape(id); })
      .def(
          "conv2d",
          [](graph::GraphBuilder& b, graph::NodeId x, graph::NodeId w, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
             const std::string& name) {
            graph::Conv2dAttrs a;
            std::tie(a.stride_h, a.stride_w) = pair_of(stride, "stride");
            auto p = padding_of(padding);
            a.pad_top = p[0], a.pad_left = p[1], a.pad_bottom = p[2], a.pad_right = p[3];
            std::tie(a.dilation_h, a.dilation_w) = pair_of(dilation, "dilation");
            a.groups = groups;
            return b.conv2d(x, w, a, name);
          },
          py::arg("x"), py::arg("weight"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
          py::arg("groups"), py::arg("name") = "")
      .def(
          "conv3d",
          [](graph::GraphBuilder& b, graph::NodeId x, graph::NodeId w, const std::array<int64_t, 3>& stride,
             const std::array<int64_t, 3>& padding, const std::array<int64_t, 3>& dilation, int64_t groups,
             const std::string& name) {
            ops::Conv3dAttrs a;
            a.strides = stride;
            a.dilations = dilation;
            for (size_t i = 0; i < 3; ++i) a.pads[i] = a.pads[i + 3] = padding[i];  // symmetric, as torch pads
            a.groups = groups;
            return b.add_node(graph::Op::named("conv3d"), name, {x, w}, a);
          },
          py::arg("x"), py::arg("weight"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
          py::arg("groups"), py::arg("name") = "")
      // Rows of `data` along `axis` picked by run-time indices (an embedding).
      .def(
          "take",
          [](graph::GraphBuilder& b, graph::NodeId data, graph::NodeId indices, int64_t axis, const std::string& name) {
            const int64_t rank = static_cast<int64_t>(b.shape(data).size());
            if (axis < -rank || axis >= rank)
              throw Error("take: axis " + std::to_string(axis) + " of data of rank " + std::to_string(rank));
            return b.add_node(graph::Op::named("take"), name, {data, indices}, ops::TakeAttrs{(axis + rank) % rank});
          },
          py::arg("data"), py::arg("indices"), py::arg("axis") = 0, py::arg("name") = "")
      // begin/end/step per axis, as Python's slices resolve them (end clamped).
      .def(
          "strided_slice",
          [](graph::GraphBuilder& b, graph::NodeId x, std::vector<int64_t> begin, std::vector<int64_t> end,
             std::vector<int64_t> step, const std::string& name) {
            return b.add_node(graph::Op::named("strided_slice"), name, {x},
                              ops::StridedSliceAttrs{std::move(begin), std::move(end), std::move(step)});
          },
          py::arg("x"), py::arg("begin"), py::arg("end"), py::arg("step"), py::arg("name") = "")
      .def(
          "resize2d",
          [](graph::GraphBuilder& b, graph::NodeId x, int64_t out_h, int64_t out_w, double scale_h, double scale_w,
             const std::string& mode, const std::string& coordinates, const std::string& nearest,
             const std::string& name) {
            ops::Resize2dAttrs a;
            a.out_h = out_h, a.out_w = out_w, a.scale_h = scale_h, a.scale_w = scale_w;
            a.mode = mode, a.coordinates = coordinates, a.nearest = nearest;
            return b.add_node(graph::Op::named("resize2d"), name, {x}, a);
          },
          py::arg("x"), py::arg("out_h"), py::arg("out_w"), py::arg("scale_h"), py::arg("scale_w"),
          py::arg("mode") = "nearest", py::arg("coordinates") = "asymmetric", py::arg("nearest") = "floor",
          py::arg("name") = "")
      .def(
          "einsum",
          [](graph::GraphBuilder& b, const std::string& equation, std::vector<graph::NodeId> operands,
             const std::string& name) { return graph::einsum(b, equation, std::move(operands), name); },
          py::arg("equation"), py::arg("operands"), py::arg("name") = "")
      // reduce_sum, reduce_mean, reduce_max, reduce_min over `axes` (empty: all).
      .def(
          "reduce",
          [](graph::GraphBuilder& b, const std::string& op, graph::NodeId x, std::vector<int64_t> axes, bool keepdims,
             const std::string& name) {
            if (op != "reduce_sum" && op != "reduce_mean" && op != "reduce_max" && op != "reduce_min")
              throw Error("reduce: '" + op + "' is none of reduce_sum, reduce_mean, reduce_max, reduce_min");
            return b.add_node(graph::Op::named(op), name, {x}, ops::ReduceAttrs{std::move(axes), keepdims});
          },
          py::arg("op"), py::arg("x"), py::arg("axes"), py::arg("keepdims") = false, py::arg("name") = "")
      .def("dense", &graph::GraphBuilder::dense, py::arg("x"), py::arg("weight"), py::arg("name") = "")
      .def(
          "batch_norm",
          [](graph::GraphBuilder& b, graph::NodeId x, graph::NodeId gamma, graph::NodeId beta, graph::NodeId mean,
             graph::NodeId var, double eps, const std::string& name) {
            graph::BatchNormAttrs a;
            a.epsilon = eps;
            return b.batch_norm(x, gamma, beta, mean, var, a, name);
          },
          py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("mean"), py::arg("var"), py::arg("eps"),
          py::arg("name") = "")
      .def("bias_add", &graph::GraphBuilder::bias_add, py::arg("x"), py::arg("bias"), py::arg("axis") = 1,
           py::arg("name") = "")
      .def("add", &graph::GraphBuilder::add, py::arg("a"), py::arg("b"), py::arg("name") = "")
      .def("multiply", &graph::GraphBuilder::multiply, py::arg("a"), py::arg("b"), py::arg("name") = "")
      .def("relu", &graph::GraphBuilder::relu, py::arg("x"), py::arg("name") = "")
      .def("clip", &graph::GraphBuilder::clip, py::arg("x"), py::arg("min"), py::arg("max"), py::arg("name") = "")
      .def("sigmoid", &graph::GraphBuilder::sigmoid, py::arg("x"), py::arg("name") = "")
      // Any registered operator by its name ("hard_swish", "erf"), with its
      // default attributes.
      .def(
          "add_node",
          [](graph::GraphBuilder& b, const std::string& op, const std::string& name, std::vector<graph::NodeId> inputs) {
            return b.add_node(graph::Op::named(op), name, std::move(inputs), ops::find_operator(op).default_attrs);
          },
          py::arg("op"), py::arg("name"), py::arg("inputs"))
      .def(
          "gelu",
          [](graph::GraphBuilder& b, graph::NodeId x, const std::string& approximate, const std::string& name) {
            if (approximate != "none" && approximate != "tanh")
              throw Error("gelu: approximate='" + approximate + "' (none or tanh)");
            return b.add_node(graph::Op::named("gelu"), name, {x}, ops::GeluAttrs{approximate == "tanh"});
          },
          py::arg("x"), py::arg("approximate") = "none", py::arg("name") = "")
      .def(
          "hard_sigmoid",
          [](graph::GraphBuilder& b, graph::NodeId x, float alpha, float beta, const std::string& name) {
            return b.add_node(graph::Op::named("hard_sigmoid"), name, {x}, ops::HardSigmoidAttrs{alpha, beta});
          },
          py::arg("x"), py::arg("alpha") = 0.2f, py::arg("beta") = 0.5f, py::arg("name") = "")
      .def(
          "layer_norm",
          [](graph::GraphBuilder& b, graph::NodeId x, graph::NodeId scale, graph::NodeId bias, int64_t axis,
             float epsilon, const std::string& name) {
            ops::LayerNormAttrs a;
            a.axis = axis;
            a.epsilon = epsilon;
            return b.add_node(graph::Op::named("layer_norm"), name, {x, scale, bias}, a);
          },
          py::arg("x"), py::arg("scale"), py::arg("bias"), py::arg("axis") = -1, py::arg("epsilon") = 1e-5f,
          py::arg("name") = "")
      .def(
          "max_pool2d",
          [](graph::GraphBuilder& b, graph::NodeId x, const std::vector<int64_t>& kernel,
             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode,
             const std::string& name) { return b.max_pool2d(x, pool_attrs(kernel, stride, padding, ceil_mode, false), name); },
          py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("ceil_mode") = false,
          py::arg("name") = "")
      .def(
          "avg_pool2d",
          [](graph::GraphBuilder& b, graph::NodeId x, const std::vector<int64_t>& kernel,
             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode,
             bool count_include_pad, const std::string& name) {
            return b.avg_pool2d(x, pool_attrs(kernel, stride, padding, ceil_mode, count_include_pad), name);
          },
          py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("ceil_mode") = false,
          py::arg("count_include_pad") = true, py::arg("name") = "")
      .def("global_avg_pool2d", [](graph::GraphBuilder& b, graph::NodeId x, const std::string& name) {
        return b.global_avg_pool2d(x, "NCHW", name);
      }, py::arg("x"), py::arg("name") = "")
      .def("concat", &graph::GraphBuilder::concat, py::arg("xs"), py::arg("axis"), py::arg("name") = "")
      .def("reshape", &graph::GraphBuilder::reshape, py::arg("x"), py::arg("shape"), py::arg("name") = "")
      .def("flatten", &graph::GraphBuilder::flatten, py::arg("x"), py::arg("axis") = 1, py::arg("name") = "")
      .def("softmax", &graph::GraphBuilder::softmax, py::arg("x"), py::arg("axis") = -1, py::arg("name") = "")
      .def("transpose", &graph::GraphBuilder::transpose, py::arg("x"), py::arg("perm"), py::arg("name") = "")
      .def("batch_matmul", &graph::GraphBuilder::batch_matmul, py::arg("a"), py::arg("b"), py::arg("name") = "")
      .def(
          "finish",
          [](graph::GraphBuilder& b, std::vector<graph::NodeId> outputs, const std::string& name) {
            return Model{name, "NCHW", b.finish(std::move(outputs)), true};
          },
          py::arg("outputs"), py::arg("name") = "graph");

  py::class_<Module>(m, "Module")
      .def("__call__", &Module::call)
      .def("save", &Module::save, py::arg("path"))
      .def("benchmark", &Module::benchmark, py::arg("number") = 10, py::arg("repeat") = 3)
      .def_property_readonly("inputs", [](const Module& mo) { return io_of(mo.executor(), true); })
      .def_property_readonly("outputs", [](const Module& mo) { return io_of(mo.executor(), false); })
      .def_property_readonly("target", [](const Module& mo) { return mo.executor().target(); })
      .def_property_readonly("kernels", [](const Module& mo) {
        std::vector<std::string> names;
        for (const auto& call : mo.executor().graph().calls) names.push_back(call.kernel);
        return names;
      });
  m.def("compile", &compile, py::arg("model"), py::arg("target") = "", py::arg("records") = std::nullopt,
        py::arg("threads") = 0, py::arg("keep_layout") = false, py::arg("shipped_records") = true,
        py::arg("dtype") = "float32", py::arg("convolutions") = "auto", py::arg("quantize") = "",
        py::arg("calibrate") = "8", py::arg("calibration") = "min-max", py::arg("skip_layers") = std::vector<int>{0},
        py::arg("global_scale") = 0.0);
  bind_gpu_module(m);
  py::class_<VaryingModule>(m, "VaryingModule")
      .def("__call__", &VaryingModule::call)
      .def("save", &VaryingModule::save, py::arg("path"))
      .def_property_readonly("dimension", &VaryingModule::dimension)
      .def_property_readonly("last_run", &VaryingModule::last_run);
  m.def(
      "load",
      [](const std::string& path) {
        runtime::Artifact artifact = runtime::read_artifact(path);
        return module_of(std::move(artifact), path);
      },
      py::arg("path"));
  m.def(
      "pick_best",
      [](const std::string& log, const std::string& out) {
        py::gil_scoped_release release;
        return records::pick_best_file(log, out, std::cerr);
      },
      py::arg("log"), py::arg("out"));
  m.def(
      "report",
      [](const std::vector<std::string>& logs, const std::string& out, const std::string& model,
         const std::string& baseline, const std::string& target, int threads) {
        driver::ReportOptions o;
        o.logs = logs;
        o.model = model;
        o.baseline = baseline;
        o.target = target;
        o.threads = threads;
        o.command = "tessera.report(...)";
        {
          py::gil_scoped_release release;
          support::write_file_atomically(out, driver::make_report(o, std::cerr));
        }
        return out;
      },
      py::arg("logs"), py::arg("out"), py::arg("model") = "", py::arg("baseline") = "", py::arg("target") = "",
      py::arg("threads") = 0);

  m.def(
      "tune",
      [](const Model& model, const std::string& log, int trials, int early_stopping, double time_budget_min,
         const std::string& target, int threads, const std::string& tuner, const std::string& search,
         const std::string& dtype, const std::string& convolutions, const std::string& quantize,
         const std::string& calibrate, const std::string& calibration, const std::vector<int>& skip_layers,
         double global_scale) {
        const target::Target t = jit::resolve_target(target, threads);
        driver::TuneOptions o{.log = log, .search = search, .tuner = tuner, .trials = trials,
                              .early_stopping = early_stopping, .time_budget_min = time_budget_min};
        o.dtype = dtype;
        o.convolutions = convolutions;
        o.quantize = quantize;  // as compile(quantize=...): the network compile then builds with the log
        o.calibrate = calibrate;
        o.quantization = quantize_options(calibration, skip_layers, global_scale);
        o.evaluate = false;
        driver::TuneResult s;
        {
          py::gil_scoped_release release;
          s = driver::tune_network(model.graph, t, o, std::cout, std::cerr);
          std::cout.flush();
        }
        py::dict d;
        d["tasks_tuned"] = s.tuned;
        d["tasks_already_done"] = s.already_done;
        d["trials"] = s.trials;
        d["seconds"] = s.seconds;
        return d;
      },
      py::arg("model"), py::arg("log"), py::arg("trials") = 1000, py::arg("early_stopping") = 400,
      py::arg("time_budget_min") = 0.0, py::arg("target") = "", py::arg("threads") = 0, py::arg("tuner") = "xgb",
      py::arg("search") = "templates", py::arg("dtype") = "float32", py::arg("convolutions") = "auto",
      py::arg("quantize") = "", py::arg("calibrate") = "8", py::arg("calibration") = "min-max",
      py::arg("skip_layers") = std::vector<int>{0}, py::arg("global_scale") = 0.0);

  py::class_<Jit>(m, "Jit")
      .def("__call__", &Jit::call)
      .def_property_readonly("last_call", &Jit::last_call)
      .def_property_readonly("compilations", &Jit::compilations);
  m.def(
      "jit",
      [](const Model& model, const std::string& mode, const std::string& target, const std::optional<std::string>& records,
         int threads, int recompile_limit, bool disk_cache, const std::optional<std::string>& cache_dir,
         double autotune_minutes, bool dynamic, std::optional<py::function> at_shapes, const std::string& quantize,
         const std::string& calibrate, const std::string& calibration) {
        jit::JitOptions o;
        o.quantize = quantize;
        o.calibrate = calibrate;
        o.calibration = calibration;
        o.mode = jit::jit_mode_from_string(mode);
        o.target = target;
        o.records = records.value_or("");
        o.threads = threads;
        o.recompile_limit = recompile_limit;
        o.disk_cache = disk_cache;
        o.cache_dir = cache_dir.value_or("");
        o.autotune_minutes = autotune_minutes;
        o.dynamic = dynamic;
        return std::make_unique<Jit>(model, o, std::move(at_shapes));
      },
      py::arg("model"), py::arg("mode") = "default", py::arg("target") = "", py::arg("records") = std::nullopt,
      py::arg("threads") = 0, py::arg("recompile_limit") = 8, py::arg("disk_cache") = true,
      py::arg("cache_dir") = std::nullopt, py::arg("autotune_minutes") = 10.0, py::arg("dynamic") = false,
      py::arg("at_shapes") = std::nullopt, py::arg("quantize") = "", py::arg("calibrate") = "8",
      py::arg("calibration") = "min-max");
}
