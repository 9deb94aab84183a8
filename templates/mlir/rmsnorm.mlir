// ktune RMSNorm written in MLIR (gpu, arith, scf, memref, vector, math dialects), lowered by the IR
// front door to NVVM (sm_*) or ROCDL (gfx*). One template, a config substituted into the text:
//   {{T}} bf16|f16|f32, {{VEC}} elements per 16-byte-or-less access, {{THREADS}} threads per
//   block, {{ROWS_PER_BLOCK}} rows per block, {{WARP}} 32|64 (vendor), {{WARPS}} THREADS/WARP,
//   {{LOG2_WARP}} log2(WARP).
//
//   out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w[:]     (fp32 math, rounded once)
//
// Rows are contiguous and d % VEC == 0 (the config space's constraint): x, w and out are memrefs
// of vector<VEC x T>, so every access is one VEC-wide load or store aligned to its size.
// Arguments (MLIR's memref calling convention: each memref is base, aligned, offset, size,
// stride; the size is not read): x, w, out, rows, d (elements per row), inv_d = 1/d, eps. No
// argument depends on the config, so one argument list serves every config of a tuning run.
// Grid: ceil(rows / ROWS_PER_BLOCK).
gpu.module @ktune {
  gpu.func @ktune_rmsnorm_mlir(%x: memref<?xvector<{{VEC}}x{{T}}>>,
                               %w: memref<?xvector<{{VEC}}x{{T}}>>,
                               %out: memref<?xvector<{{VEC}}x{{T}}>>, %rows: index, %d: index,
                               %inv_d: f32, %eps: f32)
      workgroup(%partial: memref<{{WARPS}}xf32, #gpu.address_space<workgroup>>)
      kernel attributes {known_block_size = array<i32: {{THREADS}}, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %vec = arith.constant {{VEC}} : index
    %dv = arith.divui %d, %vec : index
    %threads = arith.constant {{THREADS}} : index
    %rpb = arith.constant {{ROWS_PER_BLOCK}} : index
    %warp = arith.constant {{WARP}} : index
    %nwarps = arith.constant {{WARPS}} : index
    %zero = arith.constant 0.0 : f32
    %zv = arith.constant dense<0.0> : vector<{{VEC}}xf32>
    %warp_i32 = arith.constant {{WARP}} : i32
    %half_warp = arith.constant {{HALF_WARP}} : i32
    %log2_warp = arith.constant {{LOG2_WARP}} : i32
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %lane = arith.remui %tid, %warp : index
    %wid = arith.divui %tid, %warp : index
    %first_lane = arith.cmpi eq, %lane, %c0 : index
    %row0 = arith.muli %bid, %rpb : index
    scf.for %r = %c0 to %rpb step %c1 {
      %row = arith.addi %row0, %r : index
      %in_range = arith.cmpi ult, %row, %rows : index
      scf.if %in_range {
        %base = arith.muli %row, %dv : index
        // Sum of squares: VEC lanes per thread, then across the warp, then across warps.
        %sq = scf.for %i = %tid to %dv step %threads iter_args(%acc = %zv) -> vector<{{VEC}}xf32> {
          %idx = arith.addi %base, %i : index
          %v = memref.load %x[%idx] : memref<?xvector<{{VEC}}x{{T}}>>
          %f = {{EXT}} %v : vector<{{VEC}}x{{T}}> to vector<{{VEC}}xf32>
          %a2 = vector.fma %f, %f, %acc : vector<{{VEC}}xf32>
          scf.yield %a2 : vector<{{VEC}}xf32>
        }
        %s0 = vector.reduction <add>, %sq : vector<{{VEC}}xf32> into f32
        %s = scf.for %k = %c0_i32 to %log2_warp step %c1_i32 iter_args(%part = %s0) -> f32 : i32 {
          %off = arith.shrui %half_warp, %k : i32
          %other, %valid = gpu.shuffle xor %part, %off, %warp_i32 : f32
          %sum = arith.addf %part, %other : f32
          scf.yield %sum : f32
        }
        scf.if %first_lane {
          memref.store %s, %partial[%wid] : memref<{{WARPS}}xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
        %total = scf.for %k = %c0 to %nwarps step %c1 iter_args(%t = %zero) -> f32 {
          %p = memref.load %partial[%k] : memref<{{WARPS}}xf32, #gpu.address_space<workgroup>>
          %tt = arith.addf %t, %p : f32
          scf.yield %tt : f32
        }
        gpu.barrier  // partial[] is rewritten by the next row
        %ms = arith.mulf %total, %inv_d : f32
        %me = arith.addf %ms, %eps : f32
        %rinv = math.rsqrt %me : f32
        %rv = vector.broadcast %rinv : f32 to vector<{{VEC}}xf32>
        scf.for %i = %tid to %dv step %threads {
          %idx = arith.addi %base, %i : index
          %v = memref.load %x[%idx] : memref<?xvector<{{VEC}}x{{T}}>>
          %wv = memref.load %w[%i] : memref<?xvector<{{VEC}}x{{T}}>>
          %f = {{EXT}} %v : vector<{{VEC}}x{{T}}> to vector<{{VEC}}xf32>
          %g = {{EXT}} %wv : vector<{{VEC}}x{{T}}> to vector<{{VEC}}xf32>
          %n = arith.mulf %f, %rv : vector<{{VEC}}xf32>
          %y = arith.mulf %n, %g : vector<{{VEC}}xf32>
          %o = {{TRUNC}} %y : vector<{{VEC}}xf32> to vector<{{VEC}}x{{T}}>
          memref.store %o, %out[%idx] : memref<?xvector<{{VEC}}x{{T}}>>
        }
      }
    }
    gpu.return
  }
}
