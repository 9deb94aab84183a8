// ktune RMSNorm written in MLIR (gpu, arith, scf, memref, vector, llvm dialects), lowered by the IR
// front door to NVVM (sm_*) or ROCDL (gfx*). One template, a config substituted into the text:
//   {{T}} bf16|f16|f32 ({{ST}} its type in memory: i16 for 16-bit types, whose vector loads
//   llc would otherwise split), {{VEC}} elements per 16-byte-or-less access, {{THREADS}} threads per
//   row, {{ROWS_PER_BLOCK}} rows per block (block = THREADS x ROWS_PER_BLOCK, one row per
//   thread_id.y), {{WARP}} 32|64 (vendor), {{WARPS}} THREADS/WARP, {{LOG2_WARP}} log2(WARP),
//   {{ITEMS}} vectors per thread kept in registers, {{HEAD}} = ITEMS*THREADS; {{RAW}},
//   {{WIDEN}}, {{WIDE}}, {{LATE_OP}}, {{LATE_CONST}}: the second widening of T to f32 (below);
//   {{RSQRT}} the target's reciprocal square root intrinsic.
// The lines between the FOR_EACH_ITEM and END_FOR_EACH_ITEM markers are written ITEMS times,
// with ITEM = 0..ITEMS-1, ITEM1 = ITEM+1 and ITEM_OFFSET = ITEM*THREADS substituted (in double
// braces): the row's first ITEMS*THREADS vectors are loaded once into SSA values, summed, then
// scaled and stored from the same registers (one read of x per element). Vectors past
// ITEMS*THREADS (a row longer than the registers hold; ITEMS=0: the whole row) go through loops
// that read x twice, the second time mostly from L2.
//
//   out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w[:]     (fp32 math, rounded once)
//
// Rows are contiguous and d % VEC == 0 (the config space's constraint): x, w and out are
// memrefs of vector<VEC x T>, so every access is one VEC-wide load or store aligned to its size.
// Arguments (MLIR's memref calling convention: each memref is base, aligned, offset, size,
// stride; the size is not read): x, w, out, rows, d (elements per row), inv_d = 1/d, eps. No
// argument depends on the config, so one argument list serves every config of a tuning run.
// Grid: ceil(rows / ROWS_PER_BLOCK).
gpu.module @ktune {
  // The target's reciprocal square root instruction, called as its LLVM intrinsic: math.rsqrt
  // would call the vendor's math library (libdevice, ocml), a link and a parse per compile.
  llvm.func @{{RSQRT}}(f32) -> f32
  gpu.func @ktune_rmsnorm_mlir(%x: memref<?xvector<{{VEC}}x{{ST}}>>,
                               %w: memref<?xvector<{{VEC}}x{{ST}}>>,
                               %out: memref<?xvector<{{VEC}}x{{ST}}>>, %rows: index, %d: index,
                               %inv_d: f32, %eps: f32)
      workgroup(%partial: memref<{{ROWS_PER_BLOCK}}x{{WARPS}}xf32, #gpu.address_space<workgroup>>)
      kernel attributes {known_block_size = array<i32: {{THREADS}}, {{ROWS_PER_BLOCK}}, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %vec = arith.constant {{VEC}} : index
    %dv = arith.divui %d, %vec : index
    %threads = arith.constant {{THREADS}} : index
    %rpb = arith.constant {{ROWS_PER_BLOCK}} : index
    %head = arith.constant {{HEAD}} : index
    %warp = arith.constant {{WARP}} : index
    %zv = arith.constant dense<0.0> : vector<{{VEC}}xf32>
    %warp_i32 = arith.constant {{WARP}} : i32
    %half_warp = arith.constant {{HALF_WARP}} : i32
    %tid = gpu.thread_id x
    %ty = gpu.thread_id y
    %bid = gpu.block_id x
    %lane = arith.remui %tid, %warp : index
    %wid = arith.divui %tid, %warp : index
    %first_lane = arith.cmpi eq, %lane, %c0 : index
    %row0 = arith.muli %bid, %rpb : index
    %row = arith.addi %row0, %ty : index
    // A row past the end (last block) loads row 0 and stores nothing: every thread of the block
    // reaches the barrier, and no load needs a branch.
    %active = arith.cmpi ult, %row, %rows : index
    %rr = arith.select %active, %row, %c0 : index
    %base = arith.muli %rr, %dv : index
    // Registers: all loads first, so they are in flight together (a vector past the row reads
    // as zeros). Addresses are base + tid + K*THREADS: one register, constant offsets.
    %acc_0 = arith.constant dense<0.0> : vector<{{VEC}}xf32>
    %zt = arith.constant dense<0.0> : vector<{{VEC}}x{{T}}>
    %late = arith.constant {{LATE_CONST}} : vector<{{VEC}}x{{WIDE}}>
    %bt = arith.addi %base, %tid : index
    // FOR_EACH_ITEM
    %off_{{ITEM}} = arith.constant {{ITEM_OFFSET}} : index
    %i_{{ITEM}} = arith.addi %tid, %off_{{ITEM}} : index
    %xi_{{ITEM}} = arith.addi %bt, %off_{{ITEM}} : index
    %ok_{{ITEM}} = arith.cmpi ult, %i_{{ITEM}}, %dv : index
    %xv_{{ITEM}}, %wv_{{ITEM}} = scf.if %ok_{{ITEM}} -> (vector<{{VEC}}x{{T}}>, vector<{{VEC}}x{{T}}>) {
      %lx_s = memref.load %x[%xi_{{ITEM}}] : memref<?xvector<{{VEC}}x{{ST}}>>
      %lx = arith.bitcast %lx_s : vector<{{VEC}}x{{ST}}> to vector<{{VEC}}x{{T}}>
      %lw_s = memref.load %w[%i_{{ITEM}}] : memref<?xvector<{{VEC}}x{{ST}}>>
      %lw = arith.bitcast %lw_s : vector<{{VEC}}x{{ST}}> to vector<{{VEC}}x{{T}}>
      scf.yield %lx, %lw : vector<{{VEC}}x{{T}}>, vector<{{VEC}}x{{T}}>
    } else {
      scf.yield %zt, %zt : vector<{{VEC}}x{{T}}>, vector<{{VEC}}x{{T}}>
    }
    // END_FOR_EACH_ITEM
    // FOR_EACH_ITEM
    %xf_{{ITEM}} = {{EXT}} %xv_{{ITEM}} : vector<{{VEC}}x{{T}}> to vector<{{VEC}}xf32>
    %acc_{{ITEM1}} = vector.fma %xf_{{ITEM}}, %xf_{{ITEM}}, %acc_{{ITEM}} : vector<{{VEC}}xf32>
    // END_FOR_EACH_ITEM
    // The rest of a long row: sum of squares here, scaled in the second loop below.
    %tail0 = arith.addi %tid, %head : index
    %sq = scf.for %i = %tail0 to %dv step %threads iter_args(%acc = %acc_{{ITEMS}}) -> vector<{{VEC}}xf32> {
      %idx = arith.addi %base, %i : index
      %v_s = memref.load %x[%idx] : memref<?xvector<{{VEC}}x{{ST}}>>
      %v = arith.bitcast %v_s : vector<{{VEC}}x{{ST}}> to vector<{{VEC}}x{{T}}>
      %b_f = arith.bitcast %v : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{RAW}}>
      %e_f = {{WIDEN}} %b_f : vector<{{VEC}}x{{RAW}}> to vector<{{VEC}}x{{WIDE}}>
      %h_f = {{LATE_OP}} %e_f, %late : vector<{{VEC}}x{{WIDE}}>
      %f = arith.bitcast %h_f : vector<{{VEC}}x{{WIDE}}> to vector<{{VEC}}xf32>
      %a2 = vector.fma %f, %f, %acc : vector<{{VEC}}xf32>
      scf.yield %a2 : vector<{{VEC}}xf32>
    }
    // Across the VEC lanes, the warp (STEP: the butterfly's LOG2_WARP steps), then the row's
    // warps (PART), written out: llc alone does not unroll loops.
    %s0 = vector.reduction <add>, %sq : vector<{{VEC}}xf32> into f32
    // FOR_EACH_STEP
    %sh_{{STEP}} = arith.constant {{STEP}} : i32
    %off_s{{STEP}} = arith.shrui %half_warp, %sh_{{STEP}} : i32
    %other_{{STEP}}, %valid_{{STEP}} = gpu.shuffle xor %s{{STEP}}, %off_s{{STEP}}, %warp_i32 : f32
    %s{{STEP1}} = arith.addf %s{{STEP}}, %other_{{STEP}} : f32
    // END_FOR_EACH_STEP
    scf.if %first_lane {
      memref.store %s{{LOG2_WARP}}, %partial[%ty, %wid] : memref<{{ROWS_PER_BLOCK}}x{{WARPS}}xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %t0 = arith.constant 0.0 : f32
    // FOR_EACH_PART
    %pk_{{PART}} = arith.constant {{PART}} : index
    %p_{{PART}} = memref.load %partial[%ty, %pk_{{PART}}] : memref<{{ROWS_PER_BLOCK}}x{{WARPS}}xf32, #gpu.address_space<workgroup>>
    %t{{PART1}} = arith.addf %t{{PART}}, %p_{{PART}} : f32
    // END_FOR_EACH_PART
    %ms = arith.mulf %t{{WARPS}}, %inv_d : f32
    %me = arith.addf %ms, %eps : f32
    %rinv = llvm.call @{{RSQRT}}(%me) : (f32) -> f32
    %rv = vector.broadcast %rinv : f32 to vector<{{VEC}}xf32>
    // The raw vectors are widened here, through integer ops for bf16 (exact: a bf16 is the top
    // half of its f32): an extf would be merged with the one above or moved into the loads'
    // branches, and the f32 values (twice the registers) would stay live across the reduction.
    // (The loops widen the same way: an extf right after a load makes llc load <4 x bf16> as
    // two halves.)
    // FOR_EACH_ITEM
    %st_{{ITEM}} = arith.andi %ok_{{ITEM}}, %active : i1
    scf.if %st_{{ITEM}} {
      %b_{{ITEM}} = arith.bitcast %xv_{{ITEM}} : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{RAW}}>
      %e_{{ITEM}} = {{WIDEN}} %b_{{ITEM}} : vector<{{VEC}}x{{RAW}}> to vector<{{VEC}}x{{WIDE}}>
      %h_{{ITEM}} = {{LATE_OP}} %e_{{ITEM}}, %late : vector<{{VEC}}x{{WIDE}}>
      %f2_{{ITEM}} = arith.bitcast %h_{{ITEM}} : vector<{{VEC}}x{{WIDE}}> to vector<{{VEC}}xf32>
      %bw_{{ITEM}} = arith.bitcast %wv_{{ITEM}} : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{RAW}}>
      %ew_{{ITEM}} = {{WIDEN}} %bw_{{ITEM}} : vector<{{VEC}}x{{RAW}}> to vector<{{VEC}}x{{WIDE}}>
      %hw_{{ITEM}} = {{LATE_OP}} %ew_{{ITEM}}, %late : vector<{{VEC}}x{{WIDE}}>
      %g_{{ITEM}} = arith.bitcast %hw_{{ITEM}} : vector<{{VEC}}x{{WIDE}}> to vector<{{VEC}}xf32>
      %n_{{ITEM}} = arith.mulf %f2_{{ITEM}}, %rv : vector<{{VEC}}xf32>
      %y_{{ITEM}} = arith.mulf %n_{{ITEM}}, %g_{{ITEM}} : vector<{{VEC}}xf32>
      %o_{{ITEM}} = {{TRUNC}} %y_{{ITEM}} : vector<{{VEC}}xf32> to vector<{{VEC}}x{{T}}>
      %os_{{ITEM}} = arith.bitcast %o_{{ITEM}} : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{ST}}>
      memref.store %os_{{ITEM}}, %out[%xi_{{ITEM}}] : memref<?xvector<{{VEC}}x{{ST}}>>
    }
    // END_FOR_EACH_ITEM
    scf.if %active {
      scf.for %i = %tail0 to %dv step %threads {
        %idx = arith.addi %base, %i : index
        %v_s = memref.load %x[%idx] : memref<?xvector<{{VEC}}x{{ST}}>>
        %v = arith.bitcast %v_s : vector<{{VEC}}x{{ST}}> to vector<{{VEC}}x{{T}}>
        %wv_s = memref.load %w[%i] : memref<?xvector<{{VEC}}x{{ST}}>>
        %wv = arith.bitcast %wv_s : vector<{{VEC}}x{{ST}}> to vector<{{VEC}}x{{T}}>
        %b_f = arith.bitcast %v : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{RAW}}>
        %e_f = {{WIDEN}} %b_f : vector<{{VEC}}x{{RAW}}> to vector<{{VEC}}x{{WIDE}}>
        %h_f = {{LATE_OP}} %e_f, %late : vector<{{VEC}}x{{WIDE}}>
        %f = arith.bitcast %h_f : vector<{{VEC}}x{{WIDE}}> to vector<{{VEC}}xf32>
        %b_g = arith.bitcast %wv : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{RAW}}>
        %e_g = {{WIDEN}} %b_g : vector<{{VEC}}x{{RAW}}> to vector<{{VEC}}x{{WIDE}}>
        %h_g = {{LATE_OP}} %e_g, %late : vector<{{VEC}}x{{WIDE}}>
        %g = arith.bitcast %h_g : vector<{{VEC}}x{{WIDE}}> to vector<{{VEC}}xf32>
        %n = arith.mulf %f, %rv : vector<{{VEC}}xf32>
        %y = arith.mulf %n, %g : vector<{{VEC}}xf32>
        %o = {{TRUNC}} %y : vector<{{VEC}}xf32> to vector<{{VEC}}x{{T}}>
        %o_s = arith.bitcast %o : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{ST}}>
        memref.store %o_s, %out[%idx] : memref<?xvector<{{VEC}}x{{ST}}>>
      }
    }
    gpu.return
  }
}
