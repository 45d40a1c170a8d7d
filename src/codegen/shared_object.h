#pragma once
// Kernel objects (codegen::compile_to_object's) linked into one shared object,
// the form in which a compiled model carries its kernels.
#include <string>
#include <vector>

namespace tessera::codegen {

// Links `objects` into a shared object at `path` (runs the system C compiler).
void write_shared_object(const std::vector<std::string>& objects, const std::string& path);
void write_shared_object(const std::string& object_bytes, const std::string& path);
// The bytes of the shared object linked from `objects` (an artifact embeds them).
std::string link_shared_object(const std::vector<std::string>& objects);

}  // namespace tessera::codegen
