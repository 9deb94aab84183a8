// Kernels the IR front door tests share (unit and GPU tests).
#pragma once

namespace ktune {

// saxpy in the gpu, arith, memref and scf dialects (the block size a constant, as a config
// substitutes it).
inline constexpr const char kSaxpyMlir[] = R"(
gpu.module @kernels {
  gpu.func @saxpy(%n: i32, %a: f32, %x: memref<?xf32>, %y: memref<?xf32>) kernel {
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %bdim = arith.constant 256 : index
    %base = arith.muli %bid, %bdim : index
    %i = arith.addi %base, %tid : index
    %ni = arith.index_cast %n : i32 to index
    %in = arith.cmpi slt, %i, %ni : index
    scf.if %in {
      %xv = memref.load %x[%i] : memref<?xf32>
      %yv = memref.load %y[%i] : memref<?xf32>
      %p = arith.mulf %a, %xv : f32
      %s = arith.addf %p, %yv : f32
      memref.store %s, %y[%i] : memref<?xf32>
    }
    gpu.return
  }
}
)";

}  // namespace ktune
