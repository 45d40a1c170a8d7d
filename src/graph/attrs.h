#pragma once
// The attributes graph nodes hold: an ops::Attrs holding the struct its
// operator declares in src/ops/ (one struct per operator, used by the graph,
// the interpreter and compile alike). The names below are the ones the zoo,
// the importers and the passes build nodes with.
#include "ops/attrs.h"
#include "ops/batch_norm.h"
#include "ops/conv2d.h"
#include "ops/elementwise.h"
#include "ops/pad.h"
#include "ops/pooling.h"
#include "ops/softmax.h"
#include "ops/transform.h"

namespace tessera::graph {

using ops::Attrs;
using ops::BatchNormAttrs;
using ops::BiasAddAttrs;
using ops::ClipAttrs;
using ops::ConcatAttrs;
using ops::Conv2dAttrs;
using ops::DropoutAttrs;
using ops::FlattenAttrs;
using ops::GlobalPoolAttrs;
using ops::LayoutTransformAttrs;
using ops::NoAttrs;
using ops::PadAttrs;
using ops::Pool2dAttrs;
using ops::ReshapeAttrs;
using ops::Shape;
using ops::SoftmaxAttrs;
using ops::TransposeAttrs;

}  // namespace tessera::graph
