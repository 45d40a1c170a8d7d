#pragma once
// The x86 ("llvm" target) schedule templates, one per file in this folder.
// template.cc registers them explicitly: static-initialiser registration
// would be dropped by the static library.
#include "autotvm/template.h"

namespace tessera::autotvm::x86 {

Template conv2d_nchwc_template();            // "conv2d_NCHWc.x86": kernels larger than 1x1
Template conv2d_nchwc_1x1_template();        // "conv2d_NCHWc_1x1.x86"
Template conv2d_winograd_template();          // "conv2d_NCHWc_winograd.x86"
Template depthwise_conv2d_nchwc_template();  // "depthwise_conv2d_NCHWc.x86"
Template dense_pack_template();              // "dense_pack.x86"
Template batch_matmul_template();            // "batch_matmul.x86"
Template qlinear_conv2d_nchwc_template();    // "qlinear_conv2d_NCHWc.x86": int8, blocked

}  // namespace tessera::autotvm::x86
