// ktune SiLU·Mul written in MLIR (gpu, arith, scf, memref, vector, math dialects), lowered by the
// IR front door to NVVM (sm_*) or ROCDL (gfx*). Config substituted into the text: {{T}}
// bf16|f16|f32, {{VEC}}, {{THREADS}}, {{ROWS_PER_BLOCK}} (see rmsnorm.mlir).
//
//   out[r, j] = silu(x[r, j]) * x[r, d + j]      silu(g) = g / (1 + exp(-g)), fp32 math
//
// Rows are contiguous, d % VEC == 0: x has 2 * dv vectors per row, out dv (dv = d / VEC).
// Arguments: out, x (memref calling convention), rows, d (config-independent, as in
// rmsnorm.mlir). Grid: x = ceil(dv / THREADS) column chunks, y = ceil(rows / ROWS_PER_BLOCK).
gpu.module @ktune {
  gpu.func @ktune_silu_mul_mlir(%out: memref<?xvector<{{VEC}}x{{T}}>>,
                                %x: memref<?xvector<{{VEC}}x{{T}}>>, %rows: index, %d: index)
      kernel attributes {known_block_size = array<i32: {{THREADS}}, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %vec = arith.constant {{VEC}} : index
    %dv = arith.divui %d, %vec : index
    %threads = arith.constant {{THREADS}} : index
    %rpb = arith.constant {{ROWS_PER_BLOCK}} : index
    %one = arith.constant dense<1.0> : vector<{{VEC}}xf32>
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
          %g = memref.load %x[%gi] : memref<?xvector<{{VEC}}x{{T}}>>
          %u = memref.load %x[%ui] : memref<?xvector<{{VEC}}x{{T}}>>
          %gf = {{EXT}} %g : vector<{{VEC}}x{{T}}> to vector<{{VEC}}xf32>
          %uf = {{EXT}} %u : vector<{{VEC}}x{{T}}> to vector<{{VEC}}xf32>
          %ng = arith.negf %gf : vector<{{VEC}}xf32>
          %e = math.exp %ng : vector<{{VEC}}xf32>
          %den = arith.addf %one, %e : vector<{{VEC}}xf32>
          %silu = arith.divf %gf, %den : vector<{{VEC}}xf32>
          %y = arith.mulf %silu, %uf : vector<{{VEC}}xf32>
          %o = {{TRUNC}} %y : vector<{{VEC}}xf32> to vector<{{VEC}}x{{T}}>
          %ob = arith.muli %row, %dv : index
          %oi = arith.addi %ob, %col : index
          memref.store %o, %out[%oi] : memref<?xvector<{{VEC}}x{{T}}>>
        }
      }
    }
    gpu.return
  }
}
