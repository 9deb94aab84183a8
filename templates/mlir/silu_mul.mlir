// ktune SiLU·Mul written in MLIR (gpu, arith, scf, memref, vector, llvm dialects), lowered by the
// IR front door to NVVM (sm_*) or ROCDL (gfx*). Config substituted into the text: {{T}}
// bf16|f16|f32, {{ST}}, {{VEC}}, {{THREADS}}, {{ROWS_PER_BLOCK}}, {{EXP2}}, {{RAW}}, {{WIDEN}},
// {{WIDE}}, {{LATE_OP}}, {{LATE_CONST}} (see rmsnorm.mlir); the lines
// between the FOR_EACH_LANE markers are written once per vector lane, LANE = 0..VEC-1 and
// LANE1 = LANE+1 substituted in double braces.
//
//   out[r, j] = silu(x[r, j]) * x[r, d + j]      silu(g) = g / (1 + exp(-g)), fp32 math
//
// Rows are contiguous, d % VEC == 0: x has 2 * dv vectors per row, out dv (dv = d / VEC).
// Arguments: out, x (memref calling convention), rows, d (config-independent, as in
// rmsnorm.mlir). Grid: x = ceil(dv / THREADS) column chunks, y = ceil(rows / ROWS_PER_BLOCK).
gpu.module @ktune {
  // 2^x: the target's instruction, called as its LLVM intrinsic; math.exp would call the vendor's
  // math library (libdevice, ocml), a link, a parse and an opt -O3 per compile.
  llvm.func @{{EXP2}}(f32) -> f32
  gpu.func @ktune_silu_mul_mlir(%out: memref<?xvector<{{VEC}}x{{ST}}>>,
                                %x: memref<?xvector<{{VEC}}x{{ST}}>>, %rows: index, %d: index)
      kernel attributes {known_block_size = array<i32: {{THREADS}}, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %vec = arith.constant {{VEC}} : index
    %dv = arith.divui %d, %vec : index
    %threads = arith.constant {{THREADS}} : index
    %rpb = arith.constant {{ROWS_PER_BLOCK}} : index
    %one = arith.constant dense<1.0> : vector<{{VEC}}xf32>
    %neg_log2e = arith.constant dense<-1.44269504> : vector<{{VEC}}xf32>
    %e_0 = arith.constant dense<0.0> : vector<{{VEC}}xf32>
    // T -> f32 through integers for bf16 (see rmsnorm.mlir): an extf right after the load turns
    // it back into a load of <VEC x bf16>, which llc splits at VEC=4.
    %late = arith.constant {{LATE_CONST}} : vector<{{VEC}}x{{WIDE}}>
    %tid = gpu.thread_id x
    %bx = gpu.block_id x
    %by = gpu.block_id y
    %col0 = arith.muli %bx, %threads : index
    %col = arith.addi %col0, %tid : index
    %row0 = arith.muli %by, %rpb : index
    %col_ok = arith.cmpi ult, %col, %dv : index
    %xrow = arith.muli %dv, %c2 : index
    scf.if %col_ok {
      scf.for %r = %c0 to %rpb step %c1 {
        %row = arith.addi %row0, %r : index
        %row_ok = arith.cmpi ult, %row, %rows : index
        scf.if %row_ok {
          %xb = arith.muli %row, %xrow : index
          %gi = arith.addi %xb, %col : index
          %ui = arith.addi %gi, %dv : index
          %g_s = memref.load %x[%gi] : memref<?xvector<{{VEC}}x{{ST}}>>
          %g = arith.bitcast %g_s : vector<{{VEC}}x{{ST}}> to vector<{{VEC}}x{{T}}>
          %u_s = memref.load %x[%ui] : memref<?xvector<{{VEC}}x{{ST}}>>
          %u = arith.bitcast %u_s : vector<{{VEC}}x{{ST}}> to vector<{{VEC}}x{{T}}>
          %b_gf = arith.bitcast %g : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{RAW}}>
          %e_gf = {{WIDEN}} %b_gf : vector<{{VEC}}x{{RAW}}> to vector<{{VEC}}x{{WIDE}}>
          %h_gf = {{LATE_OP}} %e_gf, %late : vector<{{VEC}}x{{WIDE}}>
          %gf = arith.bitcast %h_gf : vector<{{VEC}}x{{WIDE}}> to vector<{{VEC}}xf32>
          %b_uf = arith.bitcast %u : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{RAW}}>
          %e_uf = {{WIDEN}} %b_uf : vector<{{VEC}}x{{RAW}}> to vector<{{VEC}}x{{WIDE}}>
          %h_uf = {{LATE_OP}} %e_uf, %late : vector<{{VEC}}x{{WIDE}}>
          %uf = arith.bitcast %h_uf : vector<{{VEC}}x{{WIDE}}> to vector<{{VEC}}xf32>
          // exp(-g) = 2^(-g * log2(e)), one target instruction per lane.
          %ng = arith.mulf %gf, %neg_log2e : vector<{{VEC}}xf32>
          // FOR_EACH_LANE
          %t_{{LANE}} = vector.extract %ng[{{LANE}}] : f32 from vector<{{VEC}}xf32>
          %u_{{LANE}} = llvm.call @{{EXP2}}(%t_{{LANE}}) : (f32) -> f32
          %e_{{LANE1}} = vector.insert %u_{{LANE}}, %e_{{LANE}} [{{LANE}}] : f32 into vector<{{VEC}}xf32>
          // END_FOR_EACH_LANE
          %den = arith.addf %one, %e_{{VEC}} : vector<{{VEC}}xf32>
          %silu = arith.divf %gf, %den : vector<{{VEC}}xf32>
          %y = arith.mulf %silu, %uf : vector<{{VEC}}xf32>
          %o = {{TRUNC}} %y : vector<{{VEC}}xf32> to vector<{{VEC}}x{{T}}>
          %ob = arith.muli %row, %dv : index
          %oi = arith.addi %ob, %col : index
          %o_s = arith.bitcast %o : vector<{{VEC}}x{{T}}> to vector<{{VEC}}x{{ST}}>
          memref.store %o_s, %out[%oi] : memref<?xvector<{{VEC}}x{{ST}}>>
        }
      }
    }
    gpu.return
  }
}
